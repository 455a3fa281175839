// A reference replay of pipeline orders for the schedule tests, independent of the executor.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
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
};

// The neighbours come from the schedule's placement (forward_source / forward_target).
inline Replay replay(PipelineSchedule sched, const Orders& orders, int32_t v, Costs c) {
  const auto p = static_cast<int32_t>(orders.size());
  using Key = std::tuple<Phase, int32_t, int32_t, int32_t>;  // phase, microbatch, stage, chunk
  std::map<Key, int64_t> finish;
  auto done = [&](Phase ph, int32_t mb, ChunkRef at) -> std::optional<int64_t> {
    auto it = finish.find({ph, mb, at.stage, at.chunk});
    if (it == finish.end()) return std::nullopt;
    return it->second;
  };
  std::vector<size_t> next(p, 0);
  std::vector<int64_t> free_at(p, 0);
  Replay r;
  r.busy.assign(p, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int32_t s = 0; s < p; ++s) {
      while (next[s] < orders[s].size()) {
        const WorkItem& it = orders[s][next[s]];
        const ChunkRef self{s, it.chunk};
        const ChunkRef source = forward_source(sched, s, it.chunk, p, v);
        const ChunkRef target = forward_target(sched, s, it.chunk, p, v);
        std::vector<std::optional<int64_t>> deps;
        int64_t cost = 0;
        switch (it.phase) {
          case Phase::kForward:
            if (source.exists()) deps.push_back(done(Phase::kForward, it.microbatch, source));
            cost = c.f;
            break;
          case Phase::kBackward:
            deps.push_back(done(Phase::kForward, it.microbatch, self));
            if (target.exists()) deps.push_back(done(Phase::kBackward, it.microbatch, target));
            cost = c.b;
            break;
          case Phase::kWeightGrad:
            deps.push_back(done(Phase::kBackward, it.microbatch, self));
            cost = c.w;
            break;
        }
        if (!std::all_of(deps.begin(), deps.end(), [](const auto& d) { return d.has_value(); })) {
          break;
        }
        int64_t start = free_at[s];
        for (const auto& d : deps) start = std::max(start, *d);
        finish[{it.phase, it.microbatch, s, it.chunk}] = start + cost;
        free_at[s] = start + cost;
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

inline double bubble(const Replay& r) {
  return 1.0 - static_cast<double>(r.busy[0]) / static_cast<double>(r.makespan);
}

}  // namespace cs::workload::test
