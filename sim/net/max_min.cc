#include "sim/net/max_min.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

namespace cs::net {

namespace {

// Rates that differ by less than this fraction are treated as unchanged, so floating noise from
// a different filling order does not move a rate, nor make a link look less than full.
constexpr double kRateTolerance = 1e-12;

struct NeverDone final : MaxMin::Progress {
  bool done(MaxMin::FlowId) override { return false; }
};

}  // namespace

LinkId MaxMin::add_link(double capacity) {
  const auto l = static_cast<LinkId>(links_.size());
  links_.emplace_back();
  tags_.emplace_back();
  links_[l].capacity = capacity;
  tags_[l].slack = slack(links_[l], l);
  return l;
}

void MaxMin::set_capacity(LinkId l, double capacity) {
  if (!links_[l].flows.empty()) throw std::logic_error("MaxMin: capacity of a link in use");
  links_[l].capacity = capacity;
  tags_[l].slack = slack(links_[l], l);
}

MaxMin::FlowId MaxMin::add_flow(std::span<const LinkId> links, std::span<const double> weights) {
  if (links.empty()) throw std::invalid_argument("MaxMin: a flow must cross a link");
  if (weights.size() < links.size()) throw std::invalid_argument("MaxMin: a weight per link");
  for (std::size_t h = 0; h < links.size(); ++h)
    if (!(weights[h] > 0)) throw std::invalid_argument("MaxMin: weights must be > 0");
  const FlowId f = allocate_flow();
  reserve_hops(f, links.size());
  FlowShare& share = share_[f];
  share.rate = 0;
  share.num_hops = static_cast<uint32_t>(links.size());
  share.bottleneck = kNone;
  slots_[f].binding_known = false;
  new_flows_.push_back(f);
  Hop* hop = hops(f);
  for (std::size_t h = 0; h < links.size(); ++h) {
    hop[h].link = links[h];
    hop[h].weight = weights[h];
  }
  set_alone_rates(f);
  attach(f);
  return f;
}

void MaxMin::remove_flow(FlowId f) {
  detach(f, /*mark=*/true);
}

MaxMin::FlowId MaxMin::allocate_flow() {
  ++num_flows_;
  if (free_head_ != kNone) {
    const FlowId f = free_head_;
    free_head_ = slots_[f].next_free;
    slots_[f].next_free = kNone;
    return f;
  }
  slots_.emplace_back();
  share_.emplace_back();
  binding_hops_.emplace_back();
  return static_cast<FlowId>(slots_.size() - 1);
}

void MaxMin::reserve_hops(FlowId f, std::size_t num_hops) {
  FlowSlot& slot = slots_[f];
  if (num_hops <= slot.hop_capacity) return;
  // A new range at the end of the pool; the slot keeps it for later flows. Most flows have a
  // handful of hops, so a fresh slot takes room for 8.
  slot.hop_capacity = static_cast<uint32_t>(std::max<std::size_t>(num_hops, 8));
  share_[f].hop_begin = static_cast<uint32_t>(hops_.size());
  hops_.resize(hops_.size() + slot.hop_capacity);
}

void MaxMin::set_alone_rates(FlowId f) {
  FlowSlot& slot = slots_[f];
  slot.alone = slot.alone_second = std::numeric_limits<double>::infinity();
  const Hop* hop = hops(f);
  for (uint32_t h = 0; h < share_[f].num_hops; ++h) {
    const double rate = links_[hop[h].link].capacity / hop[h].weight;
    if (rate < slot.alone) {
      slot.alone_second = slot.alone;
      slot.alone = rate;
      slot.tightest = hop[h].link;
    } else if (rate < slot.alone_second) {
      slot.alone_second = rate;
    }
  }
  // A single link: anything above the flow's own rate keeps that link tight.
  if (!std::isfinite(slot.alone_second)) slot.alone_second = 2 * slot.alone;
}

void MaxMin::mark_dirty(LinkId l) {
  LinkTag& tag = tags_[l];
  // An incremental solve seeds only from the flows a changed link limits, so a link that limits
  // none need not be listed (most of a flow's hashed links).
  if (tag.dirty || (incremental_ && links_[l].limited == kNone)) return;
  tag.dirty = true;
  dirty_links_.push_back(l);
}

void MaxMin::update_slack(LinkId l) {
  const LinkState& link = links_[l];
  LinkTag& tag = tags_[l];
  const bool now = slack(link, l);
  if (now == tag.slack) return;
  tag.slack = now;
  if (now) return;
  for (const LinkEntry& entry : link.flows) {
    FlowSlot& slot = slots_[entry.flow];
    Hop& hop = hops(entry.flow)[entry.hop];
    if (!slot.binding_known || hop.listed) continue;
    hop.listed = 1;
    binding_hops_[entry.flow].push_back(entry.hop);
  }
}

const std::vector<uint32_t>& MaxMin::binding_hops(FlowId f) {
  FlowSlot& slot = slots_[f];
  Hop* hop = hops(f);
  std::vector<uint32_t>& binding = binding_hops_[f];
  if (!slot.binding_known) {
    binding.clear();
    for (uint32_t h = 0; h < share_[f].num_hops; ++h) {
      hop[h].listed = !tags_[hop[h].link].slack;
      if (hop[h].listed) binding.push_back(h);
    }
    slot.binding_known = true;
    slot.binding_sorted = static_cast<uint32_t>(binding.size());
    slot.binding_stale = 0;
    return binding;
  }
  // Hops that joined since the last read: in order, merged into the rest.
  if (slot.binding_sorted < binding.size()) {
    const auto joined = binding.begin() + slot.binding_sorted;
    std::sort(joined, binding.end());
    std::inplace_merge(binding.begin(), joined, binding.end());
  }
  // Links that turned slack since stay listed; once they are most of the list, it drops them.
  if (2 * slot.binding_stale > binding.size()) {
    std::erase_if(binding, [&](uint32_t h) {
      const bool gone = tags_[hop[h].link].slack;
      if (gone) hop[h].listed = 0;
      return gone;
    });
  }
  slot.binding_sorted = static_cast<uint32_t>(binding.size());
  return binding;
}

void MaxMin::set_bottleneck(FlowId f, LinkId l) {
  FlowShare& share = share_[f];
  FlowSlot& slot = slots_[f];
  if (share.bottleneck == l) return;
  if (share.bottleneck != kNone) {
    if (slot.prev_limited != kNone) {
      slots_[slot.prev_limited].next_limited = slot.next_limited;
    } else {
      links_[share.bottleneck].limited = slot.next_limited;
    }
    if (slot.next_limited != kNone) slots_[slot.next_limited].prev_limited = slot.prev_limited;
  }
  share.bottleneck = l;
  slot.prev_limited = kNone;
  slot.next_limited = kNone;
  if (l == kNone) return;
  uint32_t& head = links_[l].limited;
  slot.next_limited = head;
  if (head != kNone) slots_[head].prev_limited = f;
  head = f;
}

void MaxMin::attach(FlowId f) {
  Hop* hop = hops(f);
  for (uint32_t h = 0; h < share_[f].num_hops; ++h) {
    LinkState& link = links_[hop[h].link];
    hop[h].pos = static_cast<uint32_t>(link.flows.size());
    link.flows.push_back({f, h, hop[h].weight});
    link.demand += hop[h].weight * demand_of(slots_[f], hop[h].link);
    update_slack(hop[h].link);
    mark_dirty(hop[h].link);
  }
}

void MaxMin::detach(FlowId f, bool mark) {
  set_bottleneck(f, kNone);
  const Hop* hop = hops(f);
  for (uint32_t h = 0; h < share_[f].num_hops; ++h) {
    LinkState& link = links_[hop[h].link];
    const LinkEntry moved = link.flows.back();
    link.flows[hop[h].pos] = moved;
    hops(moved.flow)[moved.hop].pos = hop[h].pos;
    link.flows.pop_back();
    // Reset when empty, so rounding cannot build up over a long run.
    link.demand =
        link.flows.empty() ? 0 : link.demand - hop[h].weight * demand_of(slots_[f], hop[h].link);
    update_slack(hop[h].link);
    if (mark) mark_dirty(hop[h].link);
  }
  --num_flows_;
  share_[f].num_hops = 0;
  slots_[f].next_free = free_head_;
  free_head_ = f;
}

void MaxMin::next_epochs() {
  if (++epoch_ == 0) {  // wrapped: old marks could alias the new epoch
    for (FlowShare& share : share_) share.mark = 0;
    epoch_ = 1;
  }
  next_link_epoch();
}

void MaxMin::next_link_epoch() {
  if (++link_epoch_ == 0) {
    for (LinkTag& tag : tags_) tag.mark = 0;
    link_epoch_ = 1;
  }
}

void MaxMin::add_to_set(FlowId f) {
  if (in_set(f)) return;
  share_[f].mark = epoch_;
  comp_flows_.push_back(f);
}

void MaxMin::solve() {
  NeverDone never;
  solve(never);
}

void MaxMin::solve(Progress& progress) {
  ++solves_;
  next_epochs();
  comp_flows_.clear();
  comp_links_.clear();
  finished_.clear();
  if (incremental_) {
    seed_from_dirty_links();
  } else {
    collect_component();
  }
  std::size_t advanced = 0;
  advance_set(advanced, progress);
  if (incremental_) {
    while (true) {
      ++fill_rounds_;
      collect_links();
      water_fill();
      if (!grow_set()) break;
      advance_set(advanced, progress);
    }
  } else {
    ++fill_rounds_;
    water_fill();
  }
  solved_flows_ += comp_flows_.size();
  commit_rates();
}

void MaxMin::commit_rates() {
  changed_.clear();
  for (FlowId f : comp_flows_) {
    FlowShare& share = share_[f];
    const double old_rate = share.rate;
    const double rate = share.new_rate;
    // Same rate: what the owner worked out from it still holds.
    if (old_rate > 0 && std::abs(rate - old_rate) <= kRateTolerance * old_rate) continue;
    share.rate = rate;
    changed_.push_back(f);
  }
}

void MaxMin::advance_set(std::size_t& from, Progress& progress) {
  // Flows that are done leave here rather than at an event a rounding instant later. A whole
  // component already holds their links; an incremental set re-seeds from them.
  while (from < comp_flows_.size()) {
    std::size_t kept = from;
    done_.clear();
    for (std::size_t i = from; i < comp_flows_.size(); ++i) {
      const FlowId f = comp_flows_[i];
      if (progress.done(f)) {
        done_.push_back(f);
      } else {
        comp_flows_[kept++] = f;
      }
    }
    comp_flows_.resize(kept);
    from = kept;
    for (FlowId f : done_) {
      detach(f, /*mark=*/incremental_);
      share_[f].mark = 0;
      finished_.push_back(f);
    }
    if (incremental_) seed_from_dirty_links();
  }
}

void MaxMin::seed_from_dirty_links() {
  // A flow crossing a changed link keeps its rate unless the link was its bottleneck: its own
  // bottleneck is unchanged, still full and still without a faster flow. grow_set() catches the
  // flows the seed's new rates then disturb.
  for (LinkId l : dirty_links_) {
    tags_[l].dirty = false;
    for (uint32_t f = links_[l].limited; f != kNone; f = slots_[f].next_limited) add_to_set(f);
  }
  dirty_links_.clear();
  for (FlowId f : new_flows_)
    if (has_flow(f) && share_[f].bottleneck == kNone) add_to_set(f);
  new_flows_.clear();
}

void MaxMin::collect_component() {
  fill_hops_.clear();
  // A changed link's flows are revisited even when it is slack now: it may have limited them
  // before the change. Only links that can limit someone are filled and crossed.
  for (LinkId l : dirty_links_) {
    LinkTag& tag = tags_[l];
    tag.dirty = false;
    if (tag.slack) {
      for (const LinkEntry& entry : links_[l].flows) add_to_set(entry.flow);
    } else if (tag.mark != link_epoch_) {
      add_link_to_set(tag, l);
    }
  }
  dirty_links_.clear();
  new_flows_.clear();  // on the changed links, so in the component
  // Breadth-first over link -> flows -> links, starting from the revisited flows and the tight
  // changed links; comp_links_ doubles as the link queue.
  std::size_t next_flow = 0, next_link = 0;
  while (next_flow < comp_flows_.size() || next_link < comp_links_.size()) {
    for (; next_link < comp_links_.size(); ++next_link)
      for (const LinkEntry& entry : links_[comp_links_[next_link]].flows) add_to_set(entry.flow);
    for (; next_flow < comp_flows_.size(); ++next_flow) add_binding_links(comp_flows_[next_flow]);
  }
}

void MaxMin::add_binding_links(FlowId f) {
  const Hop* hop = hops(f);
  FlowSlot& slot = slots_[f];
  slot.fill_begin = static_cast<uint32_t>(fill_hops_.size());
  uint32_t stale = 0;
  for (const uint32_t h : binding_hops(f)) {
    LinkTag& tag = tags_[hop[h].link];
    if (tag.slack) {
      ++stale;
      continue;
    }
    if (tag.mark != link_epoch_) add_link_to_set(tag, hop[h].link);
    fill_hops_.push_back({tag.slot, hop[h].weight});
  }
  slot.binding_stale = stale;
  slot.fill_end = static_cast<uint32_t>(fill_hops_.size());
}

void MaxMin::add_link_to_set(LinkTag& tag, LinkId l) {
  tag.mark = link_epoch_;
  tag.slot = static_cast<uint32_t>(comp_links_.size());
  comp_links_.push_back(l);
}

void MaxMin::collect_links() {
  next_link_epoch();
  comp_links_.clear();
  fill_hops_.clear();
  for (FlowId f : comp_flows_) add_binding_links(f);
}

bool MaxMin::grow_set() {
  grown_.clear();
  // Every flow is in the set: none is fixed, so none can be left without a valid bottleneck.
  if (comp_flows_.size() == num_flows_) return false;
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
  for (FlowId f : grown_) add_to_set(f);
  return !grown_.empty();
}

void MaxMin::start_fill() {
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
  for (FlowId f : comp_flows_) share_[f].new_rate = -1;
}

void MaxMin::water_fill() {
  // Progressive filling: repeatedly take the link with the smallest fair share of its residual
  // capacity, freeze its unfrozen flows at that share, and charge them to their other links.
  // Freezing at the smallest share only raises other links' shares, so the heap holds possibly
  // stale (too low) keys: a popped link whose share has grown goes back in with its new share.
  const auto cmp = std::greater<FillKey>{};
  start_fill();
  filled_links_ += comp_links_.size();
  std::make_heap(heap_.begin(), heap_.end(), cmp);
  // Once the set's last flow is frozen, every link's unfrozen count is 0 and the pops left would
  // change nothing: stop there rather than pop them all.
  std::size_t unfrozen = comp_flows_.size();
  while (unfrozen > 0 && !heap_.empty()) {
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
      set_bottleneck(entry.flow, l);
      --unfrozen;
      const FlowSlot& slot = slots_[entry.flow];
      for (uint32_t i = slot.fill_begin; i < slot.fill_end; ++i) {
        LinkFill& link = fill_[fill_hops_[i].slot];
        link.residual -= share * fill_hops_[i].weight;
        link.unfrozen_weight -= fill_hops_[i].weight;
        --link.unfrozen;
      }
    }
  }
}

}  // namespace cs::net
