#include "sim/lower/optimizer_tail.h"

#include "sim/workload/layer_ops.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/model_math.h"

namespace cs::lower {

namespace {

using workload::Dim;
using workload::LayerOp;
using workload::OpClass;
using workload::Stream;

// The parameters of a stage and the share of them this GPU updates.
struct OptimizerShard {
  int64_t params = 0;
  int64_t expert_params = 0;  // routed experts with their own group (EP > 1), else 0
  int64_t edp = 1;            // the expert-data-parallel group's size
  int64_t shard = 0;          // what this GPU's optimizer updates
};

OptimizerShard optimizer_shard(const StageRules& rules, int32_t stage) {
  OptimizerShard s;
  s.params = workload::stage_params(rules.config, stage);
  // Routed experts shard over EDP (Megatron-Core's expert distributed optimizer).
  s.expert_params = rules.expert_groups ? workload::stage_expert_params(rules.config, stage) : 0;
  s.edp = workload::dim_sizes(rules.config.parallel())[static_cast<std::size_t>(Dim::kEdp)];
  s.shard = rules.zero >= 1 ? (s.params - s.expert_params) / rules.dp + s.expert_params / s.edp
                            : s.params;
  return s;
}

// ZeRO-Offload: CPU Adam on the host's copy, then the updated bf16 shard back over PCIe.
void host_optimizer(const StageRules& rules, OpMaker& make, const OptimizerShard& s,
                    workload::StageWork& work) {
  using clustersim::OffloadConfig;
  const double cpu_s =
      cost::cpu_adam_seconds(rules.host, static_cast<double>(s.shard),
                             rules.config.offload().optimizer() == OffloadConfig::NVME);
  work.optimizer.push_back(make.host_op(Stream::kCompute, cpu_s, "cpu_adam", 0));
  if (!rules.offload_params) {
    const Bytes back = 2 * s.shard;
    work.after_optimizer.push_back(
        make.host_op(Stream::kDp, static_cast<double>(back) / rules.host.pcie_bytes_per_s,
                     "offload_param_h2d", back));
  }
}

void gpu_optimizer(const StageRules& rules, const StageLayers& layers, OpMaker& make, int32_t stage,
                   const OptimizerShard& s, workload::StageWork& work) {
  const clustersim::RunConfig& config = rules.config;
  int64_t layer_weights = 0;  // FP8 runs cast this stage's layer weights once per step
  for (const int32_t l : workload::stage_layers(config, stage))
    if (!layers.in_bf16(l))
      layer_weights +=
          workload::layer_dense_params(config, l) + workload::layer_expert_params(config, l);
  // Gradient buffers are whole on each GPU unless ZeRO 2 or 3 reduce-scatters every microbatch
  // into a shard (reducing once per step accumulates them whole first).
  const int64_t grad_buffer = work.grad_sync_every_microbatch ? s.shard : s.params;
  for (const LayerOp& lop : workload::optimizer_ops(config, s.shard, layer_weights, grad_buffer))
    work.optimizer.push_back(make.kernel(lop, OpClass::kOptimizer));
  if ((rules.zero == 1 || rules.zero == 2) && rules.dp > 1) {
    const auto n = static_cast<double>(s.shard);
    for (const LayerOp& lop :
         workload::stack_kernel_ops(config, clustersim::StackKernel::PARAM_SYNC_PROLOGUE, n, n))
      work.optimizer.push_back(make.kernel(lop, OpClass::kOptimizer));
  }
}

// ZeRO 1 and 2 all-gather the updated weights (the dense ones over DP unless the next forward
// gathers them bucket by bucket, the routed experts' over EDP).
void updated_param_gathers(const StageRules& rules, OpMaker& make, const OptimizerShard& s,
                           workload::StageWork& work) {
  const bool zero12 = rules.zero == 1 || rules.zero == 2;
  if (zero12 && rules.dp > 1 && !rules.overlap_param_gather) {
    work.after_optimizer.push_back(make.collective(
        coll::Op::kAllGather, Dim::kDp, 2 * (s.params - s.expert_params), "zero_param_all_gather"));
  }
  if (zero12 && s.expert_params > 0 && s.edp > 1) {
    work.after_optimizer.push_back(make.collective(coll::Op::kAllGather, Dim::kEdp,
                                                   2 * s.expert_params, "edp_param_all_gather"));
  }
}

}  // namespace

void build_optimizer_tail(const StageRules& rules, const StageLayers& layers, OpMaker& make,
                          int32_t stage, workload::StageWork& work) {
  const OptimizerShard s = optimizer_shard(rules, stage);
  if (rules.offload_optimizer) {
    host_optimizer(rules, make, s, work);
  } else {
    gpu_optimizer(rules, layers, make, stage, s, work);
  }
  updated_param_gathers(rules, make, s, work);
}

}  // namespace cs::lower
