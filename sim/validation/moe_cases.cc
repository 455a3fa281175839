#include "sim/validation/moe_cases.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/coll/nccl_plan.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/compute/gpu_profile.h"
#include "sim/compute/grouped_gemm.h"
#include "sim/config/field_checks.h"
#include "sim/core/simulator.h"
#include "sim/exec/all_to_all_v.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"
#include "sim/validation/kernel_cases.h"

namespace cs::validation {
namespace {

using clustersim::AllToAllCase;

// Bytes of one token: bf16, or a dispatch in FP8 with a 4-byte scale per 128 elements (DeepEP
// combines in bf16).
double token_bytes(const AllToAllCase& a) {
  const double h = static_cast<double>(a.hidden());
  return a.fp8() && !a.combine() ? h * (1.0 + 4.0 / 128.0) : 2.0 * h;
}

// What each member sends and how it spreads: the metric's traffic as an all-to-all-v.
workload::AllToAllV traffic(const AllToAllCase& a, Bytes& bytes) {
  workload::AllToAllV v;
  v.share.assign(static_cast<std::size_t>(a.gpus()), 1.0 / a.gpus());
  if (a.metric() == AllToAllCase::NCCL_TESTS_BUSBW) {
    bytes = a.size_bytes();
    return v;
  }
  v.top_k = a.top_k();
  v.copies_per_token = a.top_k();
  v.max_nodes = a.max_nodes();
  v.reverse = a.combine();
  v.deduplicated = true;  // DeepEP's kernels
  v.tokens = a.tokens();
  bytes = static_cast<Bytes>(
      std::llround(static_cast<double>(a.tokens()) * a.top_k() * token_bytes(a)));
  return v;
}

// Servers a token reaches on average (its own included), as all_to_all_v_edges counts them:
// 1 - (1 - 1/servers)^top_k of each server, at most max_nodes in all.
double servers_reached(const AllToAllCase& a, int32_t servers) {
  const double per = 1.0 - std::pow(1.0 - 1.0 / servers, a.top_k());
  const double all = servers * per;
  return a.max_nodes() > 0 ? std::min(all, static_cast<double>(a.max_nodes())) : all;
}

// Tokens a rank receives per token a rank sends, its own included: every rank of the group
// takes a token with the chance 1 - (1 - 1/gpus)^top_k, as all_to_all_v_edges counts them.
double gpus_reached(const AllToAllCase& a) {
  return a.gpus() * (1.0 - std::pow(1.0 - 1.0 / a.gpus(), a.top_k()));
}

}  // namespace

double grouped_gemm_tflops(const clustersim::GroupedGemmCase& g) {
  clustersim::GemmCase one;
  one.set_gpu(g.gpu());
  one.set_m(g.m());
  one.set_n(g.n());
  one.set_k(g.k());
  one.set_precision(g.precision());
  const std::vector<compute::Kernel> gemms(static_cast<std::size_t>(g.groups()), gemm_kernel(one));
  const compute::KernelCostModel model(compute::load_gpu_profile(g.gpu()));
  const double flops = static_cast<double>(g.groups()) * gemms.front().flops;
  const Time t = compute::grouped_gemm_time(model, gemms, to_precision(g.precision()));
  return flops / t.as_seconds() * 1e-12;
}

void check_grouped_gemm(const clustersim::GroupedGemmCase& g, const std::string& where) {
  if (g.gpu().empty()) config_fail(where, "grouped_gemm.gpu must be set, e.g. gpu: \"h100\"");
  const auto at_least_one = [&](int64_t v, const char* field) {
    if (v < 1)
      config_fail(where, std::string("grouped_gemm.") + field + " must be >= 1 (is " +
                             std::to_string(v) + ")");
  };
  at_least_one(g.groups(), "groups");
  at_least_one(g.m(), "m");
  at_least_one(g.n(), "n");
  at_least_one(g.k(), "k");
  check_gemm_precision(g.gpu(), g.precision(), where, "grouped_gemm.precision");
}

// As Executor::launch_all_to_all_v runs it: the launch latency and DeepEP's token cost, the
// transfers as one coupled fluid flow, then the slowest path's latency.
double all_to_all_gbps(const AllToAllCase& a, bool wire_costs) {
  const auto desc = net::resolve_topology(a.topology());
  const net::Topology topo = net::build_topology(desc, a.gpus(), a.topology());
  net::Routing routing(topo);
  Simulator sim;
  auto network = net::make_network(net::parse_network_mode(a.network()), sim, topo, routing);
  std::vector<exec::EpMember> members(static_cast<std::size_t>(a.gpus()));
  int32_t per_server = 0;
  for (int32_t i = 0; i < a.gpus(); ++i) {
    members[static_cast<std::size_t>(i)] = {topo.gpu(i), topo.vertex(topo.gpu(i)).node};
    per_server += members[static_cast<std::size_t>(i)].node == members.front().node ? 1 : 0;
  }
  Bytes bytes = 0;
  const workload::AllToAllV v = traffic(a, bytes);
  std::vector<net::FluidEdge> edges = exec::all_to_all_v_edges(v, bytes, members);
  Time latency;
  for (const auto& e : edges) latency = std::max(latency, network->path_latency(e.src, e.dst));
  const coll::ScheduleKey key =
      compute::nccl_tuning(desc.gpu()).plan(coll::Op::kAllToAll, a.gpus(), per_server, bytes);
  const compute::GpuProfile gpu = compute::load_gpu_profile(desc.gpu());
  if (wire_costs)
    exec::apply_wire_model(edges, key.wire, topo,
                           v.deduplicated ? exec::deepep_shares(gpu) : exec::KernelShares{});
  const Time token_cost =
      v.deduplicated ? exec::deepep_token_cost(gpu).of(v.tokens, exec::deepep_peers(members))
                     : Time{};
  Time end;
  sim.schedule_in(key.wire.launch_latency + token_cost, [&] {
    network->send_fluid(
        edges, 1, Time{}, [&] { end = sim.now() + latency; }, nullptr);
  });
  sim.run();
  const double seconds = end.as_seconds();
  if (a.metric() == AllToAllCase::NCCL_TESTS_BUSBW)
    return static_cast<double>(bytes) / seconds * (a.gpus() - 1) / a.gpus() * 1e-9;
  const int32_t servers = (a.gpus() + per_server - 1) / per_server;
  const double reached =
      a.metric() == AllToAllCase::DEEPEP_NVL ? gpus_reached(a) : servers_reached(a, servers);
  return static_cast<double>(a.tokens()) * reached * token_bytes(a) / seconds * 1e-9;
}

void check_all_to_all(const AllToAllCase& a, const std::string& where) {
  const auto positive = [&](int64_t v, const char* field) {
    if (v < 1)
      config_fail(where, std::string("all_to_all.") + field + " must be >= 1 (is " +
                             std::to_string(v) + ")");
  };
  if (a.topology().empty())
    config_fail(where, "all_to_all.topology must be set, e.g. \"dgx-h100\"");
  positive(a.gpus(), "gpus");
  try {
    net::parse_network_mode(a.network());
  } catch (const std::invalid_argument& e) {
    config_fail(where, std::string("all_to_all.network: ") + e.what());
  }
  if (a.metric() == AllToAllCase::NCCL_TESTS_BUSBW) {
    positive(a.size_bytes(), "size_bytes");
    return;
  }
  if (a.metric() == AllToAllCase::DEEPEP_NVL) {
    const net::Topology topo =
        net::build_topology(net::resolve_topology(a.topology()), a.gpus(), a.topology());
    for (int32_t i = 1; i < a.gpus(); ++i)
      if (topo.vertex(topo.gpu(i)).node != topo.vertex(topo.gpu(0)).node)
        config_fail(where, "all_to_all.metric DEEPEP_NVL counts one server's NVLink traffic, but " +
                               std::to_string(a.gpus()) + " gpus of " + a.topology() +
                               " span more than one server (use DEEPEP_RDMA)");
  }
  positive(a.tokens(), "tokens");
  positive(a.hidden(), "hidden");
  positive(a.top_k(), "top_k");
  if (a.max_nodes() < 0)
    config_fail(where,
                "all_to_all.max_nodes must be >= 0 (is " + std::to_string(a.max_nodes()) + ")");
}

}  // namespace cs::validation
