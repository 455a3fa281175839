#include "sim/plan/collective_cost.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "sim/coll/collective.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/compute/gpu_profile.h"
#include "sim/net/topology_builder.h"
#include "sim/plan/hash_collisions.h"
#include "sim/workload/layout_config.h"
#include "sim/world/world.h"

namespace cs::plan {

namespace {

// The share of a collective's bytes that leave the domain (of `domain_gpus` GPUs, in rank order)
// each member sits in, in NCCL's algorithm: PAT's doubling steps, step k pairing members 2^k
// apart and moving min(2^k, n - 2^k) of the n - 1 blocks, or a ring's hops, one a member.
double leaving_share(const std::vector<int32_t>& members, coll::NcclAlgo algo,
                     int64_t domain_gpus) {
  const auto n = static_cast<int64_t>(members.size());
  const auto crossing = [&](int64_t distance) {  // the members whose peer is in another domain
    int64_t c = 0;
    for (int64_t i = 0; i < n; ++i)
      c += members[i] / domain_gpus != members[(i + distance) % n] / domain_gpus ? 1 : 0;
    return static_cast<double>(c) / static_cast<double>(n);
  };
  if (algo != coll::NcclAlgo::kPat) return crossing(1);
  double share = 0;
  for (int64_t d = 1; d < n; d *= 2)
    share += crossing(d) * static_cast<double>(std::min(d, n - d)) / static_cast<double>(n - 1);
  return share;
}

}  // namespace

CollectiveCost::CollectiveCost(const clustersim::RunConfig& config, int32_t gpus_per_node)
    : config_(config), gpus_per_node_(std::max(gpus_per_node, 1)) {
  const auto gpu = compute::load_gpu_profile(compute::gpu_or_default(config.cluster().gpu()));
  nvlink_ = gpu.nvlink_bandwidth_gbytes() * 1e9;
  nic_ = gpu.nic_bandwidth_gbits() * 1e9 / 8;
  nccl_ = coll::NcclTuning(compute::nccl_hardware(gpu), world::nccl_settings(config));
  if (const auto& topology = config.cluster().topology(); !topology.empty()) {
    auto description = net::resolve_topology(topology);
    net::override_load_balancing(description, config.cluster().load_balancing(),
                                 "cluster.load_balancing");
    domains_ = net::oversubscribed_domains(description);
    spans_ = net::tier_spans(description);
    // As the analytical network sees the fabric: its hashed links in place of the trunks.
    if (config.effects().analytical_hashed_paths()) {
      hashed_ = net::hashed_tiers(description);
      const auto& balancing = description.load_balancing();
      if (balancing.mode() == clustersim::LoadBalancing::MULTI_FLOW_ECMP)
        flows_per_message_ = std::max(balancing.flows_per_message(), 1);
    }
  }
  if (config.parallel().ep() > 1) {  // the EP group of rank 0; every group has the same shape
    const auto members =
        workload::layout_of(config.parallel()).group_members(0, workload::Dim::kEp);
    const auto n = static_cast<double>(members.size());
    double same_node = 0;
    for (const int32_t r : members) same_node += r / gpus_per_node_ == 0 ? 1 : 0;
    ep_local_ = (same_node - 1) / n;
    ep_remote_ = (n - same_node) / n;
  }
}

double CollectiveCost::seconds(const workload::Op& op, double stages_at_once) {
  if (op.dim == workload::Dim::kEp)
    // The token-count all-gather before a dispatch is a few KB: its latency.
    return op.coll_op == coll::Op::kAllToAll ? all_to_all(op) : 5e-6;
  if (!coll::nccl_tuned(op.coll_op)) return ring_hop(op);
  const auto key = std::make_tuple(op.dim, op.coll_op, op.bytes, stages_at_once);
  if (const auto it = seconds_.find(key); it != seconds_.end()) return it->second;
  return seconds_[key] = nccl_call(op, stages_at_once, members(op.dim));
}

bool CollectiveCost::fabric_shared() const {
  return !hashed_.empty() ||
         (config_.effects().analytical_oversubscribed_trunks() && !domains_.empty());
}

bool CollectiveCost::within_server(workload::Dim dim) {
  const auto& group = members(dim);
  return std::all_of(group.begin(), group.end(), [&](int32_t r) {
    return r / gpus_per_node_ == group.front() / gpus_per_node_;
  });
}

const std::vector<int32_t>& CollectiveCost::members(workload::Dim dim) {
  auto it = members_.find(dim);
  if (it == members_.end())
    it = members_.emplace(dim, workload::layout_of(config_.parallel()).group_members(0, dim)).first;
  return it->second;
}

double CollectiveCost::all_to_all(const workload::Op& op) const {
  const auto bytes = static_cast<double>(op.bytes);
  return 5e-6 + std::max(bytes * ep_local_ / nvlink_, bytes * ep_remote_ / nic_);
}

double CollectiveCost::ring_hop(const workload::Op& op) const {
  const auto& p = config_.parallel();
  const bool in_server = op.dim == workload::Dim::kTp || p.tp() * p.cp() <= gpus_per_node_;
  return 5e-6 + static_cast<double>(op.bytes) / (in_server ? nvlink_ : nic_);
}

double CollectiveCost::nccl_call(const workload::Op& op, double stages_at_once,
                                 const std::vector<int32_t>& members) {
  const auto n = static_cast<int32_t>(members.size());
  if (n < 2) return 0;
  const int32_t local =
      coll::members_per_server(n, [&](int32_t i) { return members[i] / gpus_per_node_; });
  const coll::NcclChoice choice = nccl_.model_choice(op.coll_op, n, local, op.bytes);
  const coll::ScheduleKey key = nccl_.plan(op.coll_op, n, local, op.bytes);
  const coll::WireModel& wire = key.wire;
  const double share = (op.coll_op == coll::Op::kAllReduce ? 2.0 : 1.0) * (n - 1) / n;
  const double bytes = static_cast<double>(op.bytes) * share * wire.byte_factor;
  const double nvlink_s = bytes / (nvlink_ * wire.nvlink_efficiency);
  if (local >= n) return nvlink_s + latency_s(op, choice, n, local);
  // Across servers the group's crossings are spread over one channel a NIC, so its `local`
  // members' NICs carry them together (a DGX H100 ring's bus bandwidth is its 8 NICs', not one's).
  // A tree's all-reduce sends the buffer up and down the tree once, not a ring's 2 (n - 1) / n.
  const bool tree =
      choice.algo == coll::NcclAlgo::kTree || choice.algo == coll::NcclAlgo::kNvlsTree;
  const double nic_bytes = tree ? static_cast<double>(op.bytes) * wire.byte_factor : bytes;
  const double nic_s = nic_bytes / (local * nic_ * wire.net_efficiency);
  // The switch links pass the same wire bytes, queued while the NICs' time and the call's
  // latency run: the simulated call ends at the later (AnalyticalNetwork::send_fluid).
  const double fabric_s = nic_s * fabric_slowdown(op.dim, stages_at_once, members, choice.algo);
  const double seconds =
      std::max(std::max(nvlink_s, nic_s) + latency_s(op, choice, n, local), fabric_s);
  if (choice.algo != coll::NcclAlgo::kRing || local < 2) return seconds;
  const int64_t steps = (op.coll_op == coll::Op::kAllReduce ? 2 : 1) * int64_t{n - 1};
  const int64_t waits = (steps + key.window - 1) / key.window;
  return std::max(seconds, nic_s + static_cast<double>(waits) * longest_ring_route_s(members));
}

double CollectiveCost::longest_ring_route_s(const std::vector<int32_t>& members) const {
  double longest = 0;
  if (spans_.empty()) return longest;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const int32_t a = members[i], b = members[(i + 1) % members.size()];
    if (a / gpus_per_node_ == b / gpus_per_node_) continue;
    std::size_t tier = 0;  // the lowest tier whose group holds both
    while (tier + 1 < spans_.size() && a / spans_[tier].gpus != b / spans_[tier].gpus) ++tier;
    longest = std::max(longest, spans_[tier].route_latency_s);
  }
  return longest;
}

