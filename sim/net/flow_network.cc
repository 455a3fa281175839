#include "sim/net/flow_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace cs::net {

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

}  // namespace cs::net
