// The planner's closed-form step time, which pre-ranks layouts before any is simulated.
#pragma once

#include <cstdint>

#include "proto/config.pb.h"

namespace cs::plan {

// Seconds per step without simulation, from the work each stage's program is built from
// (lower::build_stage_work) for the first, middle and last stage, the slowest setting the step:
// its pipeline, the schedule's orders run with each of those stages' own chunks standing for the
// stages they represent (workload::replayed_span), each chunk's forward and backward replayed on
// the stage's streams, each op after those it depends on and each kernel slowed for its time
// beside communication (DualPipe: m + idle slots of its mean overlapped pair, whose turns the
// orders do not time, and its unpaired passes alone), each pass after the pass its stage ran
// before it (a forward after a backward waits for the backward's reductions, one after a forward
// does not); then the data-parallel traffic that cannot overlap: the distributed optimizer's
// gathers that hold up the first forwards, what the last pass's reductions leave, the reductions
// that outlast the last backward and the gather after the optimizer; and the optimizer.
// Collectives are charged as CollectiveCost does (servers of `gpus_per_node` GPUs), those of the
// passes with the other stages making theirs for the share of their passes' time they take.
double estimate_step_seconds(const clustersim::RunConfig& config, int32_t gpus_per_node);

}  // namespace cs::plan
