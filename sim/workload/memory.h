// Per-GPU memory of a training step: model states (ZeRO), activations as Megatron-Core /
// Transformer Engine keep them (after Korthikanti et al. 2022), and the transients beside them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "proto/config.pb.h"
#include "sim/core/units.h"
#include "sim/workload/model_math.h"
#include "sim/workload/pipeline_schedule.h"

namespace cs::workload {

// Model states of mixed-precision Adam (Rajbhandari et al. 2020, "ZeRO"): 2 bytes of bf16 weights,
// `grad_bytes` of gradients and 12 of fp32 master weights + Adam m + v per parameter. ZeRO-1
// shards the 12 over the `shards` data-parallel ranks, ZeRO-2 also the gradients, ZeRO-3 also the
// weights. The ZeRO paper counts fp16 gradients (2 bytes, the default here); Megatron's
// distributed optimizer keeps fp32 main_grad buffers by default (4 bytes: its docs,
// docs/api-guide/dist_optimizer.md, give 6 + 12/d bytes per parameter for bf16 parameters
// with fp32 gradients, the whole fp32 gradient buffer reduce-scattered in place and kept), see
// grad_bytes(). FP8 runs keep the same states (Transformer Engine casts
// weights to FP8 per GEMM).
struct ModelStateBytes {
  double weights = 0, gradients = 0, optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};
ModelStateBytes model_state_bytes(double params, int32_t zero_stage, int64_t shards,
                                  double grad_bytes = 2.0);

// Bytes per gradient element of the configuration's gradient buffers: 4 for GRAD_FP32 (Megatron's
// fp32 main_grad, accumulated across microbatches and reduced in fp32), 2 for GRAD_BF16.
double grad_bytes(const clustersim::ParallelConfig& parallel);
// Whether every microbatch's gradients are reduce-scattered into the shard (ZeRO-2/3 with
// sharded_grad_reduce = EVERY_MICROBATCH, data parallel over more than one rank).
bool reduces_grads_every_microbatch(const clustersim::ParallelConfig& parallel);
// Whether a model chunk's gradients are held unsharded only from its first backward to its
// reduce-scatter after its last (ZeRO-2/3 with ONCE_PER_STEP over more than one shard).
bool holds_chunk_grads_between_backwards(const clustersim::ParallelConfig& parallel);

// How training keeps its model states, for the side-by-side comparison of `clustersim memory`:
// kFp32: fp32 weights and gradients, Adam m and v, no master copy: 4 + 4 + 8 = 16 bytes/param.
// kBf16: bf16 weights and gradients, fp32 master + m + v: 2 + 2 + 12 = 16 bytes/param as well; the
//   saving is in activations and speed, not in model states.
// kFp8: Transformer Engine's FP8 recipe keeps the BF16 states (weights are cast to FP8 per GEMM,
//   and the small per-tensor scaling state and cast caches are neglected), so the same 16.
// So mixed precision saves nothing on model states (the optimizer's 12 bytes dominate); what it
// halves is the activations, so the total shrinks by well under 50%.
enum class StatePrecision : uint8_t { kFp32, kBf16, kFp8 };
struct ModelStateDetail {
  double weights = 0, gradients = 0, master = 0, adam_m = 0, adam_v = 0;
  double optimizer() const { return master + adam_m + adam_v; }
  double total() const { return weights + gradients + optimizer(); }
};
ModelStateDetail model_state_detail(double params, int32_t zero_stage, int64_t shards,
                                    StatePrecision precision);

// The GPUs ZeRO shards the routed experts' states over: their expert-data-parallel group
// (Megatron-Core's expert distributed optimizer) under expert parallelism, else DP x CP as the
// rest of the model.
int64_t expert_state_shards(const clustersim::ParallelConfig& p);

// stage_params() (parameters per GPU of a stage) lives in model_math.h.

// Activation bytes that one layer keeps for its backward, for one microbatch on one GPU, from the
// tensors Megatron-Core with Transformer Engine saves (16-bit tensors, 1-byte dropout masks), in
// units of T = b·s/cp tokens; sp = t under sequence parallelism, else 1:
//   norms:   each of the two fused norm + linear layers keeps its input and its output, 2h/sp +
//   2h/sp
//            (TE _LayerNormLinear: rmsnorm_bwd / layernorm_bwd read the saved input, the wgrad GEMM
//            the saved norm output, re-gathered under SP);
//   dropout: two 1-byte masks h/sp each, only when model.hidden_dropout > 0 (PyTorch's dropout
//            returns its input and keeps no mask for p = 0: aten/src/ATen/native/Dropout.cpp);
//   attention: Q and the projection input 2·a·d/t each (a heads of head_dim() d; a·d = h unless
//            head_dim is set), K and V 2·kv_width/t each (GQA shrinks them); MLA: Q and K
//            2·a·qk/t, V and the projection input 2·a·v/t, plus each up projection's latent input
//            and norm output, 4·(q_lora + kv_lora)/sp;
//            FLASH adds its fp32 log-sum-exp, 4·a/t per token (TE / flash-attn save softmax_lse);
//            UNFUSED (Megatron's FusedScaleMaskSoftmax + torch.bmm) keeps the bf16 softmax output,
//            2·(a/t)·s per token, and with model.attention_dropout > 0 its 1-byte mask and 2-byte
//            output as well: the paper's 5·(a/t)·s. The pre-softmax scores are not kept: the fused
//            softmax's backward needs only its output.
//   MLP:     GELU 4·ffn/t (activation input, down-projection input); SwiGLU 6·ffn/t (Megatron's
//            fused SwiGLUFunction keeps the gate|up output, 4·ffn/t, and fc2 keeps the product).
// With UNFUSED attention and both dropouts on, GPT-3-shaped layers (MHA, GELU, ffn = 4h) give
// Korthikanti et al. 2022 exactly: none s·b·h·(34 + 5·a·s/h); TP t: s·b·h·(10 + 24/t + 5as/(ht));
// TP + SP: s·b·h·(34/t + 5·a·s/(h·t)). SELECTIVE recompute drops the core-attention tensors
// (scores or log-sum-exp); FULL keeps only the layer input, 2·s·b·h/sp.
double layer_activation_bytes(const clustersim::RunConfig& config);
// Extra activations of the first stage's first chunk: the embedding's dropout mask, T·h/sp bytes,
// when model.hidden_dropout > 0 (Megatron's embedding dropout uses the hidden dropout); else 0 (the
// embedding's backward needs only the token ids).
double embedding_activation_bytes(const clustersim::RunConfig& config);
// Extra activations of the last stage's last chunk (Korthikanti section 4.3): final-norm input and
// output head input, 2·T·h/sp each, and the fp32 logits the cross-entropy keeps, 4·T·V/t
// (Megatron's vocab_parallel_cross_entropy casts the logits to fp32 and saves exp(logits) for its
// backward).
double head_activation_bytes(const clustersim::RunConfig& config);
// What one multi-token prediction module adds to them: its entry's norm inputs and 2h-wide
// projection input, a transformer block's activations and a second head's.
double mtp_activation_bytes(const clustersim::RunConfig& config);
// The transient working set of one layer's backward beyond what the layer keeps: the largest, over
// its four linear layers (MLA: its up, down and output projections), of the output gradient, the
// re-gathered input (under SP; TE's layernorm_linear backward all-gathers ln_out for the wgrad
// GEMM) and the full-sequence input gradient before its reduce-scatter / all-reduce. For SwiGLU
// that is fc1: 4·ffn/t + 2h + 2h per token under SP. Weight gradients add nothing: they accumulate
// into main_grad in the GEMM (gradient_accumulation_fusion).
double backward_working_set_bytes(const clustersim::RunConfig& config);
// The last stage's loss working set: the bf16 logits beside their fp32 copy (forward) and the bf16
// logits gradient beside the fp32 softmax it is computed in (backward), 2·T·V/t.
double head_working_set_bytes(const clustersim::RunConfig& config);

// Layers of a chunk of `layers` split into runs of k (checkpoint_every_k_layers): the inputs kept.
int32_t checkpoint_segments(int32_t layers, int32_t k);

struct MemoryBreakdown {
  int32_t stage = 0;          // pipeline stage this describes (the peak one from estimate_memory)
  int64_t params = 0;         // stage_params(): parameters on this GPU before ZeRO sharding
  int64_t expert_params = 0;  // the routed experts' part of `params` (ZeRO shards it over EDP)
  Bytes expert_states = 0;    // their weights, gradients and optimizer states
  Bytes weights = 0;          // bf16, / (dp·cp) under ZeRO-3
  Bytes gradients = 0;        // grad_bytes() each, / (dp·cp) under ZeRO-2 and 3
  Bytes optimizer = 0;        // fp32 master + m + v, / (dp·cp) under ZeRO-1..3
  Bytes activations = 0;      // kept for backward by the in-flight chunk passes, + embedding/head
  Bytes temporary = 0;        // the transient allowance described at estimate_stage_memory()
  Bytes working_set = 0;      // backward_working_set_bytes() (head_working_set_bytes() if larger)
  // Model states moved off the GPU by config.offload (per GPU): host DRAM and NVMe.
  Bytes host_dram = 0;
  Bytes host_nvme = 0;
  Bytes total() const {
    return weights + gradients + optimizer + activations + temporary + working_set;
  }
};

// Memory of one GPU on pipeline stage `stage` at its peak while it runs `order`, its exact
// schedule (pipeline_orders()). A microbatch-chunk's activations are held from its forward to its
// last backward item (B, or W where the order splits it), and each is charged its own chunk's
// layers; the embedding only to passes of model piece 0 and the head only to passes of the last
// piece, which on an interleaved last stage are far fewer than its in-flight passes. The peak is
// the largest sum over the order. effects.memory_exact_pipeline_peak = false charges instead
// peak_held_activations(order) passes of the largest chunk with embedding / head each.
// ZeRO shards over dp x cp ranks: context-parallel ranks hold the same weights, and Megatron's
// distributed optimizer shards over that combined group.
// The temporary allowance is the largest transient working set, not a fragmentation guess:
// with FULL recompute, one layer's complete (un-recomputed) activations rematerialised for its
// backward; with SELECTIVE and UNFUSED attention, one layer's score tensors; with ZeRO-3, two
// layers' gathered bf16 weights (the one in use and the prefetched next); with ZeRO-2 or 3, the
// unsharded gradient buckets in flight: each bucket (dp_bucket_params, grad_bytes() each) frees
// its unsharded buffer once reduce-scattered into the shard, and with overlap_grad_reduce one
// bucket fills while the previous one is reduced, so two (DeepSpeed's ZeRO-1/2 allocates two IPG
// buffers when overlap_comm is on, one otherwise: deepspeed/runtime/zero/stage_1_and_2.py). The
// CUDA context, NCCL buffers and allocator fragmentation (typically a few GB) are the caller's
// margin. The backward working set is its own field (effects.memory_backward_working_set).
// Sharded gradients reduced once per step (holds_chunk_grads_between_backwards()): a chunk's
// unsharded buffer (its chunk_params() x grad_bytes()) is allocated at the start of the chunk's
// first backward item (B, or W where split) and freed after its last; `gradients` is the shard
// plus the buffers live at the stage's peak of activations + buffers (without the exact peak:
// every chunk's buffer, the largest they can be together).
// checkpoint_every_k_layers = k (with recompute NONE or SELECTIVE) keeps one 2·s·b·h input per run
// of k layers instead of every layer's activations, and adds k layers' activations (the run being
// recomputed) to the temporary allowance.
// Offload: an offloaded optimizer moves the optimizer bytes to host_dram / host_nvme (gradients
// stay on the GPU, where microbatches accumulate them); offloaded parameters (ZeRO-3) move the
// weight shard likewise, the two gathered layers staying in the temporary allowance.
MemoryBreakdown estimate_stage_memory(const clustersim::RunConfig& config, int32_t stage,
                                      std::span<const WorkItem> order);
// The same with `in_flight` microbatch-chunks of the stage's largest chunk, each with the stage's
// embedding / head: exact for non-interleaved schedules (every pass there is the stage's only
// chunk), an upper bound for interleaved ones. 0: model states and transients only.
MemoryBreakdown estimate_stage_memory(const clustersim::RunConfig& config, int32_t stage,
                                      int32_t in_flight);

// The peak over pipeline stages. `in_flight_per_stage` has one count per stage (pp entries).
MemoryBreakdown estimate_memory(const clustersim::RunConfig& config,
                                std::span<const int32_t> in_flight_per_stage);
// The peak over pipeline stages, each running its order (pp entries of pipeline_orders()).
MemoryBreakdown estimate_memory(const clustersim::RunConfig& config,
                                const std::vector<std::vector<WorkItem>>& orders);
// Every stage taken to hold `in_flight_microbatches` (the schedule's maximum, e.g. p for 1F1B):
// exact for stage 0, an upper bound for the others. The HBM capacity check is the caller's.
MemoryBreakdown estimate_memory(const clustersim::RunConfig& config,
                                int32_t in_flight_microbatches);

}  // namespace cs::workload
