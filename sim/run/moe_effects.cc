#include "sim/run/moe_effects.h"

#include "sim/compute/grouped_gemm.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/model_math.h"
#include "sim/workload/moe.h"

namespace cs::run {
namespace {

using workload::LayerOp;

// Mean over EP ranks of an expert op's time as the grouped GEMM kernel runs it, less the same
// as an ideal grouped GEMM (>= 0; activations run alike both ways and add nothing).
double grouped_delta(const LayerOp& op, const compute::KernelCostModel& cost) {
  using compute::GroupedGemmModel;
  if (op.rank_parts.empty() || op.grouped != GroupedGemmModel::kKernel) return 0;
  double delta = 0;
  for (const auto& parts : op.rank_parts)
    delta += (compute::expert_part_time(cost, parts, op.precision, GroupedGemmModel::kKernel) -
              compute::expert_part_time(cost, parts, op.precision, GroupedGemmModel::kIdeal))
                 .as_seconds();
  return delta / static_cast<double>(op.rank_parts.size());
}

// An op's extra time at the token permutation rate: an expert op's is the mean over its EP ranks,
// each rank's parts one kernel.
double permute_delta(const LayerOp& op, const compute::KernelCostModel& cost) {
  if (op.is_comm) return 0;
  if (op.rank_parts.empty()) return cost.token_permute_extra_seconds(op.kernel, op.precision);
  double delta = 0;
  for (const auto& parts : op.rank_parts)
    delta += cost.token_permute_extra_seconds(compute::merged_parts(parts), op.precision);
  return delta / static_cast<double>(op.rank_parts.size());
}

// The ops one microbatch runs through MoE layer `load`'s layer.
std::vector<LayerOp> moe_layer_ops(const clustersim::RunConfig& config,
                                   const workload::ExpertLoad& load) {
  using workload::Phase;
  std::vector<LayerOp> ops;
  for (const Phase phase : {Phase::kForward, Phase::kBackward, Phase::kWeightGrad}) {
    auto more = workload::layer_ops(config, phase, &load);
    ops.insert(ops.end(), more.begin(), more.end());
  }
  auto again = workload::layer_recompute_ops(config, &load);
  ops.insert(ops.end(), again.begin(), again.end());
  return ops;
}

}  // namespace

MoeKernelEffects moe_kernel_effects(const clustersim::RunConfig& config,
                                    const compute::KernelCostModel& cost) {
  MoeKernelEffects e;
  if (!config.model().has_moe()) return e;
  const workload::RoutingTable routing(config);
  // Every microbatch passes every layer once, on whichever stage holds it (DualPipe holds each
  // layer twice, each copy for half the microbatches): per GPU, layer passes x m / pp.
  const int32_t layers = config.model().num_layers() + config.model().mtp_layers();
  for (int32_t l = 0; l < layers; ++l) {
    if (!workload::is_moe_layer(config.model(), l)) continue;
    for (const LayerOp& op : moe_layer_ops(config, routing.load(l))) {
      e.grouped_gemm_s += grouped_delta(op, cost);
      e.token_permute_s += permute_delta(op, cost);
    }
  }
  const double per_gpu =
      workload::num_microbatches(config.parallel()) / static_cast<double>(config.parallel().pp());
  e.grouped_gemm_s *= per_gpu;
  e.token_permute_s *= per_gpu;
  return e;
}

}  // namespace cs::run
