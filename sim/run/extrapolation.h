// Steady-state microbatch extrapolation: a step of many microbatches from two short runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proto/config.pb.h"
#include "sim/core/units.h"
#include "sim/cost/goodput.h"
#include "sim/exec/executor.h"
#include "sim/net/network.h"
#include "sim/report/step_report.h"

namespace cs::run {

// What one simulated step leaves for its report besides the config: every figure here but the
// fleet and the topology's name grows with the microbatch count.
struct StepOutcome {
  std::vector<exec::RankStats> stats;  // per rank
  Time step_end;
  exec::CommTally comm;
  net::TrafficStats traffic;
  uint64_t events = 0;
  std::vector<std::pair<std::string, double>> kernel_groups;  // report::kernel_time_by_group
  double matmul_flops_per_gpu = 0;                            // report::matmul_flops_per_gpu
  report::OffloadFigures offload;
  report::VariabilityFigures variability;
  std::string topology_name;
  cost::FleetCounts fleet;
  // The microbatch counts of the runs this outcome was extended from; empty: simulated in full.
  std::vector<int32_t> extrapolated_from;
};

// The short runs of a step of `full` microbatches: `first`, first + step, first + 2 step, ... until
// the last three show a steady state (see is_steady); the last two then give the slope.
struct ExtrapolationPlan {
  int32_t first = 0;
  int32_t step = 0;
  int32_t full = 0;
  // The microbatches of the three runs a first check costs.
  int64_t first_check() const { return 3 * int64_t{first} + 3 * int64_t{step}; }
};

// The short runs of a schedule: the first holds at least 2p microbatches, so that every stage
// finishes its warm-up and runs steady periods before its cool-down; each next one adds p more (at
// least 2 without a pipeline). All keep the schedule's rules (whole groups of p for interleaved,
// even and >= 2p for DualPipe), so the full count is reached in whole periods.
ExtrapolationPlan short_runs(const clustersim::ParallelConfig& parallel, int32_t full);

// The plan for a validated config (gradient accumulation applied), or nothing when the config
// does not ask for extrapolation (simulation.microbatch_extrapolation), the step has at most
// simulation.extrapolation_min_microbatches microbatches, the first three short runs would not be
// shorter than the step, or a variability effect is on (its draws differ op by op, so no period
// repeats).
std::optional<ExtrapolationPlan> plan_extrapolation(const clustersim::RunConfig& config);

// Whether three runs `step` microbatches apart grow alike: the step's end and each rank-mean time
// figure grow by the same amount from the second to the third as from the first to the second,
// to within 0.1% of the step's growth. A schedule whose W's fill bubbles by list scheduling
// (ZB-H1 on 2 stages) reaches its period only after 3p microbatches: its runs of 2p, 2.5p and 3p
// are not steady, and the next runs are taken.
bool is_steady(const StepOutcome& a, const StepOutcome& b, const StepOutcome& c);

// `config` with `microbatches` per replica: global_batch_size = microbatches x dp x microbatch
// size, gradient_accumulation_steps cleared.
clustersim::RunConfig with_microbatches(const clustersim::RunConfig& config, int32_t microbatches);

// The full step of `full` microbatches from runs of `n_shorter` and `n_longer`: each figure
// extended along the line through its two values (exact when the figure is affine in the
// microbatch count, which a periodic steady state makes it). Times, bytes and kernel seconds never
// fall below zero. Events and extrapolated_from are left to the caller.
StepOutcome extrapolate(const StepOutcome& shorter, int32_t n_shorter, const StepOutcome& longer,
                        int32_t n_longer, int32_t full);

}  // namespace cs::run
