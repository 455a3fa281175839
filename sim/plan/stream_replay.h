// How one pipeline stage's streams run a model chunk's phases, for the planner's estimate.
#pragma once

#include <array>
#include <vector>

#include "sim/plan/collective_cost.h"
#include "sim/plan/compute_interference.h"
#include "sim/workload/program_builder.h"

namespace cs::plan {

// A compute op's seconds; for an expert op, the busiest EP rank's, since each layer's dispatch
// and combine all-to-alls make the whole EP group wait for it.
double compute_seconds(const workload::StageWork& work, const workload::Op& op);

// The streams of one stage running a chunk's phases, each stream one op at a time in program
// order and each op after the ops it depends on: how the DP stream's gathers and reductions, the
// CP stream's ring hops and the compute stream wait for each other, carried from one phase into
// the next (a backward's last reductions hold up the next forward's first gather). Each phase
// starts when the compute stream is free, as the step's next item follows the last one's last
// compute op. Compute kernels beside communication in flight run longer (`interference`), the
// phase's kernels' extra seconds added at its end. Collectives are charged with a share
// `stages_at_once` of the other stages making theirs at the same time (CollectiveCost::seconds).
class StreamReplay {
 public:
  StreamReplay(const workload::StageWork& work, CollectiveCost& comm,
               const ComputeInterference& interference, double stages_at_once)
      : work_(work), comm_(comm), interference_(interference), stages_at_once_(stages_at_once) {}

  // Runs `phase`, then `syncs` (each after its op of the phase) on the DP stream; returns the
  // compute stream's seconds for it.
  double run(const workload::PhaseOps& phase, const std::vector<workload::GradSync>& syncs);
  // Runs DualPipe's overlapped pair as the step builds it (workload::pair_turns): the forward's
  // and the backward's ops in turns, each turn up to an expert all-to-all, which leaves the
  // compute stream; the backward's weight gradients (`weight`, may be empty) after its last
  // compute op, then `syncs` after their ops of the pair's last phase. Returns the compute
  // stream's seconds for the pair.
  double run_pair(const workload::PhaseOps& forward, const workload::PhaseOps& backward,
                  const workload::PhaseOps& weight, const std::vector<workload::GradSync>& syncs);
  // How long the other streams run on past the compute stream's last op (a pass's reductions).
  double streams_ahead() const;

 private:
  // One phase's ops as they are placed.
  struct Cursor {
    const workload::PhaseOps* phase = nullptr;
    double start = 0, last_compute = 0;
    std::vector<double> ends;
    bool done() const { return ends.size() == phase->ops.size(); }
  };
  Cursor cursor(const workload::PhaseOps& phase, double start) const;
  // Places the cursor's next op; in an overlapped pair an expert all-to-all runs on its own stream.
  void place_next(Cursor& c, bool overlapped);
  // Runs `op` on `stream` once `ready`; returns its end.
  double place(const workload::Op& op, workload::Stream stream, double ready);
  void sync(const Cursor& final_phase, const std::vector<workload::GradSync>& syncs);
  // Starts a phase at `start`: forgets kernels of the last and communication ended by then.
  void begin_phase(double start);
  // Ends a phase: the compute stream runs on by its kernels' extra seconds beside communication.
  void end_phase();

  const workload::StageWork& work_;
  CollectiveCost& comm_;
  const ComputeInterference& interference_;
  double stages_at_once_;
  std::array<double, workload::kNumStreams> free_{};
  std::vector<KernelSpan> kernels_;  // the phase's compute-stream kernels
  std::vector<CommSpan> spans_;      // communication that may overlap them
};

}  // namespace cs::plan
