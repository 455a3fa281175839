#include "sim/workload/layer_ops.h"

#include "sim/workload/model_math.h"

namespace cs::workload {
namespace {

// 16-bit activations and gradients everywhere outside GEMM inputs.
constexpr double kActBytes = 2.0;

// The shapes of one GPU's share of a layer for one microbatch, and an op list to append to.
class Builder {
 public:
  explicit Builder(const clustersim::RunConfig& config)
      : model_(config.model()), par_(config.parallel()), precision_(config.precision()) {
    t_ = par_.tp();
    cp_ = par_.cp();
    h_ = model_.hidden_size();
    d_ = head_dim(model_);
    kv_ = kv_heads(model_);
    ffn_ = model_.ffn_hidden_size();
    seq_ = model_.seq_length();
    tokens_ = static_cast<int64_t>(par_.microbatch_size()) * seq_ / cp_;
    sp_ = par_.sequence_parallel() && t_ > 1;
    norm_tokens_ = sp_ ? tokens_ / t_ : tokens_;
    swiglu_ = model_.activation() == clustersim::ModelConfig::SWIGLU;
    vocab_shard_ = padded_vocab(model_, t_) / t_;
  }

  std::vector<LayerOp> take() { return std::move(ops_); }

  void memory(std::string_view name, double bytes, double flops) {
    LayerOp op;
    op.kernel = compute::memory_bound(name, bytes, flops);
    ops_.push_back(op);
  }

  // Forward GEMM X[m,k]·W[k,n]; dgrad dX = dY·Wᵀ is (m, k, n); wgrad dW = Xᵀ·dY is (k, n, m).
  // All three have 2·m·n·k FLOPs.
  void gemm(std::string_view name, int64_t m, int64_t n, int64_t k) {
    const double e = gemm_input_bytes(precision_);
    LayerOp op;
    op.kernel = compute::gemm(name, m, n, k, e);
    if (e != kActBytes) {
      op.kernel.bytes =
          e * static_cast<double>(m * k + k * n) + kActBytes * static_cast<double>(m * n);
    }
    op.precision =
        precision_ == clustersim::FP8 ? compute::Precision::kFp8 : compute::Precision::kBf16;
    ops_.push_back(op);
  }
  void gemm_phase(Phase phase, std::string_view fwd, std::string_view dgrad, std::string_view wgrad,
                  int64_t m, int64_t n, int64_t k) {
    switch (phase) {
      case Phase::kForward:
        gemm(fwd, m, n, k);
        break;
      case Phase::kBackward:
        gemm(dgrad, m, k, n);
        break;
      case Phase::kWeightGrad:
        gemm(wgrad, k, n, m);
        break;
    }
  }

  void comm(CommKind kind, std::string_view name, double bytes) {
    LayerOp op;
    op.is_comm = true;
    op.comm = kind;
    op.comm_name = name;
    op.bytes = static_cast<Bytes>(bytes);
    ops_.push_back(op);
  }
  // The hidden-state collectives of the TP region boundaries, S = T·h·2 bytes.
  double hidden_bytes() const { return static_cast<double>(tokens_) * h_ * kActBytes; }
  void tp_comm(CommKind kind, std::string_view name) {
    if (t_ > 1) comm(kind, name, hidden_bytes());
  }
  // Entering a column-parallel GEMM: forward all-gather under SP (else identity); backward
  // all-reduce, or reduce-scatter under SP.
  void enter_tp_forward(std::string_view sp_name) {
    if (sp_) tp_comm(CommKind::kTpAllGather, sp_name);
  }
  void enter_tp_backward(std::string_view ar_name, std::string_view rs_name) {
    tp_comm(sp_ ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, sp_ ? rs_name : ar_name);
  }
  // Leaving a row-parallel GEMM: forward all-reduce, or reduce-scatter under SP; backward
  // identity, or all-gather under SP.
  void leave_tp_forward(std::string_view ar_name, std::string_view rs_name) {
    tp_comm(sp_ ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, sp_ ? rs_name : ar_name);
  }
  void leave_tp_backward(std::string_view sp_name) {
    if (sp_) tp_comm(CommKind::kTpAllGather, sp_name);
  }

