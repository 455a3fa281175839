#include "sim/net/flow_network.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "sim/net/analytical_network.h"

namespace cs::net {
namespace {

// A flow with less than this left is done: it absorbs the rounding of rates and of
// completion times to whole picoseconds.
constexpr double kDoneBytes = 1e-3;
// Rates that differ by less than this fraction are treated as unchanged, so floating noise from
// a different filling order does not move a finish time.
constexpr double kRateTolerance = 1e-12;

}  // namespace

FlowNetwork::FlowNetwork(Simulator& sim, const Topology& topology, Routing& routing)
    : sim_(sim),
      routing_(routing),
      balancing_(topology.load_balancing),
      link_load_([this](LinkId l) { return static_cast<uint32_t>(links_[l].flows.size()); }),
      plan_load_([this](LinkId l) {
        return static_cast<uint32_t>(links_[l].flows.size() + std::ceil(link_share_[l]));
      }),
      links_(topology.num_links()),
      tags_(topology.num_links()) {
  private_link_.resize(links_.size());
  for (LinkId l = 0; l < links_.size(); ++l) {
    links_[l].capacity = topology.link(l).bandwidth.in_bytes_per_s();
    const auto own = [&](VertexId v) {
      const VertexKind kind = topology.vertex(v).kind;
      return kind == VertexKind::kGpu || kind == VertexKind::kNic;
    };
    private_link_[l] = own(topology.link_source(l)) || own(topology.link_target(l));
    tags_[l].slack = slack(links_[l]);
  }
  if (balancing_.mode == LoadBalancingMode::kAdaptive && routing.uses_tiered_routing())
    build_trunks(topology);
}

void FlowNetwork::build_trunks(const Topology& topology) {
  // A trunk per (direction, tier, switch at the leaves or group above them), keyed in one integer.
  std::map<std::tuple<bool, int32_t, int64_t>, LinkId> trunks;
  trunk_of_.resize(topology.num_links());
  for (LinkId l = 0; l < topology.num_links(); ++l) {
    trunk_of_[l] = l;
    const VertexId a = topology.link_source(l), b = topology.link_target(l);
    const VertexInfo& from = topology.vertex(a);
    const VertexInfo& to = topology.vertex(b);
    if (from.kind != VertexKind::kSwitch || to.kind != VertexKind::kSwitch) continue;
    const bool up = to.tier > from.tier;
    const VertexId low = up ? a : b;
    const VertexInfo& lower = up ? from : to;
    const auto key = std::make_tuple(up, lower.tier, lower.tier == 0 ? int64_t{low} : lower.group);
    auto [it, fresh] = trunks.try_emplace(key, kNone);
    if (fresh) {
      it->second = static_cast<LinkId>(links_.size());
      links_.emplace_back();
      tags_.emplace_back();
      private_link_.push_back(false);
    }
    links_[it->second].capacity += links_[l].capacity;
    trunk_of_[l] = it->second;
  }
  for (const auto& [key, trunk] : trunks) tags_[trunk].slack = slack(links_[trunk]);
}

const std::vector<LinkId>& FlowNetwork::through_trunks(const std::vector<LinkId>& links) {
  trunk_route_.clear();
  for (LinkId l : links) trunk_route_.push_back(trunk_of_[l]);
  return trunk_route_;
}

bool FlowNetwork::spreads(const Route& route) const {
  return route.link_class == LinkClass::kNetwork &&
         balancing_.mode == LoadBalancingMode::kMultiFlowEcmp && balancing_.flows_per_message > 1;
}

void FlowNetwork::send(VertexId src, VertexId dst, Bytes bytes, Done done) {
  if (src == dst) {
    stats_.count(nullptr, bytes);
    if (done) sim_.schedule_at(sim_.now(), std::move(done));
    return;
  }
  const Route& route = routing_.route(src, dst);
  stats_.count(&route, bytes);
  if (bytes <= 0) {
    if (done) sim_.schedule_in(route.latency, std::move(done));
    return;
  }
  const bool network = route.link_class == LinkClass::kNetwork;
  if (network && !trunk_of_.empty()) {
    start_flow(through_trunks(route.links), unit_weights_, route.latency, src, dst,
               static_cast<double>(bytes), std::move(done));
    return;
  }
  if (network && balancing_.mode == LoadBalancingMode::kAdaptive) {
    routing_.path(src, dst, 0, &link_load_, chosen_);
    start_flow(chosen_.links, unit_weights_, chosen_.latency, src, dst, static_cast<double>(bytes),
               std::move(done));
    return;
  }
  if (spreads(route)) {
    const PairLinks& spread = spread_links(src, dst);
    start_flow(spread.links, spread.weights, spread.latency, src, dst, static_cast<double>(bytes),
               std::move(done));
    return;
  }
  start_flow(route.links, unit_weights_, route.latency, src, dst, static_cast<double>(bytes),
             std::move(done));
}

Time FlowNetwork::path_latency(VertexId src, VertexId dst) {
  if (src == dst) return Time{};
  const Route& route = routing_.route(src, dst);
  return spreads(route) ? spread_links(src, dst).latency : route.latency;
}

Time FlowNetwork::alone_transfer_time(VertexId src, VertexId dst, double bytes, int32_t sharing) {
  if (src == dst || bytes <= 0) return Time{};
  const double rate = routing_.route(src, dst).bottleneck.in_bytes_per_s() / std::max(sharing, 1);
  return Time::ps(Time::checked_ps(std::ceil(bytes * 1e12 / rate)));
}

const FlowNetwork::PairLinks& FlowNetwork::spread_links(VertexId src, VertexId dst) {
  const uint64_t key = static_cast<uint64_t>(src) << 32 | dst;
  auto [it, fresh] = spread_cache_.try_emplace(key);
  PairLinks& out = it->second;
  if (!fresh) return out;
  const Route& route = routing_.route(src, dst);
  const int32_t n = balancing_.flows_per_message;
  std::vector<std::pair<LinkId, int32_t>> through;
  out.latency = route.latency;
  for (int32_t k = 0; k < n; ++k) {
    // Path 0 is the static route (salt 0); the others hash afresh.
    const Route other = k == 0 ? Route{} : routing_.path(src, dst, static_cast<uint64_t>(k));
    const Route& path = k == 0 ? route : other;
    out.latency = std::max(out.latency, path.latency);  // the last byte takes the slowest path
    for (LinkId l : path.links) through.emplace_back(l, 1);
  }
  // Count the paths through each link; sorted by link id, so the order is deterministic.
  std::sort(through.begin(), through.end());
  for (std::size_t i = 0; i < through.size();) {
    std::size_t j = i;
    while (j < through.size() && through[j].first == through[i].first) ++j;
    out.links.push_back(through[i].first);
    out.weights.push_back(static_cast<double>(j - i) / n);
    i = j;
  }
  return out;
}

void FlowNetwork::send_fluid(std::span<const FluidEdge> edges, int32_t mirrors, Time waits,
                             Done done, FluidPlanSlot* slot) {
  const FluidPlan& plan = fluid_plan(edges, mirrors, slot);
  stats_.add(plan.stats);
  if (plan.reference <= 0) {
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
    return kept(fluid_plans_[slot->plan]);
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
    if (slot) *slot = {slot_id_, index, mirrors};
    return kept(fluid_plans_[index]);
  };
  auto& bucket = fluid_plan_index_[hash];
  for (const uint32_t index : bucket)
    if (same(fluid_plans_[index])) return remembered(index);
  FluidPlan plan = build_fluid_plan(edges, mirrors);
  const std::size_t size = plan.edges.size() + plan.links.size();
  if (fluid_plan_entries_ + size > kMaxFluidPlanEntries) {
    if (plan.adaptive.empty()) {
      scratch_plan_ = std::move(plan);
      return scratch_plan_;
    }
    const FluidPlan base = std::move(plan);
    return with_adaptive_paths(base);
  }
  fluid_plan_entries_ += size;
  bucket.push_back(static_cast<uint32_t>(fluid_plans_.size()));
  fluid_plans_.push_back(std::move(plan));
  return remembered(bucket.back());
}

const FlowNetwork::FluidPlan& FlowNetwork::with_adaptive_paths(const FluidPlan& base) {
  FluidPlan& out = scratch_plan_;
  if (link_share_.size() < links_.size()) link_share_.resize(links_.size(), 0.0);
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
    plan.alone = std::min(plan.alone, links_[l].capacity / link_share_[l]);
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
  if (link_share_.size() < links_.size()) link_share_.resize(links_.size(), 0.0);
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

LinkId FlowNetwork::allocate_pace_link(double capacity) {
  LinkId l;
  if (!free_pace_links_.empty()) {
    l = free_pace_links_.back();
    free_pace_links_.pop_back();
  } else {
    l = static_cast<LinkId>(links_.size());
    links_.emplace_back();
    tags_.emplace_back();
    private_link_.push_back(true);
  }
  links_[l].capacity = capacity;
  tags_[l].slack = slack(links_[l]);
  return l;
}

void FlowNetwork::start_flow(const std::vector<LinkId>& links, const std::vector<double>& weights,
                             Time latency, VertexId src, VertexId dst, double bytes, Done done) {
  if (unit_weights_.size() < links.size()) unit_weights_.resize(links.size(), 1.0);
  const uint32_t f = allocate_flow();
  reserve_hops(f, links.size());
  Flow& flow = flows_[f];
  clock_[f] = {bytes, sim_.now()};
  share_[f].rate = 0;
  flow.latency = latency;
  flow.done = std::move(done);
  if (next_seq_ >> (64 - kSlotBits) != 0) throw std::length_error("too many flows");
  flow.seq = next_seq_++;
  flow.src = src;
  flow.dst = dst;
  share_[f].num_hops = static_cast<uint32_t>(links.size());
  flow.pace = kNone;
  share_[f].bottleneck = kNone;
  last_started_ = f;
  Hop* hop = hops(f);
  for (std::size_t h = 0; h < links.size(); ++h) {
    hop[h].link = links[h];
    hop[h].weight = weights[h];
  }
  set_alone_rates(f);
  attach(f);
}

void FlowNetwork::set_alone_rates(uint32_t f) {
  Flow& flow = flows_[f];
  flow.alone = flow.alone_second = std::numeric_limits<double>::infinity();
  const Hop* hop = hops(f);
  for (uint32_t h = 0; h < share_[f].num_hops; ++h) {
    const double rate = links_[hop[h].link].capacity / hop[h].weight;
    if (rate < flow.alone) {
      flow.alone_second = flow.alone;
      flow.alone = rate;
      flow.tightest = hop[h].link;
    } else if (rate < flow.alone_second) {
      flow.alone_second = rate;
    }
  }
  // A single link: anything above the flow's own rate keeps that link tight.
  if (!std::isfinite(flow.alone_second)) flow.alone_second = 2 * flow.alone;
}

std::vector<FlowNetwork::FlowView> FlowNetwork::active_flows() const {
  std::vector<FlowView> out;
  out.reserve(active_);
  for (std::size_t f = 0; f < flows_.size(); ++f) {
    const Flow& flow = flows_[f];
    if (share_[f].num_hops > 0)
      out.push_back({flow.src, flow.dst, share_[f].rate, clock_[f].remaining});
  }
  return out;
}

uint32_t FlowNetwork::allocate_flow() {
  ++active_;
  if (free_head_ != kNone) {
    const uint32_t f = free_head_;
    free_head_ = flows_[f].next_free;
    flows_[f].next_free = kNone;
    return f;
  }
  if (flows_.size() > kSlotMask) throw std::length_error("too many flows at once");
  flows_.emplace_back();
  share_.emplace_back();
  clock_.emplace_back();
  heap_pos_.push_back(kNone);
  return static_cast<uint32_t>(flows_.size() - 1);
}

void FlowNetwork::free_flow(uint32_t f) {
  --active_;
  Flow& flow = flows_[f];
  if (flow.pace != kNone) free_pace_links_.push_back(flow.pace);
  flow.pace = kNone;
  share_[f].num_hops = 0;
  flow.done = nullptr;
  flow.next_free = free_head_;
  free_head_ = f;
}

void FlowNetwork::reserve_hops(uint32_t f, std::size_t num_hops) {
  Flow& flow = flows_[f];
  if (num_hops <= flow.hop_capacity) return;
  // A new range at the end of the pool; the slot keeps it for later flows. Most flows have a
  // handful of hops, so a fresh slot takes room for 8.
  flow.hop_capacity = static_cast<uint32_t>(std::max<std::size_t>(num_hops, 8));
  share_[f].hop_begin = static_cast<uint32_t>(hops_.size());
  hops_.resize(hops_.size() + flow.hop_capacity);
}

void FlowNetwork::attach(uint32_t f) {
  Hop* hop = hops(f);
  for (uint32_t h = 0; h < share_[f].num_hops; ++h) {
    LinkState& link = links_[hop[h].link];
    hop[h].pos = static_cast<uint32_t>(link.flows.size());
    link.flows.push_back({f, h, hop[h].weight});
    link.demand += hop[h].weight * demand_of(flows_[f], hop[h].link);
    LinkTag& tag = tags_[hop[h].link];
    tag.slack = slack(link);
    if (!tag.dirty) {
      tag.dirty = true;
      dirty_links_.push_back(hop[h].link);
    }
  }
  request_recompute();
}

void FlowNetwork::detach(uint32_t f, bool mark) {
  const Hop* hop = hops(f);
  for (uint32_t h = 0; h < share_[f].num_hops; ++h) {
    LinkState& link = links_[hop[h].link];
    const LinkEntry moved = link.flows.back();
    link.flows[hop[h].pos] = moved;
    hops(moved.flow)[moved.hop].pos = hop[h].pos;
    link.flows.pop_back();
    // Reset when empty, so rounding cannot build up over a long run.
    link.demand =
        link.flows.empty() ? 0 : link.demand - hop[h].weight * demand_of(flows_[f], hop[h].link);
    LinkTag& tag = tags_[hop[h].link];
    tag.slack = slack(link);
    if (mark && !tag.dirty) {
      tag.dirty = true;
      dirty_links_.push_back(hop[h].link);
    }
  }
}

void FlowNetwork::request_recompute() {
  if (recompute_pending_) return;
  recompute_pending_ = true;
  sim_.schedule_at(sim_.now(), [this] { recompute(); });
}

void FlowNetwork::finish(uint32_t f) {
  Flow& flow = flows_[f];
  const Time latency = flow.latency;
  Done done = std::move(flow.done);
  free_flow(f);
  // The last byte has left the sender; it arrives one route latency later.
  if (done) sim_.schedule_in(latency, std::move(done));
}

void FlowNetwork::heap_place(std::size_t i, const HeapEntry& entry) {
  finish_heap_[i] = entry;
  heap_pos_[entry.flow()] = static_cast<uint32_t>(i);
}

void FlowNetwork::heap_sift_up(std::size_t i) {
  const HeapEntry entry = finish_heap_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / kHeapArity;
    if (!entry.before(finish_heap_[parent])) break;
    heap_place(i, finish_heap_[parent]);
    i = parent;
  }
  heap_place(i, entry);
}

void FlowNetwork::heap_sift_down(std::size_t i) {
  const HeapEntry entry = finish_heap_[i];
  const std::size_t n = finish_heap_.size();
  while (true) {
    const std::size_t first = kHeapArity * i + 1;
    if (first >= n) break;
    std::size_t child = first;
    const std::size_t last = std::min(first + kHeapArity, n);
    for (std::size_t c = first + 1; c < last; ++c)
      if (finish_heap_[c].before(finish_heap_[child])) child = c;
    if (!finish_heap_[child].before(entry)) break;
    heap_place(i, finish_heap_[child]);
    i = child;
  }
  heap_place(i, entry);
}

void FlowNetwork::heap_update(uint32_t f, Time finish) {
  if (finish == Time::max()) {
    heap_remove(f);
    return;
  }
  uint32_t pos = heap_pos_[f];
  if (pos == kNone) {
    pos = static_cast<uint32_t>(finish_heap_.size());
    finish_heap_.push_back({finish, flows_[f].seq << kSlotBits | f});
  } else {
    finish_heap_[pos].finish = finish;
  }
  // A later finish only moves down, an earlier one only up.
  if (pos > 0 && finish_heap_[pos].before(finish_heap_[(pos - 1) / kHeapArity])) {
    heap_sift_up(pos);
  } else {
    heap_sift_down(pos);
  }
}

void FlowNetwork::heap_rebuild_with_moved() {
  // Many flows moved: one bottom-up heapify (about 1.3 comparisons an entry) costs less than
  // sifting each. Keys are unique, so the heap still pops in the same (finish, seq) order.
  for (const auto& [f, finish] : moved_) {
    uint32_t& pos = heap_pos_[f];
    if (pos == kNone) {
      pos = static_cast<uint32_t>(finish_heap_.size());
      finish_heap_.push_back({finish, flows_[f].seq << kSlotBits | f});
    } else {
      finish_heap_[pos].finish = finish;
    }
  }
  const std::size_t n = finish_heap_.size();
  if (n < 2) return;
  for (std::size_t i = (n - 2) / kHeapArity + 1; i-- > 0;) heap_sift_down(i);  // every parent
}

void FlowNetwork::heap_remove(uint32_t f) {
  const uint32_t pos = heap_pos_[f];
  if (pos == kNone) return;
  heap_pos_[f] = kNone;
  const HeapEntry last = finish_heap_.back();
  finish_heap_.pop_back();
  if (last.flow() == f) return;
  heap_place(pos, last);
  heap_sift_up(pos);
  heap_sift_down(heap_pos_[last.flow()]);
}

void FlowNetwork::arm_timer() {
  const Time at = finish_heap_.empty() ? Time::max() : finish_heap_.front().finish;
  if (timer_.valid() && at == timer_at_) return;
  sim_.cancel(timer_);
  timer_ = EventId{};
  if (at == Time::max()) return;
  timer_at_ = at;
  timer_ = sim_.schedule_at(at, [this] { on_timer(); });
}

void FlowNetwork::on_timer() {
  timer_ = EventId{};
  const Time now = sim_.now();
  while (!finish_heap_.empty() && finish_heap_.front().finish <= now) {
    const uint32_t f = finish_heap_.front().flow();
    heap_remove(f);
    detach(f, /*mark=*/true);
    finish(f);
    request_recompute();
  }
  arm_timer();
}

void FlowNetwork::next_epochs() {
  if (++epoch_ == 0) {  // wrapped: old marks could alias the new epoch
    for (FlowShare& share : share_) share.mark = 0;
    epoch_ = 1;
  }
  next_link_epoch();
}

void FlowNetwork::next_link_epoch() {
  if (++link_epoch_ == 0) {
    for (LinkTag& tag : tags_) tag.mark = 0;
    link_epoch_ = 1;
  }
}

void FlowNetwork::add_to_set(uint32_t f) {
  if (in_set(f)) return;
  share_[f].mark = epoch_;
  comp_flows_.push_back(f);
}

void FlowNetwork::recompute() {
  recompute_pending_ = false;
  ++recomputes_;
  next_epochs();
  comp_flows_.clear();
  comp_links_.clear();
  if (incremental_) {
    seed_from_dirty_links();
  } else {
    collect_component();
  }
  std::size_t advanced = 0;
  advance_set(advanced);
  if (incremental_) {
    while (true) {
      ++solve_rounds_;
      collect_links();
      water_fill();
      if (!grow_set()) break;
      advance_set(advanced);
    }
  } else {
    ++solve_rounds_;
    water_fill();
  }
  recomputed_flows_ += comp_flows_.size();

  moved_.clear();
  bool starved = false;
  for (uint32_t f : comp_flows_) {
    const double old_rate = share_[f].rate;
    const double rate = share_[f].new_rate;
    // Same rate: the finish time computed earlier still holds.
    if (old_rate > 0 && std::abs(rate - old_rate) <= kRateTolerance * old_rate) continue;
    share_[f].rate = rate;
    moved_.push_back({f, finish_at(f, rate)});
    starved = starved || rate <= 0;
  }
  // One flow in eight or more moved: heapifying the whole heap costs less than sifting each.
  if (!starved && moved_.size() * 8 > finish_heap_.size()) {
    heap_rebuild_with_moved();
  } else {
    for (const auto& [f, finish] : moved_) heap_update(f, finish);
  }
  arm_timer();
}

void FlowNetwork::advance_set(std::size_t& from) {
  // Flows that are (numerically) done finish here rather than at an event a rounding picosecond
  // later. A whole component already holds their links; an incremental set re-seeds from them.
  const Time now = sim_.now();
  while (from < comp_flows_.size()) {
    std::size_t kept = from;
    finished_.clear();
    for (std::size_t i = from; i < comp_flows_.size(); ++i) {
      const uint32_t f = comp_flows_[i];
      FlowClock& clock = clock_[f];
      clock.remaining -= share_[f].rate * (now - clock.last_update).as_seconds();
      clock.last_update = now;
      if (clock.remaining < kDoneBytes) {
        finished_.push_back(f);
      } else {
        comp_flows_[kept++] = f;
      }
    }
    comp_flows_.resize(kept);
    from = kept;
    for (uint32_t f : finished_) {
      heap_remove(f);
      detach(f, /*mark=*/incremental_);
      share_[f].mark = 0;
      finish(f);
    }
    if (incremental_) seed_from_dirty_links();
  }
}

void FlowNetwork::seed_from_dirty_links() {
  // A flow crossing a changed link keeps its rate unless the link was its bottleneck: its own
  // bottleneck is unchanged, still full and still without a faster flow. grow_set() catches the
  // flows the seed's new rates then disturb.
  for (LinkId l : dirty_links_) {
    tags_[l].dirty = false;
    for (const LinkEntry& entry : links_[l].flows) {
      const LinkId bottleneck = share_[entry.flow].bottleneck;
      if (bottleneck == l || bottleneck == kNone) add_to_set(entry.flow);
    }
  }
  dirty_links_.clear();
}

void FlowNetwork::collect_component() {
  // A changed link's flows are revisited even when it is slack now: it may have limited them
  // before the change. Only links that can limit someone are filled and crossed.
  for (LinkId l : dirty_links_) {
    LinkTag& tag = tags_[l];
    tag.dirty = false;
    if (tag.slack) {
      for (const LinkEntry& entry : links_[l].flows) add_to_set(entry.flow);
    } else if (tag.mark != link_epoch_) {
      add_link(tag, l);
    }
  }
  dirty_links_.clear();
  // Breadth-first over link -> flows -> links, starting from the revisited flows and the tight
  // changed links; comp_links_ doubles as the link queue.
  std::size_t next_flow = 0, next_link = 0;
  while (next_flow < comp_flows_.size() || next_link < comp_links_.size()) {
    for (; next_link < comp_links_.size(); ++next_link)
      for (const LinkEntry& entry : links_[comp_links_[next_link]].flows) add_to_set(entry.flow);
    for (; next_flow < comp_flows_.size(); ++next_flow) add_binding_links(comp_flows_[next_flow]);
  }
}

void FlowNetwork::add_binding_links(uint32_t f) {
  const Hop* hop = hops(f);
  for (uint32_t h = 0; h < share_[f].num_hops; ++h) {
    LinkTag& tag = tags_[hop[h].link];
    if (tag.mark == link_epoch_ || tag.slack) continue;
    add_link(tag, hop[h].link);
  }
}

void FlowNetwork::add_link(LinkTag& tag, LinkId l) {
  tag.mark = link_epoch_;
  tag.slot = static_cast<uint32_t>(comp_links_.size());
  comp_links_.push_back(l);
}

void FlowNetwork::collect_links() {
  next_link_epoch();
  comp_links_.clear();
  for (uint32_t f : comp_flows_) add_binding_links(f);
}

bool FlowNetwork::grow_set() {
  grown_.clear();
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    const LinkId l = comp_links_[i];
    const LinkState& link = links_[l];
    const double above = fill_[i].frozen_share * (1 + kRateTolerance);
    double load = 0, fastest = 0;
    // Whether a fixed flow may have to join: one above the share, or one this link limited.
    bool suspect = false;
    for (const LinkEntry& entry : link.flows) {
      const FlowShare& share = share_[entry.flow];
      double rate = share.new_rate;
      if (!in_set(entry.flow)) {
        rate = share.rate;
        suspect = suspect || rate > above || share.bottleneck == l;
      }
      load += rate * entry.weight;
      fastest = std::max(fastest, rate);
    }
    if (!suspect) continue;
    const bool full = load >= link.capacity * (1 - kRateTolerance);
    for (const LinkEntry& entry : link.flows) {
      if (in_set(entry.flow)) continue;
      const FlowShare& flow = share_[entry.flow];
      const bool above_share = flow.rate > above;
      const bool lost_bottleneck =
          flow.bottleneck == l && (!full || flow.rate < fastest * (1 - kRateTolerance));
      if (above_share || lost_bottleneck) grown_.push_back(entry.flow);
    }
  }
  for (uint32_t f : grown_) add_to_set(f);
  return !grown_.empty();
}

