// The steady-state step of a run whose stages skip the synchronisation at the optimizer step
// (ParallelConfig.optimizer_post_validation): each starts its next step once its own is done.
#pragma once

#include <span>

#include "sim/core/units.h"
#include "sim/exec/executor.h"

namespace cs::run {

// A rank's span: from the end of its wait for its first input to its last op's end. Before it, a
// free-running stage is still busy with its previous step; after it, the wait for the next.
Time rank_span(const exec::RankStats& stats);

// The steady-state period: the longest span over the ranks. Shifting every rank's step by it
// keeps each step's order and dependencies, so no shorter period repeats the same step. It cuts
// the skew of a schedule whose stages start and end staggered alike (ZB-H2's parallelogram: no
// idle inside a stage's span) and nothing of 1F1B's, whose stage 0 runs from the first forward
// to the last backward with the whole bubble inside its span.
Time post_validated_step(std::span<const exec::RankStats> stats);

}  // namespace cs::run
