// Every layer's config checks as one ordered list, run in one place by a run and by the planner.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "proto/config.pb.h"
#include "sim/compute/gpu_profile.h"
#include "sim/world/world.h"

namespace cs::run {

// Who checks a config: a run resolves its cluster and checks what a step on that cluster needs;
// the planner checks layouts alone (it chooses the GPU count itself and never runs reliability,
// topology or precision checks).
enum class CheckContext { kRun, kPlan };

// What the checks resolve on the way, for the caller to build on (runs only).
struct CheckedConfig {
  std::optional<world::ResolvedCluster> cluster;  // set by the world check
  std::optional<compute::GpuProfile> gpu;         // the cluster's GPU, set by the precision check
};

// What every check sees. Some checks complete the config as they go (preset names, the batch of
// gradient_accumulation_steps, the resolved stack), so later checks see it completed.
struct CheckState {
  clustersim::RunConfig& config;
  const std::string& source;
  CheckContext context;
  CheckedConfig checked;
};

// One check: its name, the layer whose rules it applies, whether the planner runs it too, and the
// check itself, which throws ConfigError naming state.source and the field.
struct ConfigCheck {
  std::string_view name;
  std::string_view layer;
  bool in_plan;
  void (*check)(CheckState& state);
};

// Every check, in the order they run: the same order for every caller.
std::span<const ConfigCheck> config_checks();

// Runs the checks of `checks` that apply in `context`, in order, on `config` (completing it as
// they go); the first that fails throws. Returns what they resolved.
CheckedConfig validate_config(clustersim::RunConfig& config, const std::string& source,
                              CheckContext context,
                              std::span<const ConfigCheck> checks = config_checks());

// The GPU a config runs on without resolving its cluster: cluster.gpu, else the topology's GPU,
// else the default. Throws ConfigError naming `source` and cluster.topology for a topology that
// names neither a preset nor a readable file.
std::string configured_gpu(const clustersim::RunConfig& config, const std::string& source);

// When parallel.gradient_accumulation_steps = K > 0, sets global_batch_size to
// K x dp x microbatch_size (K wins over a preset's batch); a no-op otherwise. validate_config
// calls it. Throws ConfigError naming `source` when K, or the batch it makes, is beyond range.
void apply_gradient_accumulation(clustersim::RunConfig& config, const std::string& source);

// The checks of the fields of issue 6, in the list's order: checkpoint interval non-negative,
// gradient_accumulation_steps non-negative, dropout probabilities, nccl.channels,
// simulation.memory_limit_gb, cost and offload figures in range, parameter offload only with
// ZeRO-3. Throws ConfigError naming `source` and the field.
void validate_plan_fields(const clustersim::RunConfig& config, const std::string& source);

}  // namespace cs::run