double CollectiveCost::latency_s(const workload::Op& op, const coll::NcclChoice& choice, int32_t n,
                                 int32_t local) const {
  // As the simulated call pays it: with effects.nccl_step_latency.
  if (!nccl_.settings().step_latency) return 0;
  return 1e-6 *
         coll::model_latency_us(op.coll_op, choice.algo, choice.protocol, nccl_.graph(n, local));
}

double CollectiveCost::fabric_slowdown(workload::Dim dim, double stages_at_once,
                                       const std::vector<int32_t>& members, coll::NcclAlgo algo) {
  const double own = stage_slowdown(dim, false, members, algo);
  if (stages_at_once <= 0) return own;
  const double every = stage_slowdown(dim, true, members, algo);
  return own + (every - own) * std::min(stages_at_once, 1.0);
}

double CollectiveCost::stage_slowdown(workload::Dim dim, bool every_stage,
                                      const std::vector<int32_t>& members, coll::NcclAlgo algo) {
  if (!fabric_shared()) return 1;
  const auto [it, fresh] = slowdowns_.emplace(std::make_tuple(dim, algo, every_stage), 1.0);
  if (!fresh) return it->second;
  const auto leaving = [&](int64_t domain_gpus) {
    return leaving_share(members, algo, domain_gpus) *
           (every_stage ? 1.0 : own_stage_share(domain_gpus));
  };
  if (hashed_.empty()) {
    for (const auto& d : domains_) it->second = std::max(it->second, leaving(d.gpus) * d.ratio);
    return it->second;
  }
  const int64_t world = workload::layout_of(config_.parallel()).world();
  for (const auto& tier : hashed_) {
    // Each GPU of a group whose peer is outside it sends one connection of flows_per_message_
    // flows up, all hashed over the group's links up; the call ends when the busiest of the
    // links up and down of the groups its members sit in has drained.
    const double share = leaving(tier.gpus);
    if (share <= 0) continue;
    const auto flows = static_cast<int64_t>(
        std::llround(static_cast<double>(std::min(tier.gpus, world)) * share * flows_per_message_));
    std::set<int64_t> groups;
    for (const int32_t m : members) groups.insert(m / tier.gpus);
    const double collisions = hashed_busiest_link_factor(
        flows, tier.uplinks, tier.uplinks * static_cast<int64_t>(groups.size()));
    it->second = std::max(it->second, share * tier.ratio * collisions);
  }
  return it->second;
}

double CollectiveCost::own_stage_share(int64_t domain_gpus) const {
  const workload::Layout layout = workload::layout_of(config_.parallel());
  const auto gpus = static_cast<int32_t>(std::min<int64_t>(domain_gpus, layout.world()));
  int32_t same = 0;
  for (int32_t r = 0; r < gpus; ++r) same += layout.coord(r, workload::Dim::kPp) == 0 ? 1 : 0;
  return static_cast<double>(same) / std::max(gpus, 1);
}

}  // namespace cs::plan
