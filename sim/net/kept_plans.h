// Plans a network works out once and reuses, kept within a room of entries, least recently used
// giving way first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cs::net {

// A network sends the same transfers again and again (every bucket of a data-parallel reduction,
// every microbatch's pipeline transfer), and planning one (routing its edges over hashed paths)
// costs far more than sending it. At 100,000 GPUs a step has about a thousand plans of tens of
// thousands of entries each, some sent a thousand times a step and many once: more than the room,
// so a plan that has not been used for longest gives its place to the new one. A place given away
// gets a new generation, so that whoever noted the place (FluidPlanSlot) sees the plan is gone.
template <class Plan>
class KeptPlans {
 public:
  explicit KeptPlans(std::size_t room) : room_(room) {}

  // Entries (the caller's measure of a plan's size) that kept plans may hold in all.
  void set_room(std::size_t room) { room_ = room; }

  // The plan at `index` if it is still of `generation`, marked used; else null.
  const Plan* at(uint32_t index, uint32_t generation) {
    if (index >= places_.size() || places_[index].generation != generation || !places_[index].kept)
      return nullptr;
    return &used(index);
  }
  // The index of a kept plan filed under `hash` for which same(plan) holds, marked used.
  template <class Same>
  std::optional<uint32_t> find(uint64_t hash, Same&& same) {
    const auto bucket = by_hash_.find(hash);
    if (bucket == by_hash_.end()) return std::nullopt;
    for (const uint32_t index : bucket->second)
      if (same(places_[index].plan)) {
        used(index);
        return index;
      }
    return std::nullopt;
  }
  // Keeps `plan` of `entries` (moving it in), filed under `hash` where it has one (find() looks
  // plans up by it; one only ever named by its index needs none), making room by forgetting the
  // plans used least recently, but none used at or after `pinned_from` (a mark() taken earlier:
  // those may still be read). Returns its index, or nothing, leaving `plan` as it was, when it
  // cannot be kept: more than the room alone, or the room held by pinned plans.
  std::optional<uint32_t> keep(std::optional<uint64_t> hash, Plan& plan, std::size_t entries,
                               uint64_t pinned_from = ~uint64_t{0}) {
    if (entries > room_) return std::nullopt;
    while (held_ + entries > room_)
      if (!forget_least_recent(pinned_from)) return std::nullopt;
    uint32_t index = static_cast<uint32_t>(places_.size());
    if (free_.empty()) {
      places_.emplace_back();
    } else {
      index = free_.back();
      free_.pop_back();
    }
    Place& place = places_[index];
    place.plan = std::move(plan);
    place.hash = hash;
    place.entries = entries;
    place.kept = true;
    held_ += entries;
    if (hash) by_hash_[*hash].push_back(index);
    used(index);
    return index;
  }
  const Plan& operator[](uint32_t index) const { return places_[index].plan; }
  uint32_t generation(uint32_t index) const { return places_[index].generation; }
  // The use clock now: plans used from here on are pinned for keep(..., mark()).
  uint64_t mark() const { return clock_ + 1; }

 private:
  static constexpr uint32_t kNone = ~uint32_t{0};
  struct Place {
    Plan plan;
    std::optional<uint64_t> hash;
    uint64_t last_used = 0;
    std::size_t entries = 0;
    uint32_t generation = 0;
    bool kept = false;
    // Neighbours in the list of kept plans from least to most recently used.
    uint32_t older = kNone;
    uint32_t newer = kNone;
  };

  void unlink(uint32_t index) {
    Place& p = places_[index];
    (p.older == kNone ? oldest_ : places_[p.older].newer) = p.newer;
    (p.newer == kNone ? newest_ : places_[p.newer].older) = p.older;
    p.older = p.newer = kNone;
  }
  const Plan& used(uint32_t index) {
    Place& p = places_[index];
    if (p.last_used > 0) unlink(index);
    p.last_used = ++clock_;
    p.older = newest_;
    (newest_ == kNone ? oldest_ : places_[newest_].newer) = index;
    newest_ = index;
    return p.plan;
  }
  bool forget_least_recent(uint64_t pinned_from) {
    if (oldest_ == kNone || places_[oldest_].last_used >= pinned_from) return false;
    const uint32_t index = oldest_;
    unlink(index);
    Place& place = places_[index];
    if (place.hash) {
      const auto bucket = by_hash_.find(*place.hash);
      std::erase(bucket->second, index);
      if (bucket->second.empty()) by_hash_.erase(bucket);
    }
    held_ -= place.entries;
    const uint32_t next = place.generation + 1;
    place = Place{};
    place.generation = next;
    free_.push_back(index);
    return true;
  }

  std::deque<Place> places_;  // a deque: a plan handed out stays where it is as others are kept
  std::unordered_map<uint64_t, std::vector<uint32_t>> by_hash_;
  std::vector<uint32_t> free_;  // places forgotten, given to the next plans kept
  uint32_t oldest_ = kNone;     // the ends of the list of kept plans by use
  uint32_t newest_ = kNone;
  std::size_t held_ = 0;
  std::size_t room_;
  uint64_t clock_ = 0;
};

}  // namespace cs::net
