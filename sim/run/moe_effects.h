// What each mixture-of-experts kernel effect adds to a step's compute, per GPU: the report's
// MoE effect lines.
#pragma once

#include "proto/config.pb.h"
#include "sim/compute/kernel_cost.h"

namespace cs::run {

// Seconds per GPU per step, the mean over pipeline stages as the kernel-group breakdown takes it,
// counted over the forward, backward, weight-gradient and recompute ops of every MoE layer
// (multi-token prediction blocks included), every microbatch. An expert op's time is the mean
// over its EP ranks, as the breakdown counts it.
struct MoeKernelEffects {
  // effects.moe_grouped_gemm: the grouped GEMM kernels against an ideal grouped GEMM of the same
  // FLOPs and bytes (compute::ideal_grouped_gemm_time), >= 0 (0 when off).
  double grouped_gemm_s = 0;
  // effects.moe_token_permute_rate: the token permutations at the profile's measured rate against
  // the same bytes streamed (KernelCostModel::token_permute_extra_seconds), >= 0.
  double token_permute_s = 0;
};

MoeKernelEffects moe_kernel_effects(const clustersim::RunConfig& config,
                                    const compute::KernelCostModel& cost);

}  // namespace cs::run