void FlowNetwork::water_fill() {
  // Progressive filling: repeatedly take the link with the smallest fair share of its residual
  // capacity, freeze its unfrozen flows at that share, and charge them to their other links.
  // Freezing at the smallest share only raises other links' shares, so the heap holds possibly
  // stale (too low) keys: a popped link whose share has grown goes back in with its new share.
  const auto cmp = std::greater<FillKey>{};
  heap_.clear();
  fill_.resize(comp_links_.size());
  // Flows outside the set keep their rates and take their share of each link first.
  for (uint32_t i = 0; i < comp_links_.size(); ++i) {
    const LinkState& link = links_[comp_links_[i]];
    LinkFill& fill = fill_[i];
    fill.residual = link.capacity;
    fill.unfrozen = 0;
    fill.unfrozen_weight = 0;
    fill.frozen_share = std::numeric_limits<double>::infinity();
    for (const LinkEntry& entry : link.flows) {
      const double weight = entry.weight;
      if (in_set(entry.flow)) {
        ++fill.unfrozen;
        fill.unfrozen_weight += weight;
      } else {
        fill.residual -= share_[entry.flow].rate * weight;
      }
    }
    if (fill.unfrozen > 0)
      heap_.push_back(
          fill_key(std::max(fill.residual, 0.0) / fill.unfrozen_weight, comp_links_[i], i));
  }
  for (uint32_t f : comp_flows_) share_[f].new_rate = -1;
  std::make_heap(heap_.begin(), heap_.end(), cmp);

  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), cmp);
    const FillKey top = heap_.back();
    heap_.pop_back();
    const double key = std::bit_cast<double>(static_cast<uint64_t>(top >> 64));
    const auto l = static_cast<LinkId>(top >> 32);
    const auto i = static_cast<uint32_t>(top);
    LinkFill& bottleneck = fill_[i];
    if (bottleneck.unfrozen == 0) continue;
    const double share = std::max(bottleneck.residual, 0.0) / bottleneck.unfrozen_weight;
    if (share > key) {
      heap_.push_back(fill_key(share, l, i));
      std::push_heap(heap_.begin(), heap_.end(), cmp);
      continue;
    }
    bottleneck.frozen_share = share;
    for (const LinkEntry& entry : links_[l].flows) {
      FlowShare& frozen = share_[entry.flow];
      if (frozen.mark != epoch_ || frozen.new_rate >= 0) continue;
      frozen.new_rate = share;
      frozen.bottleneck = l;
      const Hop* hop = hops(entry.flow);
      for (uint32_t h = 0; h < frozen.num_hops; ++h) {
        const LinkTag& tag = tags_[hop[h].link];
        if (tag.mark != link_epoch_) continue;  // slack: not filled
        LinkFill& link = fill_[tag.slot];
        link.residual -= share * hop[h].weight;
        link.unfrozen_weight -= hop[h].weight;
        --link.unfrozen;
      }
    }
  }
}

Time FlowNetwork::finish_at(uint32_t f, double rate) const {
  if (rate <= 0) return Time::max();  // starved: only a later recompute can move it
  // Rounded up like transfer_time, so a lone flow matches it exactly.
  const double ps = std::ceil(clock_[f].remaining * 1e12 / rate);
  return sim_.now() + Time::ps(Time::checked_ps(ps));
}

}  // namespace cs::net
