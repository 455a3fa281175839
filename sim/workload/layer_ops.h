// The kernels and collectives of one transformer layer (and embedding, head, optimizer) on one GPU.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "proto/config.pb.h"
#include "sim/compute/kernel.h"
#include "sim/core/units.h"
#include "sim/workload/pipeline_schedule.h"

namespace cs::workload {

// Collectives inside a layer. TP ones run over the tensor-parallel group on the critical path;
// CP ones gather keys/values over the context-parallel group (Megatron runs them as a ring of
// send/recvs overlapped with attention; the volume is that of an all-gather / reduce-scatter).
enum class CommKind : uint8_t {
  kTpAllReduce,
  kTpAllGather,
  kTpReduceScatter,
  kCpAllGather,
  kCpReduceScatter
};
std::string_view to_string(CommKind kind);

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
  CommKind comm = CommKind::kTpAllReduce;  // when is_comm
  std::string_view comm_name;              // when is_comm, a static label like "attn_out_ar"
  Bytes bytes = 0;                         // when is_comm

  std::string_view name() const { return is_comm ? comm_name : kernel.name; }
};

// Bytes per GEMM input element: 2 for BF16, 1 for FP8 (Transformer Engine casts the inputs;
// outputs stay bf16, so an FP8 GEMM's bytes are m·k + k·n + 2·m·n).
double gemm_input_bytes(clustersim::Precision precision);

// Shapes come from a validated config. Tokens per GPU per microbatch are T = microbatch_size x
// seq_length / cp; norms, residuals and dropout see T / tp under sequence parallelism. Phases
// (from pipeline_schedule.h): kForward; kBackward = the input-gradient part B (dgrad GEMMs,
// attention / norm / activation backward, mirrored TP comms); kWeightGrad = W (wgrad GEMMs).
// Every dgrad and wgrad GEMM has the FLOPs of its forward GEMM, so F + B + W GEMMs = 3 x forward.
//
// Forward: ln1, [SP all-gather], QKV (column parallel, n = (h + 2·kv·d)/tp), [CP K/V all-gather],
// FlashAttention (heads/tp, s/cp queries against s keys, GQA), output projection (row parallel,
// k = h/tp), TP all-reduce (SP: reduce-scatter), residual, ln2, [SP all-gather], MLP up (SwiGLU:
// gate and up fused, n = 2·ffn/tp), activation, MLP down (row parallel), all-reduce (SP:
// reduce-scatter), residual.
// Backward B, in reverse: the row-parallel all-reduce's backward is the identity (SP: an
// all-gather of the gradient); the column-parallel input's backward is an all-reduce (SP: a
// reduce-scatter), so 2 all-reduces as in Megatron; CP reduce-scatters dK/dV.
// Backward W: with SP the column-parallel GEMMs' wgrad needs their all-gathered input, which
// Megatron stores sharded (that is what makes Korthikanti's 34/t) and all-gathers again; those
// two extra all-gathers are in W, just before the wgrads that need them.
std::vector<LayerOp> layer_ops(const clustersim::RunConfig& config, Phase phase);

// What recomputation re-runs before a layer's backward: FULL the whole forward (comms included),
// SELECTIVE the attention core forward, NONE nothing.
std::vector<LayerOp> layer_recompute_ops(const clustersim::RunConfig& config);

// First stage: the vocab-parallel embedding lookup and the TP all-reduce (SP: reduce-scatter)
// that combines the vocabulary shards; B: with SP the gradient all-gather, else nothing; W: the
// scatter-add of gradients into the embedding rows.
std::vector<LayerOp> embedding_ops(const clustersim::RunConfig& config, Phase phase);

// Last stage: final norm, [SP all-gather], vocab-parallel logits GEMM (n = padded vocab / tp),
// cross-entropy and its TP all-reduce (Megatron's vocab-parallel loss all-reduces a max, a
// target logit and a sum of exponentials, 3 fp32 values per token, merged here into one op);
// B: softmax-gradient, logits dgrad, all-reduce (SP: reduce-scatter) of the hidden gradient,
// final-norm backward; W: logits wgrad.
std::vector<LayerOp> head_ops(const clustersim::RunConfig& config, Phase phase);

// Mixed-precision Adam over `params` parameters (this GPU's shard): reads fp32 master, m, v
// (12 bytes) and the bf16 gradient (2), writes master, m, v (12) and the bf16 weight (2): 28
// bytes per parameter, about 12 FLOPs. (The 16-18 bytes sometimes quoted count only the fp32
// states read or only written; a fused kernel still has to move both directions.)
LayerOp optimizer_op(int64_t params);

}  // namespace cs::workload
