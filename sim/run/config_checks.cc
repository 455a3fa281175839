#include "sim/run/config_checks.h"

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <utility>

#include "sim/coll/nccl_model.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/compute/precision_formats.h"
#include "sim/config/config_error.h"
#include "sim/config/field_checks.h"
#include "sim/config/run_config.h"
#include "sim/cost/goodput.h"
#include "sim/cost/host.h"
#include "sim/net/topology_builder.h"
#include "sim/workload/stack.h"
#include "sim/workload/validate.h"

namespace cs::run {

namespace {

// Run's own fields: checkpoint interval, gradient_accumulation_steps, dropout, nccl.channels and
// the simulation's limits.
void check_run_fields(const clustersim::RunConfig& config, const std::string& source) {
  const auto& par = config.parallel();
  if (par.checkpoint_every_k_layers() < 0)
    throw ConfigError(source + ": parallel.checkpoint_every_k_layers must be >= 0, got " +
                      std::to_string(par.checkpoint_every_k_layers()));
  if (par.gradient_accumulation_steps() < 0)
    throw ConfigError(source + ": parallel.gradient_accumulation_steps must be >= 0");
  // Probabilities of dropping an element: 1 would drop everything. NaN fails too, rather than
  // acting as 0.
  for (const auto& [v, field] : {std::pair{config.model().hidden_dropout(), "model.hidden_dropout"},
                                 {config.model().attention_dropout(), "model.attention_dropout"}})
    if (!(v >= 0 && v < 1))
      config_fail(source, std::string(field) + " must be in [0, 1) (is " + number_text(v) + ")");
  require_int_range(
      config.nccl().channels(), 0, coll::kMaxChannels, source, "nccl.channels",
      "0: one ring per NIC; NCCL opens at most " + std::to_string(coll::kMaxChannels));
  const auto& sim = config.simulation();
  if (sim.has_memory_limit_gb())
    require_range(sim.memory_limit_gb(), 0, 1e9, source, "simulation.memory_limit_gb",
                  "GiB, 0 for this machine's available memory");
  require_int_range(sim.extrapolation_min_microbatches(), 0, 1 << 16, source,
                    "simulation.extrapolation_min_microbatches", "microbatches per replica");
}

// Parameters offloaded need them sharded (ZeRO-3): each rank fetches only its shard back.
void check_offload_placement(const clustersim::RunConfig& config, const std::string& source) {
  const auto& par = config.parallel();
  if (config.offload().parameters() != clustersim::OffloadConfig::NONE && par.zero_stage() != 3)
    throw ConfigError(source + ": offload.parameters needs parallel.zero_stage 3, got " +
                      std::to_string(par.zero_stage()));
}

// The list's entries: each calls its layer's check on the state.
void preset_names_check(CheckState& s) {
  canonicalize_preset_names(s.config);
}
void run_fields_check(CheckState& s) {
  check_run_fields(s.config, s.source);
}
void cost_check(CheckState& s) {
  cost::validate_cost(s.config.cost(), s.source);
}
void offload_figures_check(CheckState& s) {
  cost::validate_offload(s.config.offload(), s.source);
}
void offload_placement_check(CheckState& s) {
  check_offload_placement(s.config, s.source);
}
void gradient_accumulation_check(CheckState& s) {
  apply_gradient_accumulation(s.config, s.source);
}
void reliability_check(CheckState& s) {
  cost::validate_reliability(s.config.reliability(), s.source);
}
void cluster_check(CheckState& s) {
  s.checked.cluster.emplace(s.config, s.source);
}
// cluster.gpu, when set, names a profile: the loader knows the name, not the field or the file
// that gave it (as for cluster.topology). A run's cluster check loads it too; this one names it
// for the planner and the memory report, which skip that check.
void gpu_check(CheckState& s) {
  const std::string& gpu = s.config.cluster().gpu();
  if (gpu.empty()) return;
  try {
    compute::load_gpu_profile(gpu);
  } catch (const ConfigError& e) {
    config_fail(s.source, std::string("cluster.gpu: ") + e.what());
  }
}
void stack_check(CheckState& s) {
  workload::resolve_stack(s.config, s.source);
}

// The planner sizes the cluster itself: it checks the layout against no GPU count.
void layout_check(CheckState& s) {
  const int64_t capacity = s.checked.cluster ? s.checked.cluster->capacity_gpus() : 0;
  workload::validate_run_config(s.config, capacity, s.source);
}

// On the GPU the cluster check resolved; the planner and the memory report, which skip that
// check, on the one the config names.
void precision_check(CheckState& s) {
  s.checked.gpu = compute::load_gpu_profile(s.checked.cluster ? s.checked.cluster->gpu_type()
                                                              : configured_gpu(s.config, s.source));
  compute::require_precision_supported(*s.checked.gpu, s.config.precision(), s.source);
}

// Cheap field ranges first, then what resolves files (topology, stack), then the layout, which
// needs the completed batch, stack and cluster; reliability comes before any long simulation.
constexpr std::array kChecks{
    ConfigCheck{"preset names", "config", false, preset_names_check},
    ConfigCheck{"run fields", "run", true, run_fields_check},
    ConfigCheck{"cost", "cost", true, cost_check},
    ConfigCheck{"offload figures", "cost", true, offload_figures_check},
    ConfigCheck{"offload placement", "run", true, offload_placement_check},
    ConfigCheck{"gradient accumulation", "run", true, gradient_accumulation_check},
    ConfigCheck{"reliability", "cost", false, reliability_check},
    ConfigCheck{"gpu", "compute", true, gpu_check},
    ConfigCheck{"cluster", "world", false, cluster_check},
    ConfigCheck{"stack", "workload", true, stack_check},
    ConfigCheck{"layout", "workload", true, layout_check},
    ConfigCheck{"precision", "compute", true, precision_check},
};

}  // namespace

std::string configured_gpu(const clustersim::RunConfig& config, const std::string& source) {
  const auto& cluster = config.cluster();
  if (!cluster.gpu().empty() || cluster.topology().empty())
    return compute::gpu_or_default(cluster.gpu());
  try {
    return net::resolve_topology(cluster.topology()).gpu();
  } catch (const ConfigError& e) {
    config_fail(source, std::string("cluster.topology: ") + e.what());
  }
}

std::span<const ConfigCheck> config_checks() {
  return kChecks;
}

CheckedConfig validate_config(clustersim::RunConfig& config, const std::string& source,
                              CheckContext context, std::span<const ConfigCheck> checks) {
  CheckState state{config, source, context, {}};
  for (const ConfigCheck& c : checks)
    if (context == CheckContext::kRun || c.in_plan) c.check(state);
  return std::move(state.checked);
}

void apply_gradient_accumulation(clustersim::RunConfig& config, const std::string& source) {
  auto& par = *config.mutable_parallel();
  const int64_t k = par.gradient_accumulation_steps();
  if (k <= 0) return;
  // validate_run_config bounds microbatches per step at 1 << 16; checking K against it here, in
  // 64 bits, keeps K x dp x microbatch_size from wrapping into a negative global batch that would
  // be blamed for the error.
  require_int_range(k, 0, 1 << 16, source, "parallel.gradient_accumulation_steps",
                    "microbatches per step");
  const int64_t global = k * std::max(par.dp(), 1) * std::max(par.microbatch_size(), 1);
  if (global > std::numeric_limits<int32_t>::max())
    config_fail(source, "parallel.gradient_accumulation_steps = " + std::to_string(k) +
                            " x parallel.dp x parallel.microbatch_size = " +
                            std::to_string(global) + " sequences: above the largest batch (" +
                            std::to_string(std::numeric_limits<int32_t>::max()) + ")");
  par.set_global_batch_size(static_cast<int32_t>(global));
}

void validate_plan_fields(const clustersim::RunConfig& config, const std::string& source) {
  check_run_fields(config, source);
  cost::validate_cost(config.cost(), source);
  cost::validate_offload(config.offload(), source);
  check_offload_placement(config, source);
}

}  // namespace cs::run
