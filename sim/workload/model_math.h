// Closed-form sizes of a dense decoder: parameter counts, layer splits and model / hardware FLOPs.
#pragma once

#include <cstdint>
#include <vector>

#include "proto/config.pb.h"
#include "sim/workload/pipeline_schedule.h"

namespace cs::workload {

// Key/value heads: num_kv_heads, or num_heads when it is 0 (multi-head attention).
int64_t kv_heads(const clustersim::ModelConfig& model);
// Size of one attention head: model.head_dim, or hidden_size / num_heads when that is 0. (MLA
// models size their heads by head_dims() instead.)
int64_t head_dim(const clustersim::ModelConfig& model);
// The per-head widths attention works on: queries and keys (qk) and values and outputs (v).
// Multi-head and grouped-query attention: head_dim() both. MLA (DeepSeek-V2/V3): qk =
// qk_nope_head_dim + qk_rope_head_dim, v = v_head_dim (DeepSeek-V3: 192 and 128).
struct HeadDims {
  int64_t qk = 0, v = 0;
};
HeadDims head_dims(const clustersim::ModelConfig& model);
// The vocabulary rounded up to a multiple of tp, as Megatron pads it so that the embedding and the
// output head split evenly over tensor-parallel ranks (Megatron also rounds to 128; we pad only
// as far as the split needs, so the padding never changes FLOP counts for divisible vocabularies).
int64_t padded_vocab(const clustersim::ModelConfig& model, int64_t tp);

// Parameters of the unsharded model (real vocabulary, no padding). The layers carry no biases
// (Llama / PaLM style; GPT-3's biases are < 0.1% of its parameters) and every norm has one
// scale vector of hidden_size (RMSNorm; a LayerNorm bias would add another h, also negligible).
struct ParamCounts {
  int64_t embedding = 0;  // vocab x h
  // Wq h x a*d, Wk and Wv h x kv*d each, Wo a*d x h (a heads of d = head_dim(); a*d = h unless
  // head_dim is set). MLA (DeepSeek-V2 paper, section 2.1): W_DQ h x q_lora and W_UQ q_lora x
  // a*(nope + rope) (or one h x a*(nope + rope) without q LoRA), W_DKV h x (kv_lora + rope),
  // W_UKV kv_lora x a*(nope + v), Wo a*v x h.
  int64_t attention_per_layer = 0;
  // The part of attention_per_layer every tensor-parallel rank holds whole: MLA's down
  // projections W_DQ and W_DKV, which Megatron-Core builds as duplicated TELinear layers
  // (multi_latent_attention.py, parallel_mode "duplicated"). 0 without MLA.
  int64_t tp_replicated_per_layer = 0;
  int64_t mlp_per_layer = 0;    // GELU 2 h x ffn, SwiGLU 3 h x ffn
  int64_t norms_per_layer = 0;  // two norms, h each; MLA adds its q_lora and kv_lora norms
  int64_t final_norm = 0;       // h
  int64_t output_head = 0;      // vocab x h, 0 when tied to the embedding
  int64_t vocab_matmul = 0;     // vocab x h of the logits GEMM, tied or not
  int64_t num_layers = 0;
  // Mixtures of experts: the last moe_layers layers have, instead of the dense MLP, a router
  // (h x E, replicated over TP as Megatron-Core's TopKRouter), shared experts (an MLP of
  // shared_expert_ffn_hidden_size) and E routed experts of expert_params each, top_k of which
  // a token passes through.
  int64_t moe_layers = 0;
  int64_t router_per_layer = 0, shared_per_layer = 0, expert_params = 0;
  int64_t num_experts = 0, top_k = 0;
  // Multi-token prediction (DeepSeek-V3 section 2.2): each module has norms of the hidden state
  // and of the next token's embedding (shared embedding), the projection M of 2h -> h, one
  // transformer block like the model's last layer, and a final norm before the shared head.
  int64_t mtp_modules = 0;
  int64_t mtp_projection = 0;  // 2h x h
  int64_t mtp_norms = 0;       // 3h
  bool mtp_block_is_moe = false;

