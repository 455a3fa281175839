#include "sim/lower/stage_rules.h"

#include "sim/workload/layer_ops.h"
#include "sim/workload/model_math.h"
#include "sim/workload/stack.h"

namespace cs::lower {

GradRule grad_rule_of(const clustersim::RunConfig& config) {
  const auto& r = workload::stack_of(config).reduce();
  const bool below_zero3 = config.parallel().zero_stage() < 3;
  return {
      .bucket_params =
          r.has_bucket_params() ? r.bucket_params() : config.parallel().dp_bucket_params(),
      .all_reduce = r.collective() == clustersim::GradReduce::ALL_REDUCE_BELOW_ZERO3 && below_zero3,
      .on_compute_stream = r.overlap() == clustersim::GradReduce::OVERLAP_AT_ZERO3 && below_zero3};
}

StageRules::StageRules(const clustersim::RunConfig& config, const compute::KernelCostModel& cost)
    : config(config) {
  const auto& par = config.parallel();
  dp = par.dp();
  zero = par.zero_stage();
  vocab_params = workload::padded_vocab(config.model(), par.tp()) *
                 int64_t{config.model().hidden_size()} / par.tp();
  gather_weights = zero == 3 && dp > 1;
  sharded = gather_weights && workload::custom_sharding(workload::stack_of(config));
  const int64_t per_layer = workload::count_params(config.model()).per_layer_on_tp_rank(par.tp());
  layer_weight_bytes = 2 * per_layer;  // bf16
  using clustersim::OffloadConfig;
  offload_optimizer = config.offload().optimizer() != OffloadConfig::NONE;
  offload_params = config.offload().parameters() != OffloadConfig::NONE && zero == 3;
  host = cost::host_figures(cost.profile(), config.offload());
  shard_div = zero >= 1 ? dp : 1;
  every_k = par.checkpoint_every_k_layers();
  segmented = every_k > 0 && par.recompute() != clustersim::ParallelConfig::FULL;
  expert_groups = par.ep() > 1;
  grad_bytes = static_cast<Bytes>(workload::main_grad_bytes(config));
  grad_rule = grad_rule_of(config);
  overlap_param_gather = (zero == 1 || zero == 2) && dp > 1 && par.overlap_param_gather() &&
                         workload::stack_of(config).param_sync().overlap_allowed();
}

int64_t StageRules::dense_params(int32_t layer) const {
  return expert_groups ? workload::layer_dense_params(config, layer)
                       : workload::layer_dense_params(config, layer) +
                             workload::layer_expert_params(config, layer);
}

int64_t StageRules::head_params() const {
  return vocab_params + config.model().hidden_size();
}

}  // namespace cs::lower
