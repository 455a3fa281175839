// Builds each pipeline stage's work (kernels timed by the cost model, collectives, gradient
// buckets, optimizer) from a run configuration: the entry point of lowering. Its parts: the run's
// rules (stage_rules.h) and the stage's layers (stage_layers.h); each chunk's forward
// (forward_pass.h, with param_gather.h's buckets) and backward (backward_pass.h, with
// grad_buckets.h's), or a stack's own ZeRO-3 passes (sharded_pass.h); the optimizer tail
// (optimizer_tail.h). op_maker.h turns layer ops into program ops for all of them.
#pragma once

#include <vector>

#include "proto/config.pb.h"
#include "sim/compute/kernel_cost.h"
#include "sim/workload/program_builder.h"

namespace cs::lower {

struct StageCosts {
  // Compute time of one microbatch through one chunk of a middle stage, per phase: what the
  // analytic bubble formulas take as T_F, T_B, T_W.
  double t_f = 0, t_b = 0, t_w = 0;
};

// Work of pipeline stage `stage`; `split_backward` separates weight gradients (ZB-H1). Under a
// software stack with its own ZeRO-3 rules (workload::custom_sharding) the chunk's passes are
// built unit by unit (sharded_pass.h); its bucket size, reduce collective and dtype, and whether
// reductions and the parameter sync overlap, come from its profile (stack.proto GradReduce).
workload::StageWork build_stage_work(const clustersim::RunConfig& config, int32_t stage,
                                     const compute::KernelCostModel& cost, bool split_backward);

// Per-phase compute time of chunk 0 of `work`, in seconds.
StageCosts phase_costs(const workload::StageWork& work);

}  // namespace cs::lower
