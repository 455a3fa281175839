// The planner's search space: every parallel layout of a model on N GPUs that validates.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "proto/config.pb.h"

namespace cs::plan {

// Every valid layout of `base`'s model on `gpus` GPUs (tp·cp·pp·dp = gpus): tp dividing
// gpus_per_node, cp in {1, 2, 4}, pp dividing the layers, interleaving with 2 or 4 virtual
// stages, schedules 1F1B / interleaved / ZB-H1 (GPipe is left out: the same bubble as 1F1B and
// m instead of p microbatches of activations), ZeRO 1 or 3, microbatch size 1 or 2, recompute
// none / selective / full, sequence parallelism whenever tp > 1. For a mixture of experts, also
// every expert-parallel size ep dividing model.moe.num_experts and tp·cp·dp / etp, with expert
// TP etp = tp or 1. The batch, precision, offload and cluster of `base` are kept;
// layers_per_stage is cleared (an even split). `rank_order`, when given, is every layout's;
// otherwise layouts with ep > 1 take TP_CP_DP_PP and the others keep the base config's.
std::vector<clustersim::RunConfig> enumerate_layouts(
    const clustersim::RunConfig& base, int64_t gpus, int32_t gpus_per_node,
    std::optional<clustersim::ParallelConfig::RankOrder> rank_order = std::nullopt);

}  // namespace cs::plan
