// The shapes of one GPU's share of a layer and the op list they build: what layer_ops.cc and
// attention_ops.cc share (internal to sim/workload).
#pragma once

#include <algorithm>
#include <string_view>
#include <vector>

#include "sim/compute/gpu_hardware.h"
#include "sim/compute/precision_formats.h"
#include "sim/compute/stack_kernel.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/model_math.h"
#include "sim/workload/moe_ops.h"
#include "sim/workload/stack.h"

namespace cs::workload::layer_detail {

// 16-bit activations and gradients everywhere outside GEMM inputs; fp32 for the loss and the
// optimizer states.
constexpr double kActBytes = 2.0;
constexpr double kFp32Bytes = 4.0;
constexpr double kMaskBytes = 1.0;        // torch's dropout keeps a bool mask
constexpr double kAdamStateBytes = 12.0;  // fp32 master weight, m and v
using compute::KernelGroup;
using Slot = clustersim::StackKernel::Slot;
using Extent = clustersim::StackKernel::Extent;

// The report group a stack kernel's slot belongs to, so that effect switches and the breakdown
// treat it like the kernel it replaces.
inline KernelGroup slot_group(Slot slot) {
  switch (slot) {
    case clustersim::StackKernel::NORM_FORWARD:
    case clustersim::StackKernel::NORM_BACKWARD:
      return KernelGroup::kNorm;
    case clustersim::StackKernel::LOSS_FORWARD:
    case clustersim::StackKernel::LOSS_BACKWARD:
      return KernelGroup::kLoss;
    case clustersim::StackKernel::OPTIMIZER:
      return KernelGroup::kOptimizer;
    case clustersim::StackKernel::GRAD_NORM:
      return KernelGroup::kGradNorm;
    case clustersim::StackKernel::GATHER_PROLOGUE:
    case clustersim::StackKernel::GATHER_EPILOGUE:
    case clustersim::StackKernel::REDUCE_PROLOGUE:
    case clustersim::StackKernel::REDUCE_EPILOGUE:
    case clustersim::StackKernel::PARAM_SYNC_PROLOGUE:
      return KernelGroup::kShardCopy;
    default:
      return KernelGroup::kElementwise;
  }
}

// The shapes of one GPU's share of a layer for one microbatch, and an op list to append to.
class Builder {
 public:
  explicit Builder(const clustersim::RunConfig& config)
      : model_(config.model()),
        par_(config.parallel()),
        effects_(config.effects()),
        precision_(config.precision()),
        stack_(stack_of(config)) {
    t_ = par_.tp();
    cp_ = par_.cp();
    h_ = model_.hidden_size();
    d_ = head_dim(model_);
    dqk_ = head_dims(model_).qk;
    dv_ = head_dims(model_).v;
    kv_ = kv_heads(model_);
    ffn_ = model_.ffn_hidden_size();
    seq_ = model_.seq_length();
    tokens_ = static_cast<int64_t>(par_.microbatch_size()) * seq_ / cp_;
    sp_ = sequence_parallel_on(par_);
    norm_tokens_ = sp_ ? tokens_ / t_ : tokens_;
    swiglu_ = model_.activation() == clustersim::ModelConfig::SWIGLU;
    vocab_shard_ = padded_vocab(model_, t_) / t_;
    fp8_casts_ = compute::format_of(precision_).quantized && effects_.fp8_casts();
    quant_bytes_ = compute::stored_bytes_per_element(precision_);
    if (fp8_casts_) {
      const auto gpu = compute::load_gpu_profile(compute::gpu_or_default(config.cluster().gpu()));
      quant_copies_ = compute::quantized_copies(gpu, precision_);
    }
    hidden_dropout_ = model_.hidden_dropout() > 0;
    attention_dropout_ = model_.attention_dropout() > 0;
  }

  std::vector<LayerOp> take() { return std::move(ops_); }
  void append(std::vector<LayerOp> ops) {
    for (LayerOp& op : ops) ops_.push_back(std::move(op));
  }

  bool enabled(KernelGroup group) const {
    switch (group) {
      case KernelGroup::kNorm:
        return effects_.norm_kernels();
      case KernelGroup::kElementwise:
        return effects_.elementwise_kernels();
      case KernelGroup::kLoss:
        return effects_.loss_kernels();
      case KernelGroup::kFp8Cast:
        return fp8_casts_;
      case KernelGroup::kGradNorm:
        return effects_.grad_norm();
      case KernelGroup::kEmbeddingGrad:
        return effects_.embedding_dense_grad();
      case KernelGroup::kGradBuffer:
        return effects_.grad_buffer_kernels() && stack_.ddp_grad_buffer();
      default:
        return true;
    }
  }

