// The run-wide figures and switches that decide how a stage is lowered: ZeRO stage and its
// sharding, offload, the gradient bucket rule, recompute segments, and the parameter counts that
// fill buckets.
#pragma once

#include <cstdint>

#include "proto/config.pb.h"
#include "sim/compute/kernel_cost.h"
#include "sim/core/units.h"
#include "sim/cost/host.h"

namespace cs::lower {

// How the run's stack reduces gradients in buckets (GradBuckets; a stack's own ZeRO-3 rules are
// sharded_pass.h's).
struct GradRule {
  int64_t bucket_params = 0;       // parameters per bucket
  bool all_reduce = false;         // all-reduced although ZeRO shards them (DeepSpeed stages 1-2)
  bool on_compute_stream = false;  // not overlapped: each bucket blocks the compute stream
};
GradRule grad_rule_of(const clustersim::RunConfig& config);

struct StageRules {
  StageRules(const clustersim::RunConfig& config, const compute::KernelCostModel& cost);

  const clustersim::RunConfig& config;
  int32_t dp = 1, zero = 0;
  // The input embedding on one tensor-parallel rank (the output layer holds as many).
  int64_t vocab_params = 0;
  // ZeRO-3 / FSDP under this lowering: each layer's weights are all-gathered before it runs.
  bool gather_weights = false;
  // A stack with its own ZeRO-3 units, prefetch and reductions builds its passes unit by unit
  // (sharded_pass.h).
  bool sharded = false;
  // One dense layer's bf16 weights on one tensor-parallel rank (what ZeRO-3 gathers; MoE layers
  // are refused there).
  Bytes layer_weight_bytes = 0;
  bool offload_optimizer = false;  // ZeRO-Offload: CPU Adam on the host's copy
  bool offload_params = false;     // ZeRO-Infinity: weight shards live on the host (ZeRO-3)
  cost::HostFigures host;
  // ZeRO shards optimizer states (and, at stage 3, weights) over the DP group.
  int64_t shard_div = 1;
  // checkpoint_every_k_layers: before the backward of a run of k layers, the whole run's forward
  // is recomputed from its kept input (the attention core included, so it replaces SELECTIVE's).
  int32_t every_k = 0;
  bool segmented = false;
  // Routed experts' gradients are reduced over their expert-data-parallel group (EP > 1).
  bool expert_groups = false;
  // Gradients are reduced in the type of their buffers: Megatron's fp32 main_grad
  // (--accumulate-allreduce-grads-in-fp32, grad_reduce_in_fp32=True in NeMo's recipes) or bf16,
  // or the software stack's reduce dtype (workload::main_grad_bytes).
  Bytes grad_bytes = 0;
  GradRule grad_rule;
  // Distributed optimizer: updated bf16 parameters are all-gathered in buckets (param_gather.h),
  // each before the first forward op that uses them, as Megatron's overlap_param_gather does
  // under the next step's forward (unless the stack never overlaps it).
  bool overlap_param_gather = false;

  // The parameters of `layer` whose gradients fill the dense buckets: all of them, less the
  // routed experts' when those have buckets of their own (expert_groups).
  int64_t dense_params(int32_t layer) const;
  // The output layer and the final norm.
  int64_t head_params() const;
};

}  // namespace cs::lower
