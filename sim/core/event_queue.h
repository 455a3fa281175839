// A monotone radix heap of timed callbacks, ordered by (time, insertion sequence), with lazy
// cancel.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/core/units.h"

namespace cs {

// Names one scheduled event. Ids stay safe to cancel forever: a stale id simply matches nothing.
struct EventId {
  uint64_t seq = 0;  // 0 never names an event
  uint32_t slot = 0;
  bool valid() const { return seq != 0; }
};

// Events at the same time run in the order they were pushed: a total order, so runs repeat exactly.
//
// Simulated time never runs backwards, so the queue is a radix heap (Ahuja et al. 1990): events
// sit in buckets by the highest bit in which their time differs from the last popped time, and
// a bucket is split only when it holds the minimum. Pushes are appends and pops touch memory
// sequentially; a 4-ary binary heap measured 2-3x slower here, bound by cache misses on its
// sift-down. The price is that a push may not precede the last popped time.
class EventQueue {
 public:
  using Handler = std::function<void()>;

  // Throws std::logic_error if `at` precedes the time of the last popped event.
  EventId push(Time at, Handler handler);
  // Returns true if the event was still pending (it will now never run).
  bool cancel(EventId id);
  bool empty() const { return live_ == 0; }
  std::size_t size() const { return live_; }
  // Time of the earliest pending event; the queue must not be empty.
  Time next_time();
  // Removes the earliest pending event; the queue must not be empty.
  void pop(Time& at, Handler& handler);

 private:
  // The handler travels with its entry: a side table indexed by slot cost a cache miss per pop.
  struct Entry {
    uint64_t at;   // time with the sign bit flipped, so unsigned order is time order
    uint64_t key;  // seq << kSlotBits | slot: comparing keys compares sequence numbers
    Handler handler;
  };
  static constexpr int kSlotBits = 26;  // 67M events pending at once
  static constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;
  static constexpr uint64_t kSignFlip = uint64_t{1} << 63;

  std::size_t bucket_of(uint64_t at) const {
    return at == last_ ? 0 : 64 - static_cast<std::size_t>(__builtin_clzll(at ^ last_));
  }
  bool is_live(const Entry& e) const { return slot_seq_[e.key & kSlotMask] == e.key >> kSlotBits; }
  // Makes the front of bucket 0 the earliest entry (live or cancelled); false if none is left.
  bool refill();
  // Leaves a live entry at the front of bucket 0.
  void skip_cancelled();
  // Drops every cancelled entry once they outnumber the live ones, so a workload that cancels
  // and reschedules all the time keeps memory proportional to its pending events.
  void compact_if_mostly_cancelled();

  std::array<std::vector<Entry>, 65> buckets_;
  std::size_t front_ = 0;      // next unread entry of bucket 0
  uint64_t last_ = kSignFlip;  // time 0

  // A slot names a pending event for cancel(): it holds that event's seq, or 0 when free.
  std::vector<uint64_t> slot_seq_;
  std::vector<uint32_t> free_slots_;
  uint64_t next_seq_ = 1;
  std::size_t live_ = 0;
  // Cancelled entries still queued. While zero the front is known to be live, which spares the
  // hot path a random access into slot_seq_.
  std::size_t cancelled_queued_ = 0;
};

}  // namespace cs