  void norm(std::string_view name, bool backward) {
    const double n = static_cast<double>(norm_tokens_) * h_;
    // Forward reads x and writes y; backward reads x and dy and writes dx.
    memory(name, (backward ? 3.0 : 2.0) * kActBytes * n, (backward ? 8.0 : 5.0) * n);
  }
  void residual(std::string_view name) {
    const double n = static_cast<double>(norm_tokens_) * h_;
    // Two 16-bit reads, one 16-bit write and a 1-byte dropout mask.
    memory(name, 3.0 * kActBytes * n + n, 2.0 * n);
  }
  void activation(std::string_view name, bool backward) {
    const double n = static_cast<double>(tokens_) * (ffn_ / t_);
    // GELU: x -> y, backward (x, dy) -> dx. SwiGLU: (gate, up) -> y, backward (gate, up, dy) ->
    // (dgate, dup).
    const double tensors = swiglu_ ? (backward ? 5.0 : 3.0) : (backward ? 3.0 : 2.0);
    memory(name, tensors * kActBytes * n, (backward ? 12.0 : 8.0) * n);
  }
  void attention(std::string_view name, bool backward) {
    LayerOp op;
    op.kernel = compute::attention(name, par_.microbatch_size() * (model_.num_heads() / t_),
                                   seq_ / cp_, seq_, d_, model_.causal(), backward, kActBytes,
                                   model_.num_heads() / kv_);
    ops_.push_back(op);
  }
  // K and V of the whole sequence for this GPU's kv/tp heads.
  void cp_comm(CommKind kind, std::string_view name) {
    if (cp_ > 1) {
      comm(kind, name,
           2.0 * static_cast<double>(par_.microbatch_size()) * seq_ * (kv_ / t_) * d_ * kActBytes);
    }
  }

  const clustersim::ModelConfig& model_;
  const clustersim::ParallelConfig& par_;
  clustersim::Precision precision_;
  int64_t t_ = 1, cp_ = 1, h_ = 0, d_ = 0, kv_ = 0, ffn_ = 0, seq_ = 0;
  int64_t tokens_ = 0, norm_tokens_ = 0, vocab_shard_ = 0;
  bool sp_ = false, swiglu_ = false;