  // `multi_tensor`: launched through multi_tensor_apply (compute::Kernel::multi_tensor).
  void memory(std::string_view name, double bytes, double flops, KernelGroup group,
              bool multi_tensor = false) {
    if (!enabled(group)) return;
    LayerOp op;
    op.kernel = compute::memory_bound(name, bytes, flops, group);
    op.kernel.multi_tensor = multi_tensor;
    ops_.push_back(op);
  }

  // The stack profile's rows for `slot` that apply to this run (ZeRO stage, grouped-query
  // attention), in file order.
  std::vector<const clustersim::StackKernel*> rows(Slot slot) const {
    std::vector<const clustersim::StackKernel*> out;
    const bool gqa = kv_ < model_.num_heads();
    for (const auto& k : stack_.kernels()) {
      if (k.slot() != slot || (k.gqa_only() && !gqa)) continue;
      if (k.zero_stages_size() > 0 && std::find(k.zero_stages().begin(), k.zero_stages().end(),
                                                par_.zero_stage()) == k.zero_stages().end())
        continue;
      out.push_back(&k);
    }
    return out;
  }
  bool replaces(Slot slot) const { return !rows(slot).empty(); }
  // Elements of `extent` on this GPU for one microbatch (the parameter extents as given).
  double elements(Extent extent, double unit_params, double shard_params) const {
    switch (extent) {
      case clustersim::StackKernel::HIDDEN:
        return norm_elements();
      case clustersim::StackKernel::FFN:
        return token_elements(ffn_ / t_);
      case clustersim::StackKernel::QUERY:
        return token_elements(model_.num_heads() / t_ * d_);
      case clustersim::StackKernel::KEY:
        return token_elements(kv_ / t_ * d_);
      case clustersim::StackKernel::ROWS:
        return static_cast<double>(norm_tokens_);
      case clustersim::StackKernel::LOGITS:
        return token_elements(vocab_shard_);
      case clustersim::StackKernel::UNIT_PARAMS:
        return unit_params;
      case clustersim::StackKernel::UNIT_SHARD:
      case clustersim::StackKernel::SHARD_PARAMS:
        return shard_params;
      case clustersim::StackKernel::NONE:
        break;
    }
    return 0;
  }
  // Appends the rows of `slot`, each a memory-bound kernel of its bytes per element.
  void stack_rows(Slot slot, double unit_params = 0, double shard_params = 0) {
    const KernelGroup group = slot_group(slot);
    if (!enabled(group)) return;
    for (const auto* k : rows(slot)) {
      const double n = elements(k->extent(), unit_params, shard_params);
      const double written =
          k->has_write_extent() ? elements(k->write_extent(), unit_params, shard_params) : n;
      LayerOp op;
      op.kernel = compute::stack_kernel(*k, intern_kernel_name(k->name()), n, written, group);
      op.dp_stream = k->stream() == clustersim::StackKernel::DP;
      ops_.push_back(op);
    }
  }

  // Forward GEMM X[m,k]·W[k,n]; dgrad dX = dY·Wᵀ is (m, k, n); wgrad dW = Xᵀ·dY is (k, n, m).
  // All three have 2·m·n·k FLOPs. `low_precision`: the run's precision (FP8 inputs); the output
  // layer and the attention score GEMMs stay in BF16 (Megatron-Core builds only the transformer
  // layers' linears from Transformer Engine modules; its output_layer is a plain
  // ColumnParallelLinear).
  void gemm(std::string_view name, int64_t m, int64_t n, int64_t k, bool low_precision = true,
            int64_t batch = 1, KernelGroup group = KernelGroup::kGemm) {
    ops_.push_back(gemm_op(name, m, n, k, low_precision ? precision_ : clustersim::BF16, batch));
    ops_.back().kernel.group = group;
  }
  void gemm_phase(Phase phase, std::string_view fwd, std::string_view dgrad, std::string_view wgrad,
                  int64_t m, int64_t n, int64_t k, bool low_precision = true) {
    switch (phase) {
      case Phase::kForward:
        gemm(fwd, m, n, k, low_precision);
        break;
      case Phase::kBackward:
        gemm(dgrad, m, k, n, low_precision);
        break;
      case Phase::kWeightGrad:
        gemm(wgrad, k, n, m, low_precision);
        break;
    }
  }

