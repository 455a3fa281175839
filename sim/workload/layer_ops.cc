#include "sim/workload/layer_ops.h"

#include <algorithm>

#include "sim/compute/gpu_hardware.h"
#include "sim/compute/precision_formats.h"
#include "sim/workload/model_math.h"
#include "sim/workload/moe_ops.h"
#include "sim/workload/stack.h"

namespace cs::workload {
namespace {

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
KernelGroup slot_group(Slot slot) {
  switch (slot) {
    case clustersim::StackKernel::NORM_FORWARD:
    case clustersim::StackKernel::NORM_BACKWARD:
      return KernelGroup::kNorm;
    case clustersim::StackKernel::LOSS_FORWARD:
    case clustersim::StackKernel::LOSS_BACKWARD:
      return KernelGroup::kLoss;
    case clustersim::StackKernel::OPTIMIZER:
      return KernelGroup::kOptimizer;
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
    sp_ = par_.sequence_parallel() && t_ > 1;
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

  void memory(std::string_view name, double bytes, double flops, KernelGroup group) {
    if (!enabled(group)) return;
    LayerOp op;
    op.kernel = compute::memory_bound(name, bytes, flops, group);
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
      op.kernel = compute::memory_bound(intern_kernel_name(k->name()),
                                        k->read_bytes() * n + k->write_bytes() * written,
                                        k->flops() * n, group);
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

// --- The attention block: from the input norm's output to the output projection's TP exit ---

// The QKV projection in `phase`: one GEMM of n = (a·d + 2·kv·d)/tp (Megatron's linear_qkv), or
// three when the stack keeps wq, wk and wv apart (StackProfile.fused_qkv), whose input gradients
// autograd then sums (slot ATTENTION_INPUT_GRAD).
void qkv_gemms(Builder& b, Phase phase) {
  const int64_t T = b.tokens_, h = b.h_, t = b.t_;
  const int64_t q_n = b.model_.num_heads() * b.d_ / t, kv_n = b.kv_ * b.d_ / t;
  if (b.stack_.fused_qkv()) {
    b.gemm_phase(phase, "qkv_fwd", "qkv_dgrad", "qkv_wgrad", T, q_n + 2 * kv_n, h);
    return;
  }
  b.gemm_phase(phase, "q_fwd", "q_dgrad", "q_wgrad", T, q_n, h);
  b.gemm_phase(phase, "k_fwd", "k_dgrad", "k_wgrad", T, kv_n, h);
  b.gemm_phase(phase, "v_fwd", "v_dgrad", "v_wgrad", T, kv_n, h);
  if (phase == Phase::kBackward) b.stack_rows(clustersim::StackKernel::ATTENTION_INPUT_GRAD);
}

// Multi-head / grouped-query attention: a heads of d = head_dim() (a·d = h unless head_dim is
// set), column-parallel QKV, row-parallel output projection. A stack's layout copies run around
// the attention kernel (ATTENTION_*_PROLOGUE / _EPILOGUE slots).
void dense_attention(Builder& b, Phase phase) {
  const int64_t T = b.tokens_, h = b.h_, t = b.t_;
  const int64_t q_width = b.model_.num_heads() * b.d_;
  const int64_t qkv_n = (q_width + 2 * b.kv_ * b.d_) / t;
  const bool fp8 = b.fp8_casts_;
  switch (phase) {
    case Phase::kForward:
      b.enter_tp_forward("attn_sp_ag");
      qkv_gemms(b, phase);
      b.bias_add("qkv_bias_fwd", qkv_n);
      b.rope("rope_fwd", false);
      b.cp_comm(LayerComm{Dim::kCp, coll::Op::kAllGather}, "kv_cp_ag");
      b.stack_rows(clustersim::StackKernel::ATTENTION_FORWARD_PROLOGUE);
      b.attention("attn_fwd", false);
      b.stack_rows(clustersim::StackKernel::ATTENTION_FORWARD_EPILOGUE);
      if (fp8) b.fp8_cast_transpose("proj_input_fp8_cast", b.token_elements(q_width / t));
      b.gemm_phase(phase, "proj_fwd", "", "", T, h, q_width / t);
      break;
    case Phase::kBackward:
      if (fp8) b.fp8_cast_transpose("proj_dgrad_fp8_cast", b.token_elements(h));
      b.gemm_phase(phase, "", "proj_dgrad", "", T, h, q_width / t);
      b.stack_rows(clustersim::StackKernel::ATTENTION_BACKWARD_PROLOGUE);
      b.attention("attn_bwd", true);
      b.stack_rows(clustersim::StackKernel::ATTENTION_BACKWARD_EPILOGUE);
      b.cp_comm(LayerComm{Dim::kCp, coll::Op::kReduceScatter}, "dkv_cp_rs");
      b.rope("rope_bwd", true);
      if (fp8) b.fp8_cast_transpose("qkv_dgrad_fp8_cast", b.token_elements(qkv_n));
      qkv_gemms(b, phase);
      b.enter_tp_backward("attn_ar_bwd", "attn_sp_rs_bwd");
      break;
    case Phase::kWeightGrad:
      b.gemm_phase(phase, "", "", "proj_wgrad", T, h, q_width / t);
      b.enter_tp_forward("attn_sp_ag_wgrad");
      b.bias_grad("qkv_bias_grad", qkv_n);
      if (fp8) b.fp8_transpose("qkv_wgrad_fp8_transpose", b.token_elements(h));
      qkv_gemms(b, phase);
      break;
  }
}

// Multi-head latent attention as Megatron-Core's MLASelfAttention with the Transformer Engine
// spec builds it (multi_latent_attention.py, gpt_layer_specs.py): the down projections
// linear_q_down_proj (h -> q_lora) and linear_kv_down_proj (h -> kv_lora + rope) are duplicated
// TELinear layers, whole on every TP rank and run on this GPU's tokens (the sequence-parallel
// shard under SP, so no h-wide all-gather); the up projections are LayerNorm + column-parallel
// linears (q_a_layernorm / kv_a_layernorm fused in), which all-gather only the q_lora / kv_lora
// latents under SP, and the shared rotary key k_pe (rope wide) is all-gathered beside them.
// Backward, the up projections' input gradients are partial over TP ranks and are all-reduced
// (SP: reduce-scattered) at latent width; the down projections' own input gradients are then
// complete, so no h-wide TP collective runs. q_lora_rank 0 replaces the q pair by one
// column-parallel h -> a·qk GEMM with the usual h-wide TP boundary.
struct MlaShapes {
  int64_t heads = 0;  // a / tp, this GPU's heads
  int64_t qk = 0, v = 0, nope = 0, rope = 0, q_lora = 0, kv_lora = 0;
  int64_t local = 0;  // tokens the down projections and latent norms see (T / tp under SP)
  explicit MlaShapes(const Builder& b) {
    const auto& mla = b.model_.mla();
    heads = b.model_.num_heads() / b.t_;
    qk = b.dqk_, v = b.dv_;
    nope = mla.qk_nope_head_dim(), rope = mla.qk_rope_head_dim();
    q_lora = mla.q_lora_rank(), kv_lora = mla.kv_lora_rank();
    local = b.norm_tokens_;
  }
  int64_t q_up_n() const { return heads * qk; }
  int64_t kv_up_n() const { return heads * (nope + v); }
  int64_t kv_down_n() const { return kv_lora + rope; }
};

// A latent's RMSNorm / LayerNorm on this GPU's tokens, like Builder::norm on `width` columns.
void latent_norm(Builder& b, std::string_view name, int64_t width, bool backward) {
  const double n = static_cast<double>(b.norm_tokens_) * static_cast<double>(width);
  const bool layernorm = b.model_.norm() == clustersim::ModelConfig::LAYERNORM;
  const double out = !backward && b.fp8_casts_ ? b.quant_bytes_ : kActBytes;
  const double bytes = backward ? 3.0 * kActBytes * n : (kActBytes + out) * n;
  b.memory(name, bytes, (backward ? 8.0 : 5.0) * n + (layernorm ? 2.0 * n : 0.0),
           KernelGroup::kNorm);
}

// A latent crossing the TP boundary of the up projections, `width` columns of all T tokens.
void latent_comm(Builder& b, coll::Op op, std::string_view name, int64_t width) {
  if (b.t_ > 1) b.comm(LayerComm{Dim::kTp, op}, name, b.token_elements(width) * kActBytes);
}
// Backward of a latent's entry into a column-parallel GEMM: reduce-scatter under SP, else
// all-reduce.
void latent_grad_reduce(Builder& b, std::string_view ar_name, std::string_view rs_name,
                        int64_t width) {
  latent_comm(b, b.sp_ ? coll::Op::kReduceScatter : coll::Op::kAllReduce, b.sp_ ? rs_name : ar_name,
              width);
}

// Megatron-Core's fused MLA RoPE (fused_apply_mla_rope_for_q / _for_kv): one kernel rotates the
// query's rope part and writes the whole query; one rotates k_pe and writes key (nope + the
// shared rotated k_pe, per head) and value from the kv up projection. Backward mirrors them.
enum class RopePass : uint8_t { kForward, kBackward, kRecompute };
void mla_rope(Builder& b, const MlaShapes& s, RopePass pass) {
  if (b.model_.position_embedding() != clustersim::ModelConfig::ROPE) return;
  auto pick = [&](std::string_view fwd, std::string_view bwd, std::string_view again) {
    return pass == RopePass::kForward ? fwd : pass == RopePass::kBackward ? bwd : again;
  };
  const double q = b.token_elements(s.heads * s.qk);
  b.memory(pick("mla_rope_q_fwd", "mla_rope_q_bwd", "mla_rope_q_recompute"), 2.0 * kActBytes * q,
           3.0 * b.token_elements(s.heads * s.rope), KernelGroup::kElementwise);
  const double kv_in = b.token_elements(s.kv_up_n() + s.rope);
  const double kv_out = b.token_elements(s.heads * (s.qk + s.v));
  b.memory(pick("mla_rope_kv_fwd", "mla_rope_kv_bwd", "mla_rope_kv_recompute"),
           kActBytes * (kv_in + kv_out), 3.0 * b.token_elements(s.rope), KernelGroup::kElementwise);
}

// The latent norms, up projections (with their SP gathers) and RoPE: Q, K and V from the
// latents, in the forward or, when MLA_UP_PROJ recomputation dropped them, again before the
// backward (kernel names are static labels, hence the pairs).
void mla_up_projections(Builder& b, const MlaShapes& s, bool recompute) {
  const int64_t T = b.tokens_, h = b.h_;
  const Phase f = Phase::kForward;
  auto pick = [&](std::string_view fwd, std::string_view again) { return recompute ? again : fwd; };
  if (s.q_lora > 0) {
    latent_norm(b, pick("q_norm_fwd", "q_norm_recompute"), s.q_lora, false);
    if (b.sp_) {
      latent_comm(b, coll::Op::kAllGather, pick("mla_q_sp_ag", "mla_q_sp_ag_recompute"), s.q_lora);
    }
    b.gemm_phase(f, pick("q_up_fwd", "q_up_recompute"), "", "", T, s.q_up_n(), s.q_lora);
  } else {
    b.enter_tp_forward(pick("attn_sp_ag", "attn_sp_ag_recompute"));
    b.gemm_phase(f, pick("q_proj_fwd", "q_proj_recompute"), "", "", T, s.q_up_n(), h);
  }
  latent_norm(b, pick("kv_norm_fwd", "kv_norm_recompute"), s.kv_lora, false);
  if (b.sp_) {
    latent_comm(b, coll::Op::kAllGather, pick("mla_kv_sp_ag", "mla_kv_sp_ag_recompute"), s.kv_lora);
    latent_comm(b, coll::Op::kAllGather, pick("mla_kpe_sp_ag", "mla_kpe_sp_ag_recompute"), s.rope);
  }
  b.gemm_phase(f, pick("kv_up_fwd", "kv_up_recompute"), "", "", T, s.kv_up_n(), s.kv_lora);
  mla_rope(b, s, recompute ? RopePass::kRecompute : RopePass::kForward);
}

void mla_forward(Builder& b, const MlaShapes& s) {
  const int64_t T = b.tokens_, h = b.h_;
  const Phase f = Phase::kForward;
  const double input = static_cast<double>(s.local) * static_cast<double>(h);
  if (s.q_lora > 0) {
    if (b.fp8_casts_) b.fp8_cast_transpose("q_down_input_fp8_cast", input);
    b.gemm_phase(f, "q_down_fwd", "", "", s.local, s.q_lora, h);
  }
  if (b.fp8_casts_) b.fp8_cast_transpose("kv_down_input_fp8_cast", input);
  b.gemm_phase(f, "kv_down_fwd", "", "", s.local, s.kv_down_n(), h);
  mla_up_projections(b, s, false);
  b.attention("attn_fwd", false);
  if (b.fp8_casts_) b.fp8_cast_transpose("proj_input_fp8_cast", b.token_elements(s.heads * s.v));
  b.gemm_phase(f, "proj_fwd", "", "", T, h, s.heads * s.v);
}

// B: output projection, attention, RoPE, then the kv and q up projections with their latent
// reductions and norms, then the down projections, whose two input gradients autograd sums.
void mla_backward(Builder& b, const MlaShapes& s) {
  const int64_t T = b.tokens_, h = b.h_;
  const Phase p = Phase::kBackward;
  if (b.fp8_casts_) b.fp8_cast_transpose("proj_dgrad_fp8_cast", b.token_elements(h));
  b.gemm_phase(p, "", "proj_dgrad", "", T, h, s.heads * s.v);
  b.attention("attn_bwd", true);
  mla_rope(b, s, RopePass::kBackward);
  if (b.fp8_casts_) b.fp8_cast_transpose("kv_up_dgrad_fp8_cast", b.token_elements(s.kv_up_n()));
  b.gemm_phase(p, "", "kv_up_dgrad", "", T, s.kv_up_n(), s.kv_lora);
  // Without SP, k_pe's partial gradients (each rank's heads) are summed in the same all-reduce.
  latent_grad_reduce(b, "mla_kv_ar_bwd", "mla_kv_sp_rs_bwd", b.sp_ ? s.kv_lora : s.kv_down_n());
  if (b.sp_) latent_comm(b, coll::Op::kReduceScatter, "mla_kpe_sp_rs_bwd", s.rope);
  latent_norm(b, "kv_norm_bwd", s.kv_lora, true);
  if (b.fp8_casts_) b.fp8_cast_transpose("q_up_dgrad_fp8_cast", b.token_elements(s.q_up_n()));
  if (s.q_lora > 0) {
    b.gemm_phase(p, "", "q_up_dgrad", "", T, s.q_up_n(), s.q_lora);
    latent_grad_reduce(b, "mla_q_ar_bwd", "mla_q_sp_rs_bwd", s.q_lora);
    latent_norm(b, "q_norm_bwd", s.q_lora, true);
  } else {
    b.gemm_phase(p, "", "q_proj_dgrad", "", T, s.q_up_n(), h);
    b.enter_tp_backward("attn_ar_bwd", "attn_sp_rs_bwd");
  }
  const double local = static_cast<double>(s.local);
  if (b.fp8_casts_) b.fp8_cast_transpose("kv_down_dgrad_fp8_cast", local * s.kv_down_n());
  b.gemm_phase(p, "", "kv_down_dgrad", "", s.local, s.kv_down_n(), h);
  if (s.q_lora > 0) {
    if (b.fp8_casts_) b.fp8_cast_transpose("q_down_dgrad_fp8_cast", local * s.q_lora);
    b.gemm_phase(p, "", "q_down_dgrad", "", s.local, s.q_lora, h);
  }
  b.memory("mla_input_grad_sum", 3.0 * kActBytes * b.norm_elements(), b.norm_elements(),
           KernelGroup::kElementwise);
}

// W: the up projections re-gather their latent input under SP (TE keeps it sharded, as for the
// dense QKV); the down projections' inputs are already local. FP8: the latent norms wrote FP8
// inputs, whose transposes wgrad needs; the down projections cast with transposes forward.
void mla_weight_grad(Builder& b, const MlaShapes& s) {
  const int64_t T = b.tokens_, h = b.h_;
  const Phase w = Phase::kWeightGrad;
  b.gemm_phase(w, "", "", "proj_wgrad", T, h, s.heads * s.v);
  if (b.sp_) latent_comm(b, coll::Op::kAllGather, "mla_kv_sp_ag_wgrad", s.kv_lora);
  if (b.fp8_casts_) b.fp8_transpose("kv_up_wgrad_fp8_transpose", b.token_elements(s.kv_lora));
  b.gemm_phase(w, "", "", "kv_up_wgrad", T, s.kv_up_n(), s.kv_lora);
  if (s.q_lora > 0) {
    if (b.sp_) latent_comm(b, coll::Op::kAllGather, "mla_q_sp_ag_wgrad", s.q_lora);
    if (b.fp8_casts_) b.fp8_transpose("q_up_wgrad_fp8_transpose", b.token_elements(s.q_lora));
    b.gemm_phase(w, "", "", "q_up_wgrad", T, s.q_up_n(), s.q_lora);
  } else {
    b.enter_tp_forward("attn_sp_ag_wgrad");
    b.gemm_phase(w, "", "", "q_proj_wgrad", T, s.q_up_n(), h);
  }
  b.gemm_phase(w, "", "", "kv_down_wgrad", s.local, s.kv_down_n(), h);
  if (s.q_lora > 0) b.gemm_phase(w, "", "", "q_down_wgrad", s.local, s.q_lora, h);
}

void attention_block(Builder& b, Phase phase) {
  if (!b.model_.has_mla()) {
    dense_attention(b, phase);
    return;
  }
  const MlaShapes s(b);
  switch (phase) {
    case Phase::kForward:
      mla_forward(b, s);
      break;
    case Phase::kBackward:
      mla_backward(b, s);
      break;
    case Phase::kWeightGrad:
      mla_weight_grad(b, s);
      break;
  }
}

// The MLP's first GEMM in `phase`: one of n = (2 for SwiGLU)·ffn/tp (Megatron's linear_fc1), or
// the gate and up GEMMs apart (StackProfile.fused_gate_up), whose input gradients autograd then
// sums (slot MLP_INPUT_GRAD).
void up_gemms(Builder& b, Phase phase) {
  const int64_t T = b.tokens_, h = b.h_, shard = b.ffn_ / b.t_;
  if (b.stack_.fused_gate_up() || !b.swiglu_) {
    b.gemm_phase(phase, "mlp_up_fwd", "mlp_up_dgrad", "mlp_up_wgrad", T,
                 (b.swiglu_ ? 2 : 1) * shard, h);
    return;
  }
  b.gemm_phase(phase, "mlp_gate_fwd", "mlp_gate_dgrad", "mlp_gate_wgrad", T, shard, h);
  b.gemm_phase(phase, "mlp_up_fwd", "mlp_up_dgrad", "mlp_up_wgrad", T, shard, h);
  if (phase == Phase::kBackward) b.stack_rows(clustersim::StackKernel::MLP_INPUT_GRAD);
}

}  // namespace

double main_grad_bytes(const clustersim::RunConfig& config) {
  switch (stack_of(config).reduce().dtype()) {
    case clustersim::GradReduce::FP32:
      return kFp32Bytes;
    case clustersim::GradReduce::BF16:
      return kActBytes;
    case clustersim::GradReduce::DTYPE_AS_CONFIGURED:
      break;
  }
  return config.parallel().grad_reduce_dtype() == clustersim::ParallelConfig::GRAD_FP32 ? kFp32Bytes
                                                                                        : kActBytes;
}

double gemm_input_bytes(clustersim::Precision precision) {
  return compute::stored_bytes_per_element(precision);
}

LayerOp gemm_op(std::string_view name, int64_t m, int64_t n, int64_t k,
                clustersim::Precision precision, int64_t batch) {
  const double e = gemm_input_bytes(precision);
  LayerOp op;
  op.kernel = compute::gemm(name, m, n, k, e, batch);
  op.kernel.group = KernelGroup::kGemm;
  if (e != kActBytes) {
    op.kernel.bytes =
        e * static_cast<double>(m * k + k * n) + kActBytes * static_cast<double>(m * n);
  }
  op.precision = compute::format_of(precision).gemm;
  return op;
}

std::vector<LayerOp> layer_ops(const clustersim::RunConfig& config, Phase phase,
                               const ExpertLoad* experts) {
  Builder b(config);
  const int64_t T = b.tokens_, h = b.h_, t = b.t_;
  const int64_t up_n = (b.swiglu_ ? 2 : 1) * b.ffn_ / t;
  const int64_t ffn_shard = b.ffn_ / t;
  const bool fp8 = b.fp8_casts_;
  switch (phase) {
    case Phase::kForward:
      // MLA's input norm is its own TENorm (two linears read it), so it writes bf16.
      b.norm("ln1_fwd", false, !config.model().has_mla());
      attention_block(b, phase);
      b.leave_tp_forward("attn_ar", "attn_sp_rs");
      b.residual_fwd("attn_residual_fwd");
      b.norm("ln2_fwd", false);
      if (experts) {
        b.append(moe_block_ops(config, phase, *experts));
      } else {
        b.enter_tp_forward("mlp_sp_ag");
        up_gemms(b, phase);
        b.activation("mlp_act_fwd", false);
        if (fp8) b.fp8_cast_transpose("mlp_down_input_fp8_cast", b.token_elements(ffn_shard));
        b.gemm_phase(phase, "mlp_down_fwd", "", "", T, h, ffn_shard);
        b.leave_tp_forward("mlp_ar", "mlp_sp_rs");
      }
      b.residual_fwd("mlp_residual_fwd");
      break;
    case Phase::kBackward:
      b.dropout_bwd("mlp_dropout_bwd", b.norm_elements());
      if (experts) {
        b.append(moe_block_ops(config, phase, *experts));
      } else {
        b.leave_tp_backward("mlp_sp_ag_bwd");
        if (fp8) b.fp8_cast_transpose("mlp_down_dgrad_fp8_cast", b.token_elements(h));
        b.gemm_phase(phase, "", "mlp_down_dgrad", "", T, h, ffn_shard);
        b.activation("mlp_act_bwd", true);
        if (fp8) b.fp8_cast_transpose("mlp_up_dgrad_fp8_cast", b.token_elements(up_n));
        up_gemms(b, phase);
        b.enter_tp_backward("mlp_ar_bwd", "mlp_sp_rs_bwd");
      }
      b.norm("ln2_bwd", true);
      b.residual_grad_sum("mlp_residual_grad_sum");
      b.dropout_bwd("attn_dropout_bwd", b.norm_elements());
      b.leave_tp_backward("attn_sp_ag_bwd");
      attention_block(b, phase);
      b.norm("ln1_bwd", true);
      b.residual_grad_sum("attn_residual_grad_sum");
      break;
    case Phase::kWeightGrad:
      if (experts) {
        b.append(moe_block_ops(config, phase, *experts));
      } else {
        b.bias_grad("mlp_down_bias_grad", h);
        b.gemm_phase(phase, "", "", "mlp_down_wgrad", T, h, ffn_shard);
        b.enter_tp_forward("mlp_sp_ag_wgrad");
        b.bias_grad("mlp_up_bias_grad", up_n);
        if (fp8) b.fp8_transpose("mlp_up_wgrad_fp8_transpose", b.token_elements(h));
        up_gemms(b, phase);
      }
      b.bias_grad("proj_bias_grad", h);
      attention_block(b, phase);
      break;
  }
  return b.take();
}

std::vector<LayerOp> layer_recompute_ops(const clustersim::RunConfig& config,
                                         const ExpertLoad* experts) {
  using clustersim::ParallelConfig;
  const auto& p = config.parallel();
  if (p.recompute() == ParallelConfig::FULL) return layer_ops(config, Phase::kForward, experts);
  Builder b(config);
  if (p.recompute() == ParallelConfig::SELECTIVE) b.attention("attn_recompute", false);
  // Output-discarding recomputation (recompute_modules): the dropped outputs again.
  const bool mla = config.model().has_mla();
  if (recomputes(p, ParallelConfig::LAYERNORM)) {
    b.norm("ln1_recompute", false, !mla);
    b.norm("ln2_recompute", false);
  }
  if (mla && recomputes(p, ParallelConfig::MLA_UP_PROJ)) mla_up_projections(b, MlaShapes(b), true);
  if (experts && recomputes(p, ParallelConfig::MOE_ACT))
    b.append(moe_activation_recompute_ops(config, *experts));
  return b.take();
}

std::vector<LayerOp> embedding_ops(const clustersim::RunConfig& config, Phase phase) {
  Builder b(config);
  const double n = b.token_elements(b.h_);
  const bool learned = config.model().position_embedding() == clustersim::ModelConfig::LEARNED;
  switch (phase) {
    case Phase::kForward:
      // Each vocabulary shard reads its rows and writes a full (partly zero) output.
      b.memory("embedding_fwd", 2.0 * kActBytes * n, 0, KernelGroup::kLoss);
      b.leave_tp_forward("embedding_ar", "embedding_sp_rs");
      // Learned absolute positions: gather the position rows and add them (read both, write).
      if (learned) b.memory("position_embedding_fwd", 3.0 * kActBytes * n, n, KernelGroup::kLoss);
      // Megatron's embedding_dropout (hidden_dropout) on the sequence-parallel shard.
      if (b.hidden_dropout_) {
        b.memory("embedding_dropout_fwd", (2.0 * kActBytes + kMaskBytes) * b.norm_elements(),
                 b.norm_elements(), KernelGroup::kElementwise);
      }
      break;
    case Phase::kBackward:
      b.dropout_bwd("embedding_dropout_bwd", b.norm_elements());
      b.leave_tp_backward("embedding_sp_ag_bwd");
      break;
    case Phase::kWeightGrad: {
      // PyTorch's embedding backward returns a dense gradient of the whole vocabulary shard
      // (embedding_backward_cuda_kernel: at::zeros({num_weights, dim}) in the gradient's bf16,
      // then the tokens' rows); Megatron's DDP hook then adds it into the main_grad buffer
      // (param.main_grad.add_(param.grad.data)): every row, each microbatch.
      const double rows = static_cast<double>(b.vocab_shard_) * static_cast<double>(b.h_);
      b.memory("embedding_grad_zero", kActBytes * rows, 0, KernelGroup::kEmbeddingGrad);
      // Read the gradient rows, read-modify-write the embedding gradient rows.
      b.memory("embedding_wgrad", 3.0 * kActBytes * n, n, KernelGroup::kLoss);
      if (learned) b.memory("position_embedding_wgrad", 3.0 * kActBytes * n, n, KernelGroup::kLoss);
      const double main_grad = main_grad_bytes(config);
      if (b.stack_.ddp_grad_buffer()) {
        b.memory("embedding_main_grad_add", (kActBytes + 2.0 * main_grad) * rows, rows,
                 KernelGroup::kEmbeddingGrad);
      }
      break;
    }
  }
  return b.take();
}

std::vector<LayerOp> head_ops(const clustersim::RunConfig& config, Phase phase) {
  Builder b(config);
  const int64_t T = b.tokens_, h = b.h_, v = b.vocab_shard_;
  const double logits = static_cast<double>(T) * static_cast<double>(v);
  const KernelGroup loss = KernelGroup::kLoss;
  switch (phase) {
    case Phase::kForward:
      b.norm("final_norm_fwd", false, false);
      b.enter_tp_forward("head_sp_ag");
      b.gemm_phase(phase, "logits_fwd", "", "", T, v, h, false);
      if (b.replaces(clustersim::StackKernel::LOSS_FORWARD)) {
        b.stack_rows(clustersim::StackKernel::LOSS_FORWARD);
        break;  // the stacks with their own loss run without TP (no vocabulary-parallel loss)
      }
      // Megatron-Core's VocabParallelCrossEntropy (unfused, the default without
      // --cross-entropy-loss-fusion), one kernel per tensor op over this GPU's vocabulary shard:
      // cast the bf16 logits to fp32; max; subtract the (all-reduced) max in place; exp in place;
      // sum; divide by the (all-reduced) sum in place, which keeps the fp32 softmax for backward.
      b.memory("cross_entropy_cast_fwd", (kActBytes + kFp32Bytes) * logits, logits, loss);
      b.memory("cross_entropy_max_fwd", kFp32Bytes * logits, logits, loss);
      if (b.t_ > 1)
        b.comm(LayerComm{Dim::kTp, coll::Op::kAllReduce}, "loss_ar",
               3.0 * 4.0 * static_cast<double>(T));
      b.memory("cross_entropy_sub_fwd", 2.0 * kFp32Bytes * logits, logits, loss);
      b.memory("cross_entropy_exp_fwd", 2.0 * kFp32Bytes * logits, logits, loss);
      b.memory("cross_entropy_sum_fwd", kFp32Bytes * logits, logits, loss);
      b.memory("cross_entropy_div_fwd", 2.0 * kFp32Bytes * logits, logits, loss);
      break;
    case Phase::kBackward:
      // The gradient is the saved softmax minus the one-hot target, scaled in place by the loss
      // gradient (read and write fp32), then cast back to bf16 for the logits dgrad GEMM.
      if (b.replaces(clustersim::StackKernel::LOSS_BACKWARD)) {
        b.stack_rows(clustersim::StackKernel::LOSS_BACKWARD);
      } else {
        b.memory("cross_entropy_scale_bwd", 2.0 * kFp32Bytes * logits, logits, loss);
        b.memory("cross_entropy_cast_bwd", (kFp32Bytes + kActBytes) * logits, 0, loss);
      }
      b.gemm_phase(phase, "", "logits_dgrad", "", T, v, h, false);
      b.enter_tp_backward("head_ar_bwd", "head_sp_rs_bwd");
      b.norm("final_norm_bwd", true);
      break;
    case Phase::kWeightGrad:
      b.enter_tp_forward("head_sp_ag_wgrad");
      b.gemm_phase(phase, "", "", "logits_wgrad", T, v, h, false);
      break;
  }
  return b.take();
}

std::vector<LayerOp> mtp_entry_ops(const clustersim::RunConfig& config, Phase phase) {
  Builder b(config);
  const int64_t T = b.tokens_, h = b.h_;
  const double n = b.norm_elements();
  const double wide = 2.0 * b.hidden_bytes();  // the concatenation [norm(h); norm(emb)], 2h wide
  const LayerComm gather{Dim::kTp, coll::Op::kAllGather};
  switch (phase) {
    case Phase::kForward:
      b.append(embedding_ops(config, phase));
      b.norm("mtp_hnorm_fwd", false, false);
      b.norm("mtp_enorm_fwd", false, false);
      if (b.sp_) b.comm(gather, "mtp_proj_sp_ag", wide);
      b.gemm_phase(phase, "mtp_proj_fwd", "", "", T, h / b.t_, 2 * h);
      // Megatron-Core gathers the column-parallel output over TP, then keeps its sequence shard.
      b.tp_comm(gather, "mtp_proj_out_ag");
      break;
    case Phase::kBackward:
      // The sequence shard's gradient is gathered back (the TP gather's backward is a split).
      if (b.sp_) b.tp_comm(gather, "mtp_proj_out_sp_ag_bwd");
      b.gemm_phase(phase, "", "mtp_proj_dgrad", "", T, h / b.t_, 2 * h);
      if (b.t_ > 1) {
        b.comm(b.sp_ ? LayerComm{Dim::kTp, coll::Op::kReduceScatter}
                     : LayerComm{Dim::kTp, coll::Op::kAllReduce},
               b.sp_ ? "mtp_proj_sp_rs_bwd" : "mtp_proj_ar_bwd", wide);
      }
      b.norm("mtp_hnorm_bwd", true);
      b.norm("mtp_enorm_bwd", true);
      // The main model's last hidden state gets the module's gradient on top of the head's.
      b.memory("mtp_hidden_grad_sum", 3.0 * kActBytes * n, n, KernelGroup::kElementwise);
      b.append(embedding_ops(config, phase));
      break;
    case Phase::kWeightGrad:
      if (b.sp_) b.comm(gather, "mtp_proj_sp_ag_wgrad", wide);
      b.gemm_phase(phase, "", "", "mtp_proj_wgrad", T, h / b.t_, 2 * h);
      b.append(embedding_ops(config, phase));
      break;
  }
  return b.take();
}

std::vector<LayerOp> stack_kernel_ops(const clustersim::RunConfig& config, Slot slot,
                                      double unit_params, double shard_params) {
  Builder b(config);
  b.stack_rows(slot, unit_params, shard_params);
  return b.take();
}

std::vector<LayerOp> optimizer_ops(const clustersim::RunConfig& config, int64_t shard_params,
                                   int64_t fp8_weight_params, int64_t grad_buffer_params) {
  Builder b(config);
  const double n = static_cast<double>(shard_params);
  const double grad_bytes = main_grad_bytes(config);
  // Megatron DDP (megatron/core/distributed/param_and_grad_buffer.py): before the data-parallel
  // reduction each bucket's grad_data.norm(p=2) is checked for NaN (check_grads, under the
  // default --check-for-nan-in-loss-and-grad), and before the next step's first microbatch
  // zero_grad_buffer() zeroes the whole buffer (reset: grad_data.zero_()).
  const double buffer = static_cast<double>(grad_buffer_params);
  b.memory("grad_buffer_nan_check", grad_bytes * buffer, 2.0 * buffer, KernelGroup::kGradBuffer);
  b.memory("grad_buffer_zero", grad_bytes * buffer, 0, KernelGroup::kGradBuffer);
  // Megatron's clip_grad_norm_fp32: a multi-tensor L2 norm over this GPU's gradient shard. (The
  // scalar's all-reduce over the model-parallel and data-parallel groups is a few bytes and not
  // simulated; the scaling by the clip coefficient runs only on steps whose norm exceeds the
  // threshold.)
  b.memory("grad_norm", grad_bytes * n, 2.0 * n, KernelGroup::kGradNorm);
  // Reads states and gradient, writes the states and the bf16 weight; a stack's own optimizer
  // kernels instead where its profile lists them.
  if (b.replaces(clustersim::StackKernel::OPTIMIZER)) {
    b.stack_rows(clustersim::StackKernel::OPTIMIZER, 0, n);
  } else {
    b.memory("adam_step", (kAdamStateBytes + grad_bytes + kAdamStateBytes + kActBytes) * n,
             12.0 * n, KernelGroup::kOptimizer);
  }
  if (b.fp8_casts_ && fp8_weight_params > 0) {
    // Transformer Engine casts each updated weight to FP8 (and its transpose for dgrad) once per
    // step, on the first microbatch, and reuses it for the others (is_first_microbatch); the
    // delayed-scaling recipe then rolls the amax history and recomputes every scale in one
    // fused kernel (amax_and_scale_update) over a few floats per FP8 tensor.
    b.fp8_cast_transpose("fp8_weight_cast", static_cast<double>(fp8_weight_params));
    b.memory("fp8_scale_update", 0, 0, KernelGroup::kFp8Cast);
  }
  return b.take();
}

}  // namespace cs::workload