  int64_t dense_layers() const { return num_layers - moe_layers; }
  int64_t per_layer() const { return attention_per_layer + mlp_per_layer + norms_per_layer; }
  // One dense layer's parameters on one of `tp` tensor-parallel ranks: the split matrices / tp,
  // plus the replicated ones and the norms.
  int64_t per_layer_on_tp_rank(int64_t tp) const {
    return (attention_per_layer + mlp_per_layer - tp_replicated_per_layer) / tp +
           tp_replicated_per_layer + norms_per_layer;
  }
  // The MLP-free part of a MoE layer on one TP rank: attention, norms, router, shared experts.
  int64_t moe_layer_dense_on_tp_rank(int64_t tp) const {
    return (attention_per_layer + shared_per_layer - tp_replicated_per_layer) / tp +
           tp_replicated_per_layer + norms_per_layer + router_per_layer;
  }
  int64_t moe_layer_total() const {
    return attention_per_layer + norms_per_layer + router_per_layer + shared_per_layer +
           num_experts * expert_params;
  }
  int64_t block_matmul(bool moe) const {
    return attention_per_layer +
           (moe ? router_per_layer + shared_per_layer + top_k * expert_params : mlp_per_layer);
  }
  // Every multi-token prediction module's parameters (the embedding and head are shared). Not in
  // total(), which is the main model as papers count it (DeepSeek-V3: 671B + 14B of MTP).
  int64_t mtp_params() const {
    return mtp_modules *
           (mtp_projection + mtp_norms + (mtp_block_is_moe ? moe_layer_total() : per_layer()));
  }
  int64_t total() const {
    return embedding + dense_layers() * per_layer() + moe_layers * moe_layer_total() + final_norm +
           output_head;
  }
  // Weights that multiply every token in a GEMM: the layers' attention and MLP matrices (of a MoE
  // layer: router, shared and top_k routed experts) and the output head. The head counts even
  // when tied (its logits GEMM still runs); the input embedding does not (a lookup, no FLOPs);
  // norms do not (elementwise). This is the N of Megatron's 72·B·s·L·h²·(1 + s/6h + V/12hL)
  // (Narayanan et al. 2021), which it reproduces exactly for dense models.
  // Multi-token prediction modules add their projection, block and a second pass of the head.
  int64_t dense_matmul() const {
    return num_layers * attention_per_layer + dense_layers() * mlp_per_layer +
           moe_layers * (router_per_layer + shared_per_layer + top_k * expert_params) +
           vocab_matmul +
           mtp_modules * (mtp_projection + block_matmul(mtp_block_is_moe) + vocab_matmul);
  }
};

ParamCounts count_params(const clustersim::ModelConfig& model);

// Attention score FLOPs per token, forward + backward: 12·L·h·s (QKᵀ and PV, 2·s·h each forward,
// times 3 for forward + backward), halved for a causal model as Megatron-LM's
// num_floating_point_operations counts it ("only half of the attention matrix is non-zero":
// seq_length / hidden_size / 2), the scores the kernels compute. PaLM's 12·L·h·s counts the whole
// square, which at long sequences gives more FLOPs than the GPUs' peak allows (MFU above 100%).
// num_heads·head_dim stands for h, so GQA does not change it. With head_dims() qk and v:
// 6·L·s·heads·(qk + v), QKᵀ over the qk width and PV over the v width (MLA, DeepSeek-V3:
// 6·61·s·128·320), halved when causal.
double attention_flops_per_token(const clustersim::ModelConfig& model);

// Model FLOPs per token: 6·N_dense_matmul + 12·L·h·s (halved when causal). It differs from
// DESIGN.md's 6·N_params only by what N_params would add without multiplying anything: the input
// embedding (unless tied) and the norms. Used for MFU.
double model_flops_per_token(const clustersim::ModelConfig& model);

// Tokens per optimizer step: global_batch_size x seq_length.
double tokens_per_step(const clustersim::RunConfig& config);
double model_flops_per_step(const clustersim::RunConfig& config);

// Model FLOPs plus what activation recomputation adds (for HFU): SELECTIVE re-runs the attention
// core forward (4·L·h·s per token); FULL re-runs each layer's whole forward (2·N_layers + 4·L·h·s
// per token) but not the output head, which Megatron never checkpoints. FlashAttention's own
// backward recomputation of QKᵀ is a kernel detail and is not counted here. MLA_UP_PROJ
// (recompute_modules) re-runs the q and kv up projections; the other modules' kernels are
// elementwise and add no matrix FLOPs. OP_SELECTIVE re-runs every other weight matrix of a layer
// (the 2nd, 4th, ... of forward_matrices).
double hardware_flops_per_step(const clustersim::RunConfig& config);

// A dense layer's weight matrices in the order its forward multiplies by them, input and output
// widths (unsharded), fused as the run's stack fuses them (stack_of: fused_qkv, fused_gate_up;
// a stack other than Megatron-TE must be resolved first): what op-level selective checkpointing
// counts its matmuls by.
struct MatrixShape {
  double in = 0, out = 0;
};
std::vector<MatrixShape> forward_matrices(const clustersim::RunConfig& config);

// Transformer layers in each model piece, in model order (model_pieces() entries: pp x
// virtual_stages, or pp for DualPipe): the explicit layers_per_stage when given, else an even
// split. Which stage and chunk run piece j is the schedule's (model_piece() in
// pipeline_schedule.h). Assumes a validated config.
std::vector<int32_t> layers_per_piece(const clustersim::RunConfig& config);
// Transformer layers held by pipeline stage `stage` over all its chunks.
int32_t layers_on_stage(const clustersim::RunConfig& config, int32_t stage);

// Parameters held by one GPU of pipeline stage `stage` before ZeRO sharding: its layers' matrices
// / tp plus their (replicated) norms and MLA down projections (per_layer_on_tp_rank()); the first
// stage adds the vocab-parallel embedding (padded vocab x h / tp); the last stage the final norm
// and the output head (padded vocab x h / tp). A tied head with pp > 1 still costs the last stage a
// copy, as Megatron keeps one there and all-reduces its gradient with the first stage's.
int64_t stage_params(const clustersim::RunConfig& config, int32_t stage);
// The part of stage_params() in the stage's model chunk `chunk` (its piece's layers, the embedding
// with piece 0, the final norm and head with the last piece); the multi-token prediction
// embedding copy is the stage's alone.
int64_t chunk_params(const clustersim::RunConfig& config, int32_t stage, int32_t chunk);
// The part of stage_params held as routed experts: E / ep experts of each MoE layer, split
// over the expert TP size; their gradients and optimizer states shard over EDP, not DP.
int64_t stage_expert_params(const clustersim::RunConfig& config, int32_t stage);
// Layer `layer`'s parameters on one GPU, without the routed experts.
int64_t layer_dense_params(const clustersim::RunConfig& config, int32_t layer);
// Layer `layer`'s routed-expert parameters on one GPU (0 for a dense layer).
int64_t layer_expert_params(const clustersim::RunConfig& config, int32_t layer);
// Model order indices of the transformer layers on pipeline stage `stage`, over all its chunks;
// the stage of the last piece also has the multi-token prediction blocks, numbered num_layers on.
std::vector<int32_t> stage_layers(const clustersim::RunConfig& config, int32_t stage);

// Microbatches per optimizer step on one data-parallel replica:
// global_batch_size / (dp x microbatch_size).
int32_t num_microbatches(const clustersim::ParallelConfig& parallel);

// Whether parallel.recompute_modules names `module` (output-discarding recomputation).
bool recomputes(const clustersim::ParallelConfig& parallel,
                clustersim::ParallelConfig::RecomputeModule module);

// The pipeline schedule a config names.
PipelineSchedule pipeline_schedule_of(const clustersim::ParallelConfig& parallel);

}  // namespace cs::workload