  void comm(LayerComm kind, std::string_view name, double bytes) {
    LayerOp op;
    op.is_comm = true;
    op.comm = kind;
    op.comm_name = name;
    op.bytes = static_cast<Bytes>(bytes);
    ops_.push_back(op);
  }
  // The hidden-state collectives of the TP region boundaries, S = T·h·2 bytes.
  double hidden_bytes() const { return static_cast<double>(tokens_) * h_ * kActBytes; }
  void tp_comm(LayerComm kind, std::string_view name) {
    if (t_ > 1) comm(kind, name, hidden_bytes());
  }
  // Entering a column-parallel GEMM: forward all-gather under SP (else identity); backward
  // all-reduce, or reduce-scatter under SP.
  void enter_tp_forward(std::string_view sp_name) {
    if (sp_) tp_comm(LayerComm{Dim::kTp, coll::Op::kAllGather}, sp_name);
  }
  void enter_tp_backward(std::string_view ar_name, std::string_view rs_name) {
    tp_comm(sp_ ? LayerComm{Dim::kTp, coll::Op::kReduceScatter}
                : LayerComm{Dim::kTp, coll::Op::kAllReduce},
            sp_ ? rs_name : ar_name);
  }
  // Leaving a row-parallel GEMM: forward all-reduce, or reduce-scatter under SP; backward
  // identity, or all-gather under SP.
  void leave_tp_forward(std::string_view ar_name, std::string_view rs_name) {
    tp_comm(sp_ ? LayerComm{Dim::kTp, coll::Op::kReduceScatter}
                : LayerComm{Dim::kTp, coll::Op::kAllReduce},
            sp_ ? rs_name : ar_name);
  }
  void leave_tp_backward(std::string_view sp_name) {
    if (sp_) tp_comm(LayerComm{Dim::kTp, coll::Op::kAllGather}, sp_name);
  }

  // Elements of the hidden state this GPU's norms, residuals and dropouts see (T/tp under SP).
  double norm_elements() const { return static_cast<double>(norm_tokens_) * h_; }
  double token_elements(int64_t width) const {
    return static_cast<double>(tokens_) * static_cast<double>(width);
  }

