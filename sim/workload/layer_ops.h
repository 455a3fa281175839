// The kernels and collectives of one transformer layer (and embedding, head, optimizer) on one GPU.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "proto/config.pb.h"
#include "sim/coll/collective.h"
#include "sim/compute/grouped_gemm.h"
#include "sim/compute/kernel.h"
#include "sim/core/units.h"
#include "sim/workload/dims.h"
#include "sim/workload/moe.h"
#include "sim/workload/pipeline_schedule.h"
#include "sim/workload/program.h"

namespace cs::workload {

// A collective inside a layer: which operation, over which dimension's group. TP ones run over
// the tensor-parallel group on the critical path; CP ones gather keys/values over the
// context-parallel group (Megatron runs them as a ring of send/recvs overlapped with attention;
// the volume is that of an all-gather / reduce-scatter).
struct LayerComm {
  Dim dim = Dim::kTp;
  coll::Op op = coll::Op::kAllReduce;
  friend bool operator==(const LayerComm&, const LayerComm&) = default;
};

// One step of a layer: a kernel, or a collective whose `bytes` is the full buffer S as
// nccl-tests and coll/ count it (all-reduce: each rank's vector; all-gather: the gathered
// output; reduce-scatter: each rank's unreduced input), so bus traffic is
// coll::bus_bandwidth_factor(op, n) x S.
struct LayerOp {
  bool is_comm = false;
  compute::Kernel kernel;  // when !is_comm
  // compute::Kernel carries no precision: GEMMs run in `precision` (FP8 runs: kFp8), the rest
  // in bf16, so the cost model can pick the right peak.
  compute::Precision precision = compute::Precision::kBf16;
  LayerComm comm;              // when is_comm
  std::string_view comm_name;  // when is_comm, a static label like "attn_out_ar"
  Bytes bytes = 0;             // when is_comm
  // Expert-parallel work that differs by EP rank (imbalanced routing). A kernel: the kernels each
  // EP coordinate runs instead (timed together, as `grouped` says; `kernel` is their mean, for
  // FLOP counts).
  // An all-to-all over EP: how its bytes spread over the members (`bytes` is what each sends).
  std::vector<std::vector<compute::Kernel>> rank_parts;
  // How each EP rank's GEMM parts, one grouped kernel, are timed (compute::expert_part_time):
  // as the grouped GEMM kernel runs them, or, under effects.moe_grouped_gemm=false, ideally.
  compute::GroupedGemmModel grouped = compute::GroupedGemmModel::kKernel;
  AllToAllV all_to_all;  // when comm is {kEp, kAllToAll}
  // A software stack's kernel that runs beside the data-parallel collectives (StackKernel.stream
  // DP: FSDP's copy-in and reduce-scatter streams), not on the compute stream.
  bool dp_stream = false;

