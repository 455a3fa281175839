// Where the two halves of an overlapped forward-backward pair hand the compute stream over.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "sim/workload/program_builder.h"

namespace cs::workload {

// True for the ops that an overlapped pair takes off the compute stream: expert all-to-alls.
bool is_expert_all_to_all(const Op& op);

// The turns of a pair whose halves take the compute stream in turn, first `halves[0]`: per half,
// the op count at the end of each of its turns (the last is its op count), as many for both.
// A half's turn ends at each of its expert all-to-alls, so that the other half computes while it
// is in flight. A half with fewer all-to-alls has its longest turns (by compute time) cut in two
// until the counts match, so that its compute still fills every gap of the other (a dense layer's
// forward under the dispatches and combines of an expert layer's backward).
std::array<std::vector<std::size_t>, 2> pair_turns(const std::array<const PhaseOps*, 2>& halves);

}  // namespace cs::workload
