#include "sim/net/flow_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace cs::net {

namespace {

// A flow with less than this left is done: it absorbs the rounding of rates and of
// completion times to whole picoseconds.
constexpr double kDoneBytes = 1e-3;

}  // namespace

FlowNetwork::FlowNetwork(Simulator& sim, const Topology& topology, Routing& routing)
    : sim_(sim),
      routing_(routing),
      balancing_(topology.load_balancing),
      link_load_([this](LinkId l) { return solver_.flows_on(l); }),
      plan_load_([this](LinkId l) {
        return static_cast<uint32_t>(solver_.flows_on(l) + std::ceil(link_share_[l]));
      }) {
  private_link_.resize(topology.num_links());
  for (LinkId l = 0; l < topology.num_links(); ++l) {
    solver_.add_link(topology.link(l).bandwidth.in_bytes_per_s());
    private_link_[l] = topology.is_endpoint_link(l);
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
      it->second = solver_.add_link(0);
      private_link_.push_back(false);
    }
    solver_.set_capacity(it->second, solver_.capacity(it->second) + solver_.capacity(l));
    trunk_of_[l] = it->second;
  }
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
  if (fresh) it->second = spread_paths(routing_, src, dst, balancing_.flows_per_message);
  return it->second;
}

LinkId FlowNetwork::allocate_pace_link(double capacity) {
  if (free_pace_links_.empty()) {
    private_link_.push_back(true);
    return solver_.add_link(capacity);
  }
  const LinkId l = free_pace_links_.back();
  free_pace_links_.pop_back();
  solver_.set_capacity(l, capacity);
  return l;
}

void FlowNetwork::start_flow(const std::vector<LinkId>& links, const std::vector<double>& weights,
                             Time latency, VertexId src, VertexId dst, double bytes, Done done) {
  if (unit_weights_.size() < links.size()) unit_weights_.resize(links.size(), 1.0);
  if (solver_.next_flow_id() > kSlotMask) throw std::length_error("too many flows at once");
  if (next_seq_ >> (64 - kSlotBits) != 0) throw std::length_error("too many flows");
  const uint32_t f = solver_.add_flow(links, weights);
  if (f >= flows_.size()) {
    flows_.resize(f + 1);
    clock_.resize(f + 1);
    heap_pos_.resize(f + 1, kNone);
  }
  Flow& flow = flows_[f];
  clock_[f] = {bytes, sim_.now()};
  flow.latency = latency;
  flow.done = std::move(done);
  flow.seq = next_seq_++;
  flow.src = src;
  flow.dst = dst;
  flow.pace = kNone;
  last_started_ = f;
  request_recompute();
}

std::vector<FlowNetwork::FlowView> FlowNetwork::active_flows() const {
  std::vector<FlowView> out;
  out.reserve(solver_.num_flows());
  for (uint32_t f = 0; f < flows_.size(); ++f) {
    const Flow& flow = flows_[f];
    if (solver_.has_flow(f))
      out.push_back({flow.src, flow.dst, solver_.rate(f), clock_[f].remaining});
  }
  return out;
}

void FlowNetwork::request_recompute() {
  if (recompute_pending_) return;
  recompute_pending_ = true;
  sim_.schedule_at(sim_.now(), [this] { recompute(); });
}

void FlowNetwork::finish(uint32_t f) {
  Flow& flow = flows_[f];
  if (flow.pace != kNone) free_pace_links_.push_back(flow.pace);
  flow.pace = kNone;
  const Time latency = flow.latency;
  Done done = std::move(flow.done);
  flow.done = nullptr;
  // The last byte has left the sender; it arrives one route latency later.
  if (done) sim_.schedule_in(latency, std::move(done));
}

bool FlowNetwork::Advance::done(MaxMin::FlowId f) {
  FlowClock& clock = net.clock_[f];
  clock.remaining -= net.solver_.rate(f) * (now - clock.last_update).as_seconds();
  clock.last_update = now;
  // Done by a rounding instant: it finishes now rather than at an event a picosecond later.
  return clock.remaining < kDoneBytes;
}

void FlowNetwork::recompute() {
  recompute_pending_ = false;
  Advance advance(*this, sim_.now());
  solver_.solve(advance);
  for (uint32_t f : solver_.finished()) {
    heap_remove(f);
    finish(f);
  }
  moved_.clear();
  bool starved = false;
  for (uint32_t f : solver_.changed()) {
    const double rate = solver_.rate(f);
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

Time FlowNetwork::finish_at(uint32_t f, double rate) const {
  if (rate <= 0) return Time::max();  // starved: only a later recompute can move it
  // Rounded up like transfer_time, so a lone flow matches it exactly.
  const double ps = std::ceil(clock_[f].remaining * 1e12 / rate);
  return sim_.now() + Time::ps(Time::checked_ps(ps));
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
    solver_.remove_flow(f);
    finish(f);
    request_recompute();
  }
  arm_timer();
}

}  // namespace cs::net
