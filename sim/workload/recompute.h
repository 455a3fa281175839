// The activation recompute modes as data: one entry per ParallelConfig.Recompute value, which the
// planner's search, its layout labels and the memory report's comparison all iterate.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "proto/config.pb.h"

namespace cs::workload {

struct RecomputeInfo {
  clustersim::ParallelConfig::Recompute mode{};
  std::string_view name;   // a row of the memory report's comparison ("op selective")
  std::string_view label;  // in a layout's one-line label ("op-sel. recompute"; "" for NONE)
};

// Every mode, from the one that keeps the most activations (NONE) to the one that keeps the
// least (FULL); a test checks that each ParallelConfig.Recompute value has its entry.
std::span<const RecomputeInfo> recompute_modes();

// The entry of `mode`; throws std::invalid_argument for a value with none.
const RecomputeInfo& recompute_info(clustersim::ParallelConfig::Recompute mode);

// What a layout recomputes, for its one-line label: the mode's label, then the checkpoint
// interval when there is one ("sel. recompute, checkpoint every 4 layers"); "" for neither.
std::string recompute_label(const clustersim::ParallelConfig& p);

}  // namespace cs::workload
