// How one pipeline stage's streams run a model chunk's phases, for the planner's estimate.
#pragma once

#include <array>
#include <vector>

#include "sim/plan/collective_cost.h"
#include "sim/workload/program_builder.h"

namespace cs::plan {

// A compute op's seconds; for an expert op, the busiest EP rank's, since each layer's dispatch
// and combine all-to-alls make the whole EP group wait for it.
double compute_seconds(const workload::StageWork& work, const workload::Op& op);

// The streams of one stage running a chunk's phases, each stream one op at a time in program
// order and each op after the ops it depends on: how the DP stream's gathers and reductions, the
// CP stream's ring hops and the compute stream wait for each other, carried from one phase into
// the next (a backward's last reductions hold up the next forward's first gather). Under
// DualPipe's overlapped pairs the expert all-to-alls are left out (`skip_expert`) and summed in
// expert() instead.
class StreamReplay {
 public:
  StreamReplay(const workload::StageWork& work, CollectiveCost& comm, bool skip_expert)
      : work_(work), comm_(comm), skip_expert_(skip_expert) {}

  // Runs `phase` from when the compute stream is free, then `syncs` (each after its op of the
  // phase) on the DP stream; returns the compute stream's seconds for it.
  double run(const workload::PhaseOps& phase, const std::vector<workload::GradSync>& syncs);
  double expert() const { return expert_; }

 private:
  // Runs `op` on its stream once `ready`; returns its end.
  double place(const workload::Op& op, double ready);

  const workload::StageWork& work_;
  CollectiveCost& comm_;
  bool skip_expert_;
  std::array<double, workload::kNumStreams> free_{};
  double expert_ = 0;
};

}  // namespace cs::plan
