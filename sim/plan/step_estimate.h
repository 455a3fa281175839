// The planner's closed-form step time, which pre-ranks layouts before any is simulated.
#pragma once

#include <cstdint>

#include "proto/config.pb.h"

namespace cs::plan {

// Seconds per step without simulation, from the work each stage's program is built from
// (lower::build_stage_work), for the first, middle and last stage, the slowest setting the step:
// (v·m + idle slots) pipeline slots of the stage's mean chunk (its forward and backward replayed
// on the stage's streams, each op after those it depends on), the schedule's idle slots as
// its textbook form or, below the microbatches that form needs, its replayed orders
// (workload::idle_slots); then the data-parallel traffic that cannot overlap: the distributed
// optimizer's gathers that hold up the first forwards, the reductions that outlast the last
// backward and the gather after the optimizer; and the optimizer. Collectives are charged as
// CollectiveCost does (servers of `gpus_per_node` GPUs).
double estimate_step_seconds(const clustersim::RunConfig& config, int32_t gpus_per_node);

}  // namespace cs::plan