  // Fused RMSNorm / LayerNorm (Apex / Transformer Engine kernels: one pass). Forward reads x
  // and writes y (FP8 under Transformer Engine's LayerNormLinear, which casts in the norm
  // kernel); backward reads x and dy and writes dx. LayerNorm also subtracts the mean.
  void norm(std::string_view name, bool backward, bool feeds_fp8_gemm = true) {
    const Slot slot =
        backward ? clustersim::StackKernel::NORM_BACKWARD : clustersim::StackKernel::NORM_FORWARD;
    if (replaces(slot)) return stack_rows(slot);
    const double n = norm_elements();
    const bool layernorm = model_.norm() == clustersim::ModelConfig::LAYERNORM;
    const double out = !backward && feeds_fp8_gemm && fp8_casts_ ? quant_bytes_ : kActBytes;
    const double bytes = backward ? 3.0 * kActBytes * n : (kActBytes + out) * n;
    const double flops = (backward ? 8.0 : 5.0) * n + (layernorm ? 2.0 * n : 0.0);
    memory(name, bytes, flops, KernelGroup::kNorm);
  }
  // Megatron's bias-dropout-add (fused_bias_dropout_add): out = residual + dropout(x + bias).
  // Reads x and the residual, writes out, and writes the mask when hidden_dropout > 0.
  void residual_fwd(std::string_view name) {
    const double n = norm_elements();
    memory(name, 3.0 * kActBytes * n + (hidden_dropout_ ? kMaskBytes * n : 0.0), 3.0 * n,
           KernelGroup::kElementwise);
  }
  // Backward of the dropout on a residual branch: dx = dy x mask / (1 - p). Without dropout
  // the add's backward is the identity and no kernel runs.
  void dropout_bwd(std::string_view name, double n) {
    if (!hidden_dropout_) return;
    memory(name, (2.0 * kActBytes + kMaskBytes) * n, n, KernelGroup::kElementwise);
  }
  // Where the residual stream forks (into the norm and the skip connection), autograd sums the
  // two gradients: read both, write one.
  void residual_grad_sum(std::string_view name) {
    const double n = norm_elements();
    memory(name, 3.0 * kActBytes * n, n, KernelGroup::kElementwise);
  }
  // Bias-GeLU / bias-SwiGLU (Megatron's fused bias_gelu / bias_swiglu; the bias of the first
  // MLP GEMM is added here, not in its own kernel). GeLU: x -> y, backward (x, dy) -> dx.
  // SwiGLU: (gate, up) -> y, backward (gate, up, dy) -> (dgate, dup).
  void activation(std::string_view name, bool backward) {
    const Slot slot = backward ? clustersim::StackKernel::ACTIVATION_BACKWARD
                               : clustersim::StackKernel::ACTIVATION_FORWARD;
    if (replaces(slot)) return stack_rows(slot);
    const double n = token_elements(ffn_ / t_);
    const double tensors = swiglu_ ? (backward ? 5.0 : 3.0) : (backward ? 3.0 : 2.0);
    memory(name, tensors * kActBytes * n, (backward ? 12.0 : 8.0) * n, KernelGroup::kElementwise);
  }
  // Rotary embedding on this GPU's query and key heads (Transformer Engine's fused RoPE: one
  // kernel reads and writes Q and K; backward the same on dQ and dK).
  void rope(std::string_view name, bool backward) {
    if (model_.position_embedding() != clustersim::ModelConfig::ROPE) return;
    const Slot slot =
        backward ? clustersim::StackKernel::ROPE_BACKWARD : clustersim::StackKernel::ROPE_FORWARD;
    if (replaces(slot)) return stack_rows(slot);
    const double n = token_elements((model_.num_heads() + kv_) / t_ * d_);
    memory(name, 2.0 * kActBytes * n, 3.0 * n, KernelGroup::kElementwise);
  }
  // Megatron-LM's ColumnParallelLinear adds its bias in a separate kernel when the bias is not
  // handed on to a fused consumer (the QKV projection: read and write the output).
  void bias_add(std::string_view name, int64_t width) {
    if (!model_.add_bias()) return;
    const double n = token_elements(width);
    memory(name, 2.0 * kActBytes * n, n, KernelGroup::kElementwise);
  }
  // Bias gradient = column sums of dY (Megatron-LM's linear backward: grad_output.sum(dim=0)).
  void bias_grad(std::string_view name, int64_t width) {
    if (!model_.add_bias()) return;
    const double n = token_elements(width);
    memory(name, kActBytes * n, n, KernelGroup::kElementwise);
  }
  // Transformer Engine delayed scaling: a bf16 tensor entering an FP8 GEMM is cast to FP8 and
  // transposed in one kernel (cast_transpose, amax taken on the way): read 2 bytes, write the
  // FP8 tensor and its transpose (1 + 1). The transpose feeds the wgrad GEMM, since Hopper FP8
  // GEMMs take only the TN layout. MXFP8 and NVFP4 (TE's quantize with rowwise and columnwise
  // usage) write a rowwise and a columnwise copy the same way, each with its block scales: the
  // wgrad GEMM needs blocks along the other dimension (quant_bytes_: element + scale bytes).
  // On Blackwell a per-tensor FP8 cast writes the rowwise copy only (quant_copies_).
  void fp8_cast_transpose(std::string_view name, double elements) {
    memory(name, (kActBytes + quant_copies_ * quant_bytes_) * elements, elements,
           KernelGroup::kFp8Cast);
  }
  // The norm kernel already wrote an FP8 input; wgrad needs its transpose (read 1, write 1).
  void fp8_transpose(std::string_view name, double elements) {
    if (quant_copies_ < 2) return;  // wgrad reads the rowwise copy as it is
    memory(name, 2.0 * quant_bytes_ * elements, 0, KernelGroup::kFp8Cast);
  }

  void attention(std::string_view name, bool backward) {
    if (model_.attention() == clustersim::ModelConfig::UNFUSED) {
      if (backward) {
        unfused_attention_bwd();
      } else {
        unfused_attention_fwd();
      }
      return;
    }
    LayerOp op;
    op.kernel = compute::attention(name, par_.microbatch_size() * (model_.num_heads() / t_),
                                   seq_ / cp_, seq_, dqk_, model_.causal(), backward, kActBytes,
                                   model_.num_heads() / kv_, dv_);
    ops_.push_back(op);
  }

