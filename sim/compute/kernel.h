// One GPU kernel described by what it computes (shapes, FLOPs, bytes), before any timing.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace cs::compute {

// In the order of trace.proto Precision, which traces store them as.
enum class Precision : uint8_t { kBf16, kFp8, kFp32, kMxfp8, kNvfp4 };

enum class KernelKind : uint8_t {
  kGemm,         // C[m,n] (+)= A[m,k] B[k,n], `batch` independent times
  kAttention,    // fused FlashAttention-style forward or backward
  kMemoryBound,  // elementwise, norms, softmax, embedding lookup, optimizer: bytes dominate
};

// What a kernel is for, so that reports can say where the time goes and effects can be switched
// off by group. Order and names are the report's; kNumGroups must stay last.
enum class KernelGroup : uint8_t {
  kGemm,           // the linear layers' GEMMs
  kAttention,      // FlashAttention, or the unfused path's score GEMMs and softmax
  kNorm,           // RMSNorm / LayerNorm, forward and backward
  kElementwise,    // RoPE, activations, residual adds, bias adds and gradients, dropout
  kLoss,           // embedding gather / scatter-add, position embedding, cross-entropy
  kFp8Cast,        // Transformer Engine FP8 cast / transpose / amax and scale update
  kOptimizer,      // the optimizer step over the local shard
  kGradNorm,       // gradient norm for clipping
  kOther,          // anything else (imported traces)
  kMoeRouting,     // MoE router scores and top-k, token permutation and unpermutation
  kEmbeddingGrad,  // the embedding's dense weight gradient: zero fill and main_grad add
  kGradBuffer,     // Megatron DDP's gradient buffer: per-step zeroing and NaN-check norm
  kShardCopy,      // a software stack's copies around its gathers and reductions (either stream)
  kNumGroups
};
inline constexpr std::array<std::string_view, static_cast<std::size_t>(KernelGroup::kNumGroups)>
    kKernelGroupNames = {"gemm",           "attention",   "norm",      "elementwise", "loss",
                         "fp8_cast",       "optimizer",   "grad_norm", "other",       "moe_routing",
                         "embedding_grad", "grad_buffer", "shard_copy"};
inline std::string_view to_string(KernelGroup g) {
  return kKernelGroupNames[static_cast<std::size_t>(g)];
}

// What the cost model needs to time a kernel. Shapes are those of one GPU's share (after
// tensor/context/sequence parallel splits). FLOPs and bytes are filled by the constructors below
// so every consumer (cost model, MFU accounting, reports) counts them the same way.
struct Kernel {
  KernelKind kind = KernelKind::kMemoryBound;
  KernelGroup group = KernelGroup::kOther;
  std::string_view name;  // static label, e.g. "qkv_fwd"
  // kGemm
  int64_t m = 0, n = 0, k = 0, batch = 1;
  // kAttention: batch x heads, query and key lengths, head dimension
  int64_t heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  bool causal = false;
  bool backward = false;
  // All kinds: floating-point operations and HBM bytes moved (read + written).
  double flops = 0;
  double bytes = 0;
  // kMemoryBound: elements walked by an element-wise loop that does not vectorize (PyTorch's
  // strided and dtype-converting loops: gpu.proto unvectorized_elementwise_gelems_per_s).
  double unvectorized_elements = 0;
  // kMemoryBound: launched through multi_tensor_apply over a list of tensors (an optimizer step,
  // a foreach norm): streams at gpu.proto multi_tensor_hbm_efficiency.
  bool multi_tensor = false;
  // kMemoryBound: a MoE token permutation (rows gathered into or summed back from expert order):
  // at gpu.proto token_permute_tbps where that is slower than streaming.
  bool token_permute = false;
};

// A GEMM with operands and result of `element_bytes` each.
inline Kernel gemm(std::string_view name, int64_t m, int64_t n, int64_t k, double element_bytes,
                   int64_t batch = 1) {
  Kernel g;
  g.kind = KernelKind::kGemm;
  g.group = KernelGroup::kGemm;
  g.name = name;
  g.m = m, g.n = n, g.k = k, g.batch = batch;
  g.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
            static_cast<double>(batch);
  g.bytes = element_bytes * static_cast<double>(batch) *
            (static_cast<double>(m) * static_cast<double>(k) +
             static_cast<double>(k) * static_cast<double>(n) +
             static_cast<double>(m) * static_cast<double>(n));
  return g;
}

// FlashAttention over `batch_heads` = micro-batch x heads on this GPU. Forward: QK^T and PV,
// 2·s_q·s_kv·(head_dim + v_head_dim) FLOPs per head (4·s_q·s_kv·d when both are d), halved when
// causal; backward 2.5x forward (recomputes QK^T and computes dQ, dK, dV), as counted by the
// FlashAttention papers (Dao 2023). `head_dim` is the query/key width; `v_head_dim` the value and
// output width where it differs (MLA: 192 and 128 in DeepSeek-V3), 0 meaning head_dim.
inline Kernel attention(std::string_view name, int64_t batch_heads, int64_t seq_q, int64_t seq_kv,
                        int64_t head_dim, bool causal, bool backward, double element_bytes,
                        int64_t kv_heads_ratio = 1, int64_t v_head_dim = 0) {
  Kernel a;
  a.kind = KernelKind::kAttention;
  a.group = KernelGroup::kAttention;
  a.name = name;
  a.heads = batch_heads, a.seq_q = seq_q, a.seq_kv = seq_kv, a.head_dim = head_dim;
  a.causal = causal, a.backward = backward;
  const int64_t v_dim = v_head_dim > 0 ? v_head_dim : head_dim;
  const double fwd = 2.0 * static_cast<double>(batch_heads) * static_cast<double>(seq_q) *
                     static_cast<double>(seq_kv) * static_cast<double>(head_dim + v_dim) *
                     (causal ? 0.5 : 1.0);
  a.flops = backward ? 2.5 * fwd : fwd;
  // Q and O (and their gradients backward) per query head; K and V shared by kv_heads_ratio heads.
  const double query_rows = static_cast<double>(batch_heads) * static_cast<double>(seq_q);
  const double key_rows = static_cast<double>(batch_heads) / static_cast<double>(kv_heads_ratio) *
                          static_cast<double>(seq_kv);
  const double q_bytes = query_rows * static_cast<double>(head_dim) * element_bytes;
  const double o_bytes = query_rows * static_cast<double>(v_dim) * element_bytes;
  const double k_bytes = key_rows * static_cast<double>(head_dim) * element_bytes;
  const double v_bytes = key_rows * static_cast<double>(v_dim) * element_bytes;
  a.bytes = (backward ? 2.0 : 1.0) * ((q_bytes + o_bytes) + (k_bytes + v_bytes));
  return a;
}

inline Kernel memory_bound(std::string_view name, double bytes, double flops = 0,
                           KernelGroup group = KernelGroup::kOther) {
  Kernel e;
  e.kind = KernelKind::kMemoryBound;
  e.group = group;
  e.name = name;
  e.bytes = bytes;
  e.flops = flops;
  return e;
}

}  // namespace cs::compute
