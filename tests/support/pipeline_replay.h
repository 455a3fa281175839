// A reference replay of pipeline orders for the schedule tests, independent of the executor.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/workload/pipeline_schedule.h"

namespace cs::workload::test {

using Orders = std::vector<std::vector<WorkItem>>;

// Integer costs per phase; B is the full backward when the order has no W.
struct Costs {
  int64_t f = 1;
  int64_t b = 2;
  int64_t w = 0;
};

// A reference executor independent of the library: each stage runs its order in sequence; an
// item starts when its stage is free and its data dependencies have finished.
struct Replay {
  bool deadlocked = false;
  int64_t makespan = 0;
  std::vector<int64_t> busy;  // per stage
  // Per stage: when its first item started and its last ended (its span).
  std::vector<int64_t> first_start, last_end;
};

// The neighbours come from the schedule's placement (forward_source / forward_target).
inline Replay replay(PipelineSchedule sched, const Orders& orders, int32_t v, Costs c) {
  const auto p = static_cast<int32_t>(orders.size());
  using Key = std::tuple<Phase, int32_t, int32_t, int32_t>;  // phase, microbatch, stage, chunk
  std::map<Key, int64_t> finish;                             // when other stages see the output
  std::map<Key, int64_t> ran;  // when the item ended, for its own stage
  int32_t s = 0;               // the stage whose item is being placed
  auto done = [&](Phase ph, int32_t mb, ChunkRef at) -> std::optional<int64_t> {
    const auto& seen = at.stage == s ? ran : finish;
    auto it = seen.find({ph, mb, at.stage, at.chunk});
    if (it == seen.end()) return std::nullopt;
    return it->second;
  };
  std::vector<size_t> next(p, 0);
  std::vector<int64_t> free_at(p, 0);
  std::vector<std::vector<Key>> pending(p);
  Replay r;
  r.busy.assign(p, 0);
  r.first_start.assign(p, 0);
  r.last_end.assign(p, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (s = 0; s < p; ++s) {
      while (next[s] < orders[s].size()) {
        const WorkItem& it = orders[s][next[s]];
        auto inputs = [&](const WorkItem& item) {
          const ChunkRef self{s, item.chunk};
          const ChunkRef source = forward_source(sched, s, item.chunk, p, v);
          const ChunkRef target = forward_target(sched, s, item.chunk, p, v);
          std::vector<std::optional<int64_t>> deps;
          if (item.phase == Phase::kForward) {
            if (source.exists()) deps.push_back(done(Phase::kForward, item.microbatch, source));
          } else if (item.phase == Phase::kBackward) {
            deps.push_back(done(Phase::kForward, item.microbatch, self));
            if (target.exists()) deps.push_back(done(Phase::kBackward, item.microbatch, target));
          } else {
            deps.push_back(done(Phase::kBackward, item.microbatch, self));
          }
          return deps;
        };
        std::vector<std::optional<int64_t>> deps = inputs(it);
        // An overlapped pair starts once both halves have their inputs (Pairing::kOverlapped);
        // the backward's own activations are not among them (another microbatch's).
        if (it.pair == Pairing::kOverlapped && next[s] + 1 < orders[s].size()) {
          for (const auto& d : inputs(orders[s][next[s] + 1])) deps.push_back(d);
        }
        const int64_t cost = it.phase == Phase::kForward    ? c.f
                             : it.phase == Phase::kBackward ? c.b
                                                            : c.w;
        if (!std::all_of(deps.begin(), deps.end(), [](const auto& d) { return d.has_value(); })) {
          break;
        }
        int64_t start = free_at[s];
        for (const auto& d : deps) start = std::max(start, *d);
        // A paired item's output leaves with that of the next unpaired one (Pairing).
        ran[{it.phase, it.microbatch, s, it.chunk}] = start + cost;
        pending[s].push_back({it.phase, it.microbatch, s, it.chunk});
        if (it.pair == Pairing::kNone || next[s] + 1 == orders[s].size()) {
          for (const Key& key : pending[s]) finish[key] = start + cost;
          pending[s].clear();
        }
        if (next[s] == 0) r.first_start[s] = start;
        free_at[s] = start + cost;
        r.last_end[s] = free_at[s];
        r.busy[s] += cost;
        ++next[s];
        progress = true;
      }
    }
  }
  for (int32_t s = 0; s < p; ++s) {
    r.deadlocked |= next[s] != orders[s].size();
    r.makespan = std::max(r.makespan, free_at[s]);
  }
  return r;
}

// Empty when on each stage every (microbatch, chunk) runs F, then B, then W where the order has
// one, each once; else the first item out of that order.
inline std::string f_b_w_misorder(const Orders& orders) {
  for (size_t s = 0; s < orders.size(); ++s) {
    std::map<std::pair<int32_t, int32_t>, int> due;  // 0: F due, 1: B due, 2: W due
    for (const WorkItem& it : orders[s]) {
      int& next = due[{it.microbatch, it.chunk}];
      if (static_cast<int>(it.phase) != next) {
        return "stage " + std::to_string(s) + " mb " + std::to_string(it.microbatch) + " chunk " +
               std::to_string(it.chunk) + " phase " + std::to_string(static_cast<int>(it.phase));
      }
      ++next;
    }
  }
  return "";
}

inline double bubble(const Replay& r) {
  return 1.0 - static_cast<double>(r.busy[0]) / static_cast<double>(r.makespan);
}

// The steady step when no stage waits for the others at the step's boundary (optimizer
// post-validation): the longest stage span.
inline int64_t free_running_step(const Replay& r) {
  int64_t step = 0;
  for (size_t s = 0; s < r.busy.size(); ++s)
    step = std::max(step, r.last_end[s] - r.first_start[s]);
  return step;
}

// Stage s's idle share of that step.
inline double free_running_bubble(const Replay& r, int32_t s) {
  const auto busy = static_cast<double>(r.busy[static_cast<size_t>(s)]);
  return 1.0 - busy / static_cast<double>(free_running_step(r));
}

}  // namespace cs::workload::test