 private:
  std::vector<LayerOp> ops_;
};

}  // namespace

std::string_view to_string(CommKind kind) {
  switch (kind) {
    case CommKind::kTpAllReduce:
      return "tp_all_reduce";
    case CommKind::kTpAllGather:
      return "tp_all_gather";
    case CommKind::kTpReduceScatter:
      return "tp_reduce_scatter";
    case CommKind::kCpAllGather:
      return "cp_all_gather";
    case CommKind::kCpReduceScatter:
      return "cp_reduce_scatter";
  }
  return "?";
}

double gemm_input_bytes(clustersim::Precision precision) {
  return precision == clustersim::FP8 ? 1.0 : 2.0;
}

std::vector<LayerOp> layer_ops(const clustersim::RunConfig& config, Phase phase) {
  Builder b(config);
  const int64_t T = b.tokens_, h = b.h_, t = b.t_;
  const int64_t qkv_n = (h + 2 * b.kv_ * b.d_) / t;
  const int64_t up_n = (b.swiglu_ ? 2 : 1) * b.ffn_ / t;
  const int64_t ffn_shard = b.ffn_ / t;
  switch (phase) {
    case Phase::kForward:
      b.norm("ln1_fwd", false);
      b.enter_tp_forward("attn_sp_ag");
      b.gemm_phase(phase, "qkv_fwd", "", "", T, qkv_n, h);
      b.cp_comm(CommKind::kCpAllGather, "kv_cp_ag");
      b.attention("attn_fwd", false);
      b.gemm_phase(phase, "proj_fwd", "", "", T, h, h / t);
      b.leave_tp_forward("attn_ar", "attn_sp_rs");
      b.residual("attn_residual_fwd");
      b.norm("ln2_fwd", false);
      b.enter_tp_forward("mlp_sp_ag");
      b.gemm_phase(phase, "mlp_up_fwd", "", "", T, up_n, h);
      b.activation("mlp_act_fwd", false);
      b.gemm_phase(phase, "mlp_down_fwd", "", "", T, h, ffn_shard);
      b.leave_tp_forward("mlp_ar", "mlp_sp_rs");
      b.residual("mlp_residual_fwd");
      break;
    case Phase::kBackward:
      b.residual("mlp_residual_bwd");
      b.leave_tp_backward("mlp_sp_ag_bwd");
      b.gemm_phase(phase, "", "mlp_down_dgrad", "", T, h, ffn_shard);
      b.activation("mlp_act_bwd", true);
      b.gemm_phase(phase, "", "mlp_up_dgrad", "", T, up_n, h);
      b.enter_tp_backward("mlp_ar_bwd", "mlp_sp_rs_bwd");
      b.norm("ln2_bwd", true);
      b.residual("attn_residual_bwd");
      b.leave_tp_backward("attn_sp_ag_bwd");
      b.gemm_phase(phase, "", "proj_dgrad", "", T, h, h / t);
      b.attention("attn_bwd", true);
      b.cp_comm(CommKind::kCpReduceScatter, "dkv_cp_rs");
      b.gemm_phase(phase, "", "qkv_dgrad", "", T, qkv_n, h);
      b.enter_tp_backward("attn_ar_bwd", "attn_sp_rs_bwd");
      b.norm("ln1_bwd", true);
      break;
    case Phase::kWeightGrad:
      b.gemm_phase(phase, "", "", "mlp_down_wgrad", T, h, ffn_shard);
      b.enter_tp_forward("mlp_sp_ag_wgrad");
      b.gemm_phase(phase, "", "", "mlp_up_wgrad", T, up_n, h);
      b.gemm_phase(phase, "", "", "proj_wgrad", T, h, h / t);
      b.enter_tp_forward("attn_sp_ag_wgrad");
      b.gemm_phase(phase, "", "", "qkv_wgrad", T, qkv_n, h);
      break;
  }
  return b.take();
}

std::vector<LayerOp> layer_recompute_ops(const clustersim::RunConfig& config) {
  switch (config.parallel().recompute()) {
    case clustersim::ParallelConfig::FULL:
      return layer_ops(config, Phase::kForward);
    case clustersim::ParallelConfig::SELECTIVE: {
      Builder b(config);
      b.attention("attn_recompute", false);
      return b.take();
    }
    default:
      return {};
  }
}

std::vector<LayerOp> embedding_ops(const clustersim::RunConfig& config, Phase phase) {
  Builder b(config);
  const double n = static_cast<double>(b.tokens_) * b.h_;
  switch (phase) {
    case Phase::kForward:
      // Each vocabulary shard reads its rows and writes a full (partly zero) output.
      b.memory("embedding_fwd", 2.0 * kActBytes * n, 0);
      b.leave_tp_forward("embedding_ar", "embedding_sp_rs");
      break;
    case Phase::kBackward:
      b.leave_tp_backward("embedding_sp_ag_bwd");
      break;
    case Phase::kWeightGrad:
      // Read the gradient rows, read-modify-write the embedding gradient rows.
      b.memory("embedding_wgrad", 3.0 * kActBytes * n, n);
      break;
  }
  return b.take();
}

std::vector<LayerOp> head_ops(const clustersim::RunConfig& config, Phase phase) {
  Builder b(config);
  const int64_t T = b.tokens_, h = b.h_, v = b.vocab_shard_;
  const double logits = static_cast<double>(T) * static_cast<double>(v);
  switch (phase) {
    case Phase::kForward:
      b.norm("final_norm_fwd", false);
      b.enter_tp_forward("head_sp_ag");
      b.gemm_phase(phase, "logits_fwd", "", "", T, v, h);
      // Read bf16 logits, keep the fp32 softmax for backward.
      b.memory("cross_entropy_fwd", (kActBytes + 4.0) * logits, 5.0 * logits);
      if (b.t_ > 1) b.comm(CommKind::kTpAllReduce, "loss_ar", 3.0 * 4.0 * static_cast<double>(T));
      break;
    case Phase::kBackward:
      b.memory("cross_entropy_bwd", (4.0 + kActBytes) * logits, 2.0 * logits);
      b.gemm_phase(phase, "", "logits_dgrad", "", T, v, h);
      b.enter_tp_backward("head_ar_bwd", "head_sp_rs_bwd");
      b.norm("final_norm_bwd", true);
      break;
    case Phase::kWeightGrad:
      b.enter_tp_forward("head_sp_ag_wgrad");
      b.gemm_phase(phase, "", "", "logits_wgrad", T, v, h);
      break;
  }
  return b.take();
}

LayerOp optimizer_op(int64_t params) {
  const double n = static_cast<double>(params);
  LayerOp op;
  op.kernel = compute::memory_bound("adam_step", 28.0 * n, 12.0 * n);
  return op;
}

}  // namespace cs::workload
