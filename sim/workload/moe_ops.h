// The kernels and collectives of a mixture-of-experts block on one GPU, as Megatron-Core's
// MoELayer runs it with the all-to-all token dispatcher.
#pragma once

#include <vector>

#include "proto/config.pb.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/moe.h"
#include "sim/workload/pipeline_schedule.h"

namespace cs::workload {

// The block that replaces the MLP between ln2 and the residual add. Each GPU routes its
// T_in tokens (T / tp under sequence parallelism): forward
// - router: gate GEMM (T_in x E, bf16), score function + top-k;
// - permute: the token copies sorted by expert (T_in x top_k x kept share rows of h);
// - dispatch: all-to-all-v over EP, member d receiving the copies for its experts;
// - with ETP = TP > 1, an all-gather over TP of what arrived (expert weights are split like the
//   dense MLP's), and a reduce-scatter after the experts;
// - expert GEMMs: fc1 (h -> 2·ffn_e / etp with SwiGLU), activation, fc2, one GEMM per local
//   expert with the tokens it got, each EP rank's as one grouped kernel (rank_parts);
// - combine: the reverse all-to-all-v; unpermute: the weighted sum of a token's copies;
// - shared experts: a dense TP MLP of shared_expert_ffn_hidden_size over every token.
// Backward B mirrors it (dgrad GEMMs, the all-to-alls the other way); W has the wgrad GEMMs.
std::vector<LayerOp> moe_block_ops(const clustersim::RunConfig& config, Phase phase,
                                   const ExpertLoad& load);
// MOE_ACT recomputation (parallel.recompute_modules): the experts' activation forward again,
// before the block's backward, each EP rank its own experts' part.
std::vector<LayerOp> moe_activation_recompute_ops(const clustersim::RunConfig& config,
                                                  const ExpertLoad& load);

}  // namespace cs::workload
