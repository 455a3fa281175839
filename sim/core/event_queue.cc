#include "sim/core/event_queue.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>
#include <utility>

namespace cs {

EventId EventQueue::push(Time when, Handler handler) {
  const uint64_t at = static_cast<uint64_t>(when.count_ps()) ^ kSignFlip;
  if (at < last_) {
    throw std::logic_error("event pushed at " + std::to_string(when.count_ps()) +
                           " ps, before the last popped event");
  }
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    if (slot_seq_.size() > kSlotMask) throw std::length_error("too many pending events");
    slot = static_cast<uint32_t>(slot_seq_.size());
    slot_seq_.push_back(0);
  }
  const uint64_t seq = next_seq_++;
  slot_seq_[slot] = seq;
  // An entry at the current time joins bucket 0 behind older ones: its seq is the largest yet.
  buckets_[bucket_of(at)].push_back(Entry{at, seq << kSlotBits | slot, std::move(handler)});
  ++live_;
  return EventId{seq, slot};
}

bool EventQueue::cancel(EventId id) {
  if (!id.valid() || id.slot >= slot_seq_.size() || slot_seq_[id.slot] != id.seq) return false;
  // The entry stays queued (with its handler) and is skipped when it surfaces; the slot is
  // reusable at once because the entry's seq no longer matches the slot's owner.
  slot_seq_[id.slot] = 0;
  free_slots_.push_back(id.slot);
  --live_;
  ++cancelled_queued_;
  compact_if_mostly_cancelled();
  return true;
}

void EventQueue::compact_if_mostly_cancelled() {
  if (cancelled_queued_ < 1024 || cancelled_queued_ < live_) return;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    auto& bucket = buckets_[b];
    const std::size_t first = b == 0 ? front_ : 0;
    // Stable, so bucket 0 keeps its sequence order.
    auto kept = std::stable_partition(bucket.begin() + static_cast<std::ptrdiff_t>(first),
                                      bucket.end(), [this](const Entry& e) { return is_live(e); });
    bucket.erase(kept, bucket.end());
  }
  cancelled_queued_ = 0;
}

bool EventQueue::refill() {
  auto& zero = buckets_[0];
  if (front_ < zero.size()) return true;
  zero.clear();
  front_ = 0;
  std::size_t i = 1;
  while (i < buckets_.size() && buckets_[i].empty()) ++i;
  if (i == buckets_.size()) return false;
  auto& source = buckets_[i];
  uint64_t min_at = source.front().at;
  for (const Entry& e : source) min_at = std::min(min_at, e.at);
  last_ = min_at;
  // Every entry of the first non-empty bucket moves to a strictly lower one.
  for (Entry& e : source) buckets_[bucket_of(e.at)].push_back(std::move(e));
  source.clear();
  // Ties arrive mostly in push order already (a bucket fills by appends), so check first.
  const auto by_seq = [](const Entry& a, const Entry& b) { return a.key < b.key; };
  if (zero.size() > 1 && !std::is_sorted(zero.begin(), zero.end(), by_seq)) {
    std::sort(zero.begin(), zero.end(), by_seq);
  }
  return true;
}

void EventQueue::skip_cancelled() {
  while (refill() && cancelled_queued_ > 0 && !is_live(buckets_[0][front_])) {
    buckets_[0][front_++].handler = nullptr;  // release what the cancelled handler captured
    --cancelled_queued_;
  }
}

Time EventQueue::next_time() {
  assert(live_ > 0);
  skip_cancelled();
  return Time::ps(static_cast<int64_t>(buckets_[0][front_].at ^ kSignFlip));
}

void EventQueue::pop(Time& when, Handler& handler) {
  assert(live_ > 0);
  skip_cancelled();
  Entry& e = buckets_[0][front_++];
  const auto slot = static_cast<uint32_t>(e.key & kSlotMask);
  when = Time::ps(static_cast<int64_t>(e.at ^ kSignFlip));
  handler = std::move(e.handler);
  slot_seq_[slot] = 0;
  free_slots_.push_back(slot);
  --live_;
}

}  // namespace cs
