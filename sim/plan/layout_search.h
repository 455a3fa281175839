// The planner's search space: every parallel layout of a model on N GPUs that validates, and
// what the refused ones failed on.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "proto/config.pb.h"

namespace cs::plan {

struct LayoutSearch {
  std::vector<clustersim::RunConfig> layouts;  // the valid ones
  // Variants refused by validation, counted by what the error names first (a field such as
  // parallel.global_batch_size), so that an empty search can say why.
  std::map<std::string, int64_t> invalid;
  // The first refused variant's whole error under each of those names ("model.vocab_size = -1
  // must be positive"): what the count alone does not say.
  std::map<std::string, std::string> invalid_error;
};

// Every valid layout of `base`'s model on `gpus` GPUs (tp·cp·pp·dp = gpus): tp dividing
// gpus_per_node, cp in {1, 2, 4}, pp dividing the layers, interleaving with 2 or 4 virtual
// stages, schedules 1F1B / interleaved / ZB-H1 (GPipe is left out: the same bubble as 1F1B and
// m instead of p microbatches of activations), ZeRO 1 or 3, microbatch size 1 or 2, recompute
// none / selective / full, sequence parallelism whenever tp > 1. For a mixture of experts, also
// every expert-parallel size ep dividing model.moe.num_experts and tp·cp·dp / etp, with expert
// TP etp = tp or 1. What `base` itself uses is searched too: its schedule and virtual stages,
// ZeRO stage (its sharded_grad_reduce at ZeRO 2 and 3), microbatch size, recompute with its
// checkpoint_every_k_layers, and with its tp and cp its pp when its layers_per_stage splits the
// layers unevenly (that split is kept on layouts of its pp and virtual stages). Its
// recompute_modules, activation_fp8_input_store, batch, precision, offload and cluster are
// every layout's. The base's own layout, dp scaled to `gpus`, is always among them when it
// validates. `rank_order`, when given, is every layout's; otherwise layouts with ep > 1 take
// TP_CP_DP_PP and the others keep the base config's. With `stacks`, every layout is tried under
// each software stack listed (the base's stack_variant only under the base's own stack; the
// others their default profile), and what a stack cannot run is refused under "software_stack";
// empty: the base's own stack.
LayoutSearch search_layouts(
    const clustersim::RunConfig& base, int64_t gpus, int32_t gpus_per_node,
    std::optional<clustersim::ParallelConfig::RankOrder> rank_order = std::nullopt,
    const std::vector<clustersim::SoftwareStack>& stacks = {});

// search_layouts(...).layouts.
std::vector<clustersim::RunConfig> enumerate_layouts(
    const clustersim::RunConfig& base, int64_t gpus, int32_t gpus_per_node,
    std::optional<clustersim::ParallelConfig::RankOrder> rank_order = std::nullopt);

}  // namespace cs::plan