  std::string_view name() const { return is_comm ? comm_name : kernel.name; }
};

// Bytes per GEMM input element: 2 for BF16, 1 for FP8 (Transformer Engine casts the inputs;
// outputs stay bf16, so an FP8 GEMM's bytes are m·k + k·n + 2·m·n).
double gemm_input_bytes(clustersim::Precision precision);
// The GEMM X[m,k]·W[k,n] with inputs in `precision` (FP8: 1 byte, else 2) and a bf16 output.
LayerOp gemm_op(std::string_view name, int64_t m, int64_t n, int64_t k,
                clustersim::Precision precision, int64_t batch = 1);

// Shapes come from a validated config. Tokens per GPU per microbatch are T = microbatch_size x
// seq_length / cp; norms, residuals and dropout see T / tp under sequence parallelism. Phases
// (from pipeline_schedule.h): kForward; kBackward = the input-gradient part B (dgrad GEMMs,
// attention / norm / activation backward, mirrored TP comms); kWeightGrad = W (wgrad GEMMs).
// Every dgrad and wgrad GEMM has the FLOPs of its forward GEMM, so F + B + W GEMMs = 3 x forward.
//
// The kernels are those Megatron-LM / Transformer Engine launch, fused where they fuse, each
// with the HBM bytes it moves (memory-bound: timed at the achievable HBM bandwidth):
// Forward: ln1 (fused RMSNorm / LayerNorm), [SP all-gather], QKV (column parallel,
// n = (h + 2·kv·d)/tp), [QKV bias add], [fused RoPE on Q and K], [CP K/V all-gather], attention
// (FlashAttention, or the unfused path: Q·Kᵀ GEMM, scale-mask-softmax, [dropout], ·V GEMM),
// output projection (row parallel, k = h/tp), TP all-reduce (SP: reduce-scatter),
// bias-dropout-add (mask only when hidden_dropout > 0), ln2, [SP all-gather], MLP up (SwiGLU:
// gate and up fused, n = 2·ffn/tp), fused bias-activation, MLP down (row parallel),
// all-reduce (SP: reduce-scatter), bias-dropout-add.
// Backward B, in reverse: dropout backward (when p > 0), the row-parallel all-reduce's backward
// is the identity (SP: an all-gather of the gradient); the column-parallel input's backward is an
// all-reduce (SP: a reduce-scatter), so 2 all-reduces as in Megatron; norm backward, then the sum
// of the residual stream's two gradients; RoPE backward; CP reduce-scatters dK/dV.
// Backward W: bias gradients (column sums of dY) when add_bias; with SP the column-parallel
// GEMMs' wgrad needs their all-gathered input, which Megatron stores sharded (that is what makes
// Korthikanti's 34/t) and all-gathers again; those two extra all-gathers are in W, just before
// the wgrads that need them.
// FP8 (Transformer Engine delayed scaling, when effects.fp8_casts): every bf16 tensor entering a
// transformer-layer GEMM is cast to FP8 with its transpose in one kernel (the inputs of the
// projection and MLP down GEMMs forward, the output gradients of all four backward); the norms
// write FP8 directly and wgrad transposes their output. Weights are cast once per step
// (optimizer_ops). The output layer and attention stay BF16.
// Head sizes: a heads of d = head_dim() (a·d need not be h: Qwen3-30B-A3B has h 2048, 32 heads
// of 128), so QKV's n is (a·d + 2·kv·d)/tp and the projection's k is a·d/tp.
// MLA (model.mla, layer_ops.cc's mla_forward and neighbours, after Megatron-Core's
// MLASelfAttention): ln1 writes bf16; the duplicated down projections q_down (h -> q_lora) and
// kv_down (h -> kv_lora + rope) run on this GPU's tokens; q_norm / kv_norm on those tokens;
// [SP all-gathers of the q and kv latents and of k_pe]; q_up (n = a·qk/tp) and kv_up
// (n = a·(nope + v)/tp); fused MLA RoPE on q and on k/v; attention with head_dim qk and value
// width v; projection k = a·v/tp. B mirrors it: latent gradients all-reduced (SP:
// reduce-scattered, k_pe apart) at latent width, no h-wide TP collective at the block's input;
// the two down projections' input gradients are summed. W: the up projections re-gather their
// latents under SP. Not simulated: the once-per-step TP all-reduce of the duplicated down
// projections' weight gradients under SP (Megatron's finalize_model_grads).
// Each kernel group can be switched off (EffectsConfig: norm_kernels, elementwise_kernels,
// loss_kernels, fp8_casts, grad_norm); GEMMs and attention always run.
// A software stack other than Megatron-TE (config.resolved_stack, proto/stack.proto) replaces
// the norm, activation, RoPE and cross-entropy kernels by the rows its profile lists for their
// slots, adds its attention layout copies and input-gradient sums, and may split QKV into three
// GEMMs and the MLP's gate and up into two (fused_qkv, fused_gate_up).
// A MoE layer (`experts` set: its routing) has the block of moe_ops.h in place of the MLP.
std::vector<LayerOp> layer_ops(const clustersim::RunConfig& config, Phase phase,
                               const ExpertLoad* experts = nullptr);

// What recomputation re-runs before a layer's backward: FULL the whole forward (comms included),
// SELECTIVE the attention core forward, NONE nothing.
std::vector<LayerOp> layer_recompute_ops(const clustersim::RunConfig& config,
                                         const ExpertLoad* experts = nullptr);

// First stage: the vocab-parallel embedding lookup and the TP all-reduce (SP: reduce-scatter)
// that combines the vocabulary shards; B: with SP the gradient all-gather, else nothing; W: the
// scatter-add of gradients into the embedding rows, and (effects.embedding_dense_grad) the dense
// bf16 gradient of the vocabulary shard it lands in, zero-filled first and then added into the
// main_grad buffer: (2 + 2 x main_grad bytes + 2) bytes per element of [vocab / tp, hidden].
std::vector<LayerOp> embedding_ops(const clustersim::RunConfig& config, Phase phase);

// Last stage: final norm, [SP all-gather], vocab-parallel logits GEMM (n = padded vocab / tp),
// cross-entropy and its TP all-reduce (Megatron's vocab-parallel loss all-reduces a max, a
// target logit and a sum of exponentials, 3 fp32 values per token, merged here into one op);
// B: softmax-gradient, logits dgrad, all-reduce (SP: reduce-scatter) of the hidden gradient,
// final-norm backward; W: logits wgrad.
std::vector<LayerOp> head_ops(const clustersim::RunConfig& config, Phase phase);

// A multi-token prediction module's entry (DeepSeek-V3 section 2.2, Megatron-Core's
// MultiTokenPredictionLayer), on the last stage after the head: the shared embedding of the
// tokens one further ahead, RMSNorms of it and of the hidden state, and the column-parallel
// projection of their 2h-wide concatenation to h, gathered over TP back to the sequence shard.
// Its transformer block is layer_ops() of layer num_layers + k, then head_ops() again. B and W
// mirror it; B adds the module's gradient to the main model's last hidden state.
std::vector<LayerOp> mtp_entry_ops(const clustersim::RunConfig& config, Phase phase);

// The once-per-step kernels after the backward, in order, on one GPU:
// - grad_buffer_nan_check, grad_buffer_zero (effects.grad_buffer_kernels): Megatron DDP reads
//   its `grad_buffer_params` gradient buffer once for the NaN check before the data-parallel
//   reduction and zeroes it for the next step (the whole buffer: ZeRO-1 shards only the
//   optimizer states);
// - grad_norm: the L2 norm of this GPU's `shard_params` gradients for clipping (read once), or
//   the stack profile's GRAD_NORM rows;
// - adam_step: mixed-precision Adam over the shard: reads fp32 master, m, v (12 bytes) and the
//   gradient (4 bytes in fp32, parallel.grad_reduce_dtype GRAD_FP32; 2 in bf16), writes master,
//   m, v (12) and the bf16 weight (2): 30 (28) bytes per parameter, about 12 FLOPs. (The 16-18
//   bytes sometimes quoted count only one direction; a fused kernel moves both.)
// - FP8 runs: fp8_weight_cast of the stage's `fp8_weight_params` transformer-layer weights on
//   this TP rank (cast + transpose) and the delayed-scaling amax / scale update.
std::vector<LayerOp> optimizer_ops(const clustersim::RunConfig& config, int64_t shard_params,
                                   int64_t fp8_weight_params, int64_t grad_buffer_params);

// Bytes of one gradient element as the data-parallel reduction sees it: the stack's reduce dtype
// where its profile sets one, else 4 when parallel.grad_reduce_dtype is GRAD_FP32, 2 for BF16.
double main_grad_bytes(const clustersim::RunConfig& config);

// The kernels the run's software stack lists for `slot` at its ZeRO stage (sim/workload/stack.h
// stack_of), each over its extent: `unit_params` for UNIT_PARAMS (a unit's or bucket's
// parameters), `shard_params` for UNIT_SHARD and SHARD_PARAMS; the layer extents from the run's
// shapes. Empty when the stack lists none (Megatron-TE) or the slot's kernel group is off.
std::vector<LayerOp> stack_kernel_ops(const clustersim::RunConfig& config,
                                      clustersim::StackKernel::Slot slot, double unit_params = 0,
                                      double shard_params = 0);

}  // namespace cs::workload
