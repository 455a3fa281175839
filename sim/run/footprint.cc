#include "sim/run/footprint.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "sim/config/config_error.h"
#include "sim/exec/executor.h"
#include "sim/net/flow_network.h"

namespace cs::run {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// A node of the route cache beyond its Route: hash bucket, key and allocator overhead.
constexpr std::size_t kMapNodeBytes = 48;

// A /proc/self/status or /proc/meminfo field in kB, as bytes (0 when absent).
double proc_kb(const char* file, const std::string& field) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(field.size())) * 1024.0;
  return 0;
}

std::string gb(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB", bytes / kGiB);
  return text;
}

}  // namespace

std::string Footprint::describe() const {
  return "about " + gb(total()) + " (" + gb(held_bytes) + " topology and programs, " +
         gb(rank_bytes) + " rank state, " + gb(pair_bytes) + " routes, " + gb(link_bytes) +
         " links)";
}

Footprint estimate_footprint(const net::Topology& topology, net::Routing& routing,
                             const workload::Layout& layout,
                             const std::vector<workload::Program>& programs) {
  Footprint f;
  f.held_bytes = proc_kb("/proc/self/status", "VmRSS:");
  std::size_t max_ops = 0;
  for (const auto& program : programs) max_ops = std::max(max_ops, program.ops.size());
  const auto world = static_cast<double>(layout.world());
  f.rank_bytes = world * static_cast<double>(exec::Executor::bytes_per_rank(max_ops));
  // Each rank sends to its next ring member in every dimension it spans, and to both pipeline
  // neighbours. Pairs on one server take a short route; the others may be spread over `paths`
  // hashed paths that share their first and last two links. The longest route, first GPU to
  // last, bounds every path's length.
  const std::size_t hops =
      topology.num_gpus() > 1
          ? routing.route(topology.gpu(0), topology.gpu(topology.num_gpus() - 1)).links.size()
          : 0;
  const auto paths =
      static_cast<std::size_t>(std::max(topology.load_balancing.flows_per_message, 1));
  const std::size_t shared = std::min<std::size_t>(hops, 4);
  const double local_route =
      static_cast<double>(sizeof(net::Route) + kMapNodeBytes + 2 * sizeof(net::LinkId));
  const double network_route =
      static_cast<double>(sizeof(net::Route) + kMapNodeBytes + hops * sizeof(net::LinkId)) +
      (paths > 1 ? static_cast<double>(
                       net::FlowNetwork::bytes_per_spread_pair(1, shared + paths * (hops - shared)))
                 : 0);
  for (int d = 0; d < workload::kNumDims; ++d) {
    const auto dim = static_cast<workload::Dim>(d);
    if (layout.size(dim) < 2 || !layout.uses(dim)) continue;
    // Pipeline neighbours both ways; an expert-parallel all-to-all reaches every member.
    const double per_rank = dim == workload::Dim::kPp   ? 2
                            : dim == workload::Dim::kEp ? layout.size(dim) - 1
                                                        : 1;
    const auto members = layout.group_members(0, dim);
    const bool crosses = topology.vertex(topology.gpu(members[0])).node !=
                         topology.vertex(topology.gpu(members[1])).node;
    f.pair_bytes += world * per_rank * (crosses ? network_route : local_route);
  }
  f.link_bytes = static_cast<double>(topology.num_links() * net::FlowNetwork::bytes_per_link());
  return f;
}

double memory_limit_bytes(double limit_gb, double held_bytes) {
  if (limit_gb > 0) return limit_gb * kGiB;
  const double available = proc_kb("/proc/meminfo", "MemAvailable:");
  return available > 0 ? available + held_bytes : 0;
}

void refuse_if_too_big(const Footprint& footprint, double limit_gb, const std::string& source) {
  const double limit = memory_limit_bytes(limit_gb, footprint.held_bytes);
  if (limit <= 0 || footprint.total() <= limit) return;
  throw ConfigError(source + ": this run would need " + footprint.describe() + ", more than the " +
                    gb(limit) +
                    (limit_gb > 0 ? " of simulation.memory_limit_gb" : " this machine has free") +
                    "; use fewer GPUs, or raise simulation.memory_limit_gb on a bigger machine");
}

void refuse_cluster_if_too_big(int64_t gpus, double limit_gb, const std::string& source) {
  const double held = proc_kb("/proc/self/status", "VmRSS:");
  const double cluster = static_cast<double>(gpus) * kClusterBytesPerGpu;
  const double limit = memory_limit_bytes(limit_gb, held);
  if (limit <= 0 || held + cluster <= limit) return;
  throw ConfigError(
      source + ": a cluster of " + std::to_string(gpus) + " GPUs would need about " +
      gb(held + cluster) + " before anything runs (" + gb(cluster) +
      " of topology, routes and link state at about 5 KB a GPU), more than the " + gb(limit) +
      (limit_gb > 0 ? " of simulation.memory_limit_gb" : " this machine has free") +
      "; use fewer GPUs (for a run, a smaller cluster.num_gpus: the job's own suffice), or "
      "a bigger machine");
}

}  // namespace cs::run
