// FlowNetwork's fluid transfers: the links and shares of an edge list, planned once and reused.
#include "sim/net/flow_network.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

namespace cs::net {

void FlowNetwork::send_fluid(std::span<const FluidEdge> edges, int32_t mirrors, Time waits,
                             Done done, FluidPlanSlot* slot) {
  const FluidPlan& plan = fluid_plan(edges, mirrors, slot);
  stats_.add(plan.stats);
  // Nothing to carry, or nothing to carry it over: mirrors whose run 0 has no edge of its own
  // (outside their contract, since the runs are images of run 0) leave every link out.
  if (plan.reference <= 0 || (plan.links.empty() && waits <= Time{})) {
    if (done) sim_.schedule_in(waits, std::move(done));
    return;
  }
  merged_links_ = plan.links;
  merged_weights_ = plan.weights;
  // The pace: alone, the flow moves `reference` bytes in reference / alone + waits seconds; a
  // link of its own with that rate as capacity keeps it there, and lets contention slow it more.
  LinkId pace = kNone;
  if (waits > Time{}) {
    pace = allocate_pace_link(plan.reference / (plan.reference / plan.alone + waits.as_seconds()));
    merged_links_.push_back(pace);
    merged_weights_.push_back(1.0);
  }
  start_flow(merged_links_, merged_weights_, Time{}, edges.front().src, edges.front().dst,
             plan.reference, std::move(done));
  flows_[last_started_].pace = pace;
}

const FlowNetwork::FluidPlan& FlowNetwork::fluid_plan(std::span<const FluidEdge> edges,
                                                      int32_t mirrors, FluidPlanSlot* slot) {
  // Adaptive routing picks network paths by the load of the moment: only the rest is reused.
  auto kept = [&](const FluidPlan& plan) -> const FluidPlan& {
    return plan.adaptive.empty() ? plan : with_adaptive_paths(plan);
  };
  if (slot && slot->network == slot_id_ && slot->mirrors == mirrors)
    if (const FluidPlan* plan = fluid_plans_.at(slot->plan, slot->generation)) return kept(*plan);
  uint64_t hash = static_cast<uint64_t>(mirrors) * 0x9E3779B97F4A7C15ull;
  for (const FluidEdge& e : edges) {
    uint64_t bits;
    std::memcpy(&bits, &e.wire_bytes, sizeof bits);
    for (const uint64_t word : {static_cast<uint64_t>(e.src) << 32 | e.dst, bits})
      hash = (hash ^ word) * 0x100000001B3ull;
  }
  auto same = [&](const FluidPlan& plan) {
    return plan.mirrors == mirrors && plan.edges.size() == edges.size() &&
           std::equal(edges.begin(), edges.end(), plan.edges.begin(),
                      [](const FluidEdge& a, const FluidEdge& b) {
                        return a.src == b.src && a.dst == b.dst && a.wire_bytes == b.wire_bytes;
                      });
  };
  auto remembered = [&](uint32_t index) -> const FluidPlan& {
    if (slot) *slot = {slot_id_, index, mirrors, fluid_plans_.generation(index)};
    return kept(fluid_plans_[index]);
  };
  if (const auto index = fluid_plans_.find(hash, same)) return remembered(*index);
  FluidPlan plan = build_fluid_plan(edges, mirrors);
  ++fluid_plans_built_;
  if (const auto index = fluid_plans_.keep(hash, plan, plan.edges.size() + plan.links.size()))
    return remembered(*index);
  if (plan.adaptive.empty()) {
    scratch_plan_ = std::move(plan);
    return scratch_plan_;
  }
  const FluidPlan base = std::move(plan);
  return with_adaptive_paths(base);
}

const FlowNetwork::FluidPlan& FlowNetwork::with_adaptive_paths(const FluidPlan& base) {
  FluidPlan& out = scratch_plan_;
  if (link_share_.size() < solver_.num_links()) link_share_.resize(solver_.num_links(), 0.0);
  out.mirrors = base.mirrors;
  out.reference = base.reference;
  out.stats = base.stats;
  out.links = base.links;
  for (std::size_t i = 0; i < base.links.size(); ++i) link_share_[base.links[i]] = base.weights[i];
  for (const FluidPlan::AdaptiveEdge& e : base.adaptive) {
    for (LinkId l : routing_.path(e.src, e.dst, 0, &plan_load_).links) {
      if (e.image && private_link_[l]) continue;
      if (link_share_[l] == 0) out.links.push_back(l);
      link_share_[l] += e.scale;
    }
  }
  finish_links(out);
  return out;
}

void FlowNetwork::finish_links(FluidPlan& plan) {
  // In link order, so that the flow's hops do not depend on the order of its edges.
  std::sort(plan.links.begin(), plan.links.end());
  plan.weights.clear();
  plan.weights.reserve(plan.links.size());
  plan.alone = std::numeric_limits<double>::infinity();
  for (const LinkId l : plan.links) {
    plan.weights.push_back(link_share_[l]);
    plan.alone = std::min(plan.alone, solver_.capacity(l) / link_share_[l]);
    link_share_[l] = 0;
  }
}

FlowNetwork::FluidPlan FlowNetwork::build_fluid_plan(std::span<const FluidEdge> edges,
                                                     int32_t mirrors) {
  // The flow moves `reference` bytes: the largest edge's. Each link carries, per byte of the
  // flow, the sum over the edges crossing it of (edge bytes / reference) x (the edge's share).
  FluidPlan plan;
  plan.edges.assign(edges.begin(), edges.end());
  plan.mirrors = mirrors;
  for (const FluidEdge& e : edges)
    if (e.src != e.dst) plan.reference = std::max(plan.reference, e.wire_bytes);
  const std::size_t run = mirrors > 1 && edges.size() % static_cast<std::size_t>(mirrors) == 0
                              ? edges.size() / static_cast<std::size_t>(mirrors)
                              : edges.size();
  if (link_share_.size() < solver_.num_links()) link_share_.resize(solver_.num_links(), 0.0);
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const FluidEdge& e = edges[i];
    if (e.src == e.dst || e.wire_bytes <= 0) continue;
    const Route& route = routing_.route(e.src, e.dst);
    plan.stats.count(&route, static_cast<Bytes>(std::llround(e.wire_bytes)));
    const double scale = e.wire_bytes / plan.reference;
    const bool image = i >= run;  // a mirror: its own GPU and NIC links load like run 0's
    auto share = [&](LinkId l, double weight) {
      if (image && private_link_[l]) return;
      if (link_share_[l] == 0) plan.links.push_back(l);
      link_share_[l] += weight * scale;
    };
    if (spreads(route)) {
      const PairLinks& spread = spread_links(e.src, e.dst);
      for (std::size_t h = 0; h < spread.links.size(); ++h)
        share(spread.links[h], spread.weights[h]);
    } else if (route.link_class == LinkClass::kNetwork && !trunk_of_.empty()) {
      for (LinkId l : route.links) share(trunk_of_[l], 1);
    } else if (route.link_class == LinkClass::kNetwork &&
               balancing_.mode == LoadBalancingMode::kAdaptive) {
      plan.adaptive.push_back({e.src, e.dst, scale, image});
    } else {
      for (LinkId l : route.links) share(l, 1);
    }
  }
  finish_links(plan);
  return plan;
}

}  // namespace cs::net