  // Megatron's unfused core attention (DotProductAttention without flash): per (batch x head)
  // the s_q x s_kv scores go through HBM. With GQA, K and V are first repeated to every query
  // head. The score GEMMs compute the whole square; the causal mask is applied in the softmax.
  int64_t attn_batch() const { return par_.microbatch_size() * (model_.num_heads() / t_); }
  double score_elements() const {
    return static_cast<double>(attn_batch()) * static_cast<double>(seq_ / cp_) *
           static_cast<double>(seq_);
  }
  double kv_elements(int64_t heads) const {
    return 2.0 * static_cast<double>(par_.microbatch_size()) * static_cast<double>(heads) *
           static_cast<double>(seq_) * static_cast<double>(d_);
  }
  void unfused_attention_fwd() {
    const int64_t sq = seq_ / cp_, sk = seq_, bh = attn_batch();
    if (kv_ < model_.num_heads()) {
      memory("attn_kv_repeat_fwd",
             kActBytes * (kv_elements(kv_ / t_) + kv_elements(model_.num_heads() / t_)), 0,
             KernelGroup::kAttention);
    }
    gemm("attn_scores_fwd", sq, sk, dqk_, false, bh, KernelGroup::kAttention);
    // Fused scale-mask-softmax (Megatron's scaled_upper_triang_masked_softmax): read the
    // scores, write the probabilities.
    const double s = score_elements();
    memory("attn_softmax_fwd", 2.0 * kActBytes * s, 5.0 * s, KernelGroup::kAttention);
    if (attention_dropout_) {
      memory("attn_dropout_fwd", (2.0 * kActBytes + kMaskBytes) * s, s, KernelGroup::kElementwise);
    }
    gemm("attn_context_fwd", sq, dv_, sk, false, bh, KernelGroup::kAttention);
  }
  void unfused_attention_bwd() {
    const int64_t sq = seq_ / cp_, sk = seq_, bh = attn_batch();
    const double s = score_elements();
    gemm("attn_dvalue_bwd", sk, dv_, sq, false, bh, KernelGroup::kAttention);
    gemm("attn_dprobs_bwd", sq, sk, dv_, false, bh, KernelGroup::kAttention);
    if (attention_dropout_) {
      memory("attn_dropout_bwd", (2.0 * kActBytes + kMaskBytes) * s, s, KernelGroup::kElementwise);
    }
    // Softmax backward: read the probabilities and their gradient, write the score gradient.
    memory("attn_softmax_bwd", 3.0 * kActBytes * s, 4.0 * s, KernelGroup::kAttention);
    gemm("attn_dquery_bwd", sq, dqk_, sk, false, bh, KernelGroup::kAttention);
    gemm("attn_dkey_bwd", sk, dqk_, sq, false, bh, KernelGroup::kAttention);
    if (kv_ < model_.num_heads()) {
      // Sum the repeated heads' dK and dV back onto the key/value heads.
      memory("attn_kv_repeat_bwd",
             kActBytes * (kv_elements(kv_ / t_) + kv_elements(model_.num_heads() / t_)),
             kv_elements(model_.num_heads() / t_), KernelGroup::kAttention);
    }
  }
  // K and V of the whole sequence for this GPU's kv/tp heads.
  void cp_comm(LayerComm kind, std::string_view name) {
    if (cp_ > 1) {
      comm(kind, name,
           2.0 * static_cast<double>(par_.microbatch_size()) * seq_ * (kv_ / t_) * d_ * kActBytes);
    }
  }

  const clustersim::ModelConfig& model_;
  const clustersim::ParallelConfig& par_;
  const clustersim::EffectsConfig& effects_;
  clustersim::Precision precision_;
  int64_t t_ = 1, cp_ = 1, h_ = 0, d_ = 0, kv_ = 0, ffn_ = 0, seq_ = 0;
  int64_t dqk_ = 0, dv_ = 0;  // head_dims(): query/key and value widths (both d_ without MLA)
  int64_t tokens_ = 0, norm_tokens_ = 0, vocab_shard_ = 0;
  bool sp_ = false, swiglu_ = false, fp8_casts_ = false;
  double quant_bytes_ = kActBytes;  // a quantized GEMM input element with its scales
  int quant_copies_ = 2;            // rowwise and columnwise copies per cast
  bool hidden_dropout_ = false, attention_dropout_ = false;
  const clustersim::StackProfile& stack_;

 private:
  std::vector<LayerOp> ops_;
};

// The attention block in `phase` (attention_ops.cc): dense or multi-head latent attention, from
// the input norm's output to the output projection's TP exit.
void attention_block(Builder& b, Phase phase);
// MLA's up projections again, for recompute (ParallelConfig::MLA_UP_PROJ).
void recompute_mla_up_projections(Builder& b);

}  // namespace cs::workload::layer_detail
