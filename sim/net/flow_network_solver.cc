// FlowNetwork's incremental max-min solve: the flows a change reaches and their water-filled rates.
#include "sim/net/flow_network.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>

namespace cs::net {

namespace {

// A flow with less than this left is done: it absorbs the rounding of rates and of
// completion times to whole picoseconds.
constexpr double kDoneBytes = 1e-3;
// Rates that differ by less than this fraction are treated as unchanged, so floating noise from
// a different filling order does not move a finish time.
constexpr double kRateTolerance = 1e-12;

}  // namespace

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
