// The attention block's ops: dense (multi-head / grouped-query) and multi-head latent attention.
#include "sim/workload/layer_builder.h"

namespace cs::workload::layer_detail {

namespace {
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

}  // namespace

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

void recompute_mla_up_projections(Builder& b) {
  mla_up_projections(b, MlaShapes(b), true);
}

}  // namespace cs::workload::layer_detail
