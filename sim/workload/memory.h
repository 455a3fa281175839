// Per-GPU memory of a training step: model states (ZeRO), activations (Korthikanti et al. 2022).
#pragma once

#include <cstdint>
#include <span>

#include "proto/config.pb.h"
#include "sim/core/units.h"
#include "sim/workload/model_math.h"

namespace cs::workload {

// Model states of mixed-precision Adam (Rajbhandari et al. 2020, "ZeRO"): 2 bytes of bf16 weights,
// 2 of bf16 gradients and 12 of fp32 master weights + Adam m + v per parameter. ZeRO-1 shards the
// 12 over the `shards` data-parallel ranks, ZeRO-2 also the gradients, ZeRO-3 also the weights.
// FP8 runs keep the same states (Transformer Engine casts weights to FP8 per GEMM).
struct ModelStateBytes {
  double weights = 0, gradients = 0, optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};
ModelStateBytes model_state_bytes(double params, int32_t zero_stage, int64_t shards);

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

// stage_params() (parameters per GPU of a stage) lives in model_math.h.

// How the activation estimate treats the attention scores. Korthikanti et al. store the softmax
// output, its dropout mask and the dropout output: 5·a·s²·b bytes per layer. FlashAttention never
// materialises them (it keeps only O, already counted as the output projection's input, and an
// O(s) log-sum-exp we neglect), which is what every current Megatron / TE run does, so the
// default drops the term; flash_attention = false reproduces the paper's formulas exactly.
struct MemoryOptions {
  bool flash_attention = true;
};

// Activation bytes that one layer keeps for its backward, for one microbatch on one GPU, in
// Korthikanti et al.'s accounting (16-bit tensors, 1-byte dropout masks), generalised so that
// GPT-3-shaped layers (MHA, GELU, ffn = 4h) give exactly their formulas:
//   none:        s·b·h·(34 + 5·a·s/h); TP t: s·b·h·(10 + 24/t + 5·a·s/(h·t));
//   TP + SP:     s·b·h·(34/t + 5·a·s/(h·t));  selective recompute: the 5·a·s/h term dropped;
//   full:        2·s·b·h (the layer's input; / t with SP).
// The general form keeps the paper's tensor list: norm inputs 2+2, QKV input 2, Q 2, K and V
// 2·kv/a each (GQA shrinks them), projection input 2, two dropout masks 1+1, MLP input 2, and
// the MLP hidden tensors 4·ffn/h for GELU (activation input, down-projection input) or 6·ffn/h for
// SwiGLU (gate and up outputs, their product), all in units of s·b·h bytes. Context parallelism
// replaces s by s/cp for every token tensor; the score term becomes 5·(a/t)·(s/cp)·s·b.
double layer_activation_bytes(const clustersim::RunConfig& config,
                              const MemoryOptions& options = {});
// Extra activations of the first stage: the embedding's dropout mask, s·b·h/cp bytes (/t with SP).
double embedding_activation_bytes(const clustersim::RunConfig& config);
// Extra activations of the last stage (Korthikanti section 4.3): final-norm input and output
// head input, 2·s·b·h each (/t with SP), and the fp32 logits for the cross-entropy, 4·s·b·V/t;
// all / cp.
double head_activation_bytes(const clustersim::RunConfig& config);

// Layers of a chunk of `layers` split into runs of k (checkpoint_every_k_layers): the inputs kept.
int32_t checkpoint_segments(int32_t layers, int32_t k);

struct MemoryBreakdown {
  int32_t stage = 0;      // pipeline stage this describes (the peak one from estimate_memory)
  int64_t params = 0;     // stage_params(): parameters on this GPU before ZeRO sharding
  Bytes weights = 0;      // bf16, / (dp·cp) under ZeRO-3
  Bytes gradients = 0;    // bf16, / (dp·cp) under ZeRO-2 and 3
  Bytes optimizer = 0;    // fp32 master + m + v, / (dp·cp) under ZeRO-1..3
  Bytes activations = 0;  // kept for backward: in-flight chunk passes x layers, + embedding/head
  Bytes temporary = 0;    // the transient allowance described at estimate_stage_memory()
  // Model states moved off the GPU by config.offload (per GPU): host DRAM and NVMe.
  Bytes host_dram = 0;
  Bytes host_nvme = 0;
  Bytes total() const { return weights + gradients + optimizer + activations + temporary; }
};

// Memory of one GPU on pipeline stage `stage` at its peak, holding the activations of
// `in_flight` microbatch-chunks (forward run, backward not yet; one microbatch through one model
// chunk each, as pipeline_schedule.h's peak_held_activations() counts them, so an interleaved
// stage 0 holding p·v + p − 1 of them gets Megatron's (1 + (p−1)/(p·v)) factor). Each counts the
// stage's largest chunk; the first stage adds embedding, the last stage head activations per
// in-flight microbatch-chunk (an upper bound when v > 1).
// ZeRO shards over dp x cp ranks: context-parallel ranks hold the same weights, and Megatron's
// distributed optimizer shards over that combined group.
// The temporary allowance is the largest transient working set, not a fragmentation guess:
// with FULL recompute, one layer's complete (un-recomputed) activations rematerialised for its
// backward; with SELECTIVE and no FlashAttention, one layer's score tensors; with ZeRO-3, two
// layers' gathered bf16 weights (the one in use and the prefetched next); with ZeRO-2 or 3, one
// unsharded bf16 gradient bucket (dp_bucket_params) awaiting its reduce-scatter. The CUDA
// context, NCCL buffers and allocator fragmentation (typically a few GB) are the caller's margin.
// checkpoint_every_k_layers = k (with recompute NONE or SELECTIVE) keeps one 2·s·b·h input per run
// of k layers instead of every layer's activations, and adds k layers' activations (the run being
// recomputed) to the temporary allowance.
// Offload: an offloaded optimizer moves the optimizer bytes to host_dram / host_nvme (gradients
// stay on the GPU, where microbatches accumulate them); offloaded parameters (ZeRO-3) move the
// weight shard likewise, the two gathered layers staying in the temporary allowance.
MemoryBreakdown estimate_stage_memory(const clustersim::RunConfig& config, int32_t stage,
                                      int32_t in_flight, const MemoryOptions& options = {});

// The peak over pipeline stages. `in_flight_per_stage` has one count per stage (pp entries).
MemoryBreakdown estimate_memory(const clustersim::RunConfig& config,
                                std::span<const int32_t> in_flight_per_stage,
                                const MemoryOptions& options = {});
// Every stage taken to hold `in_flight_microbatches` (the schedule's maximum, e.g. p for 1F1B):
// exact for stage 0, an upper bound for the others. The HBM capacity check is the caller's.
MemoryBreakdown estimate_memory(const clustersim::RunConfig& config, int32_t in_flight_microbatches,
                                const MemoryOptions& options = {});

}  // namespace cs::workload
