// Attention with head_dim != hidden / heads (Qwen3-30B-A3B) and multi-head latent attention
// (DeepSeek-V3): parameter counts, FLOPs, kernel shapes, TP traffic and activation memory.
#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "sim/workload/layer_ops.h"
#include "sim/workload/memory.h"
#include "sim/workload/model_math.h"
#include "tests/support/layer_op_lookup.h"

namespace cs::workload {
namespace {

using testing_support::has_op;
using testing_support::kAllPhases;
using testing_support::op_named;
using testing_support::sum_flops;

using compute::KernelKind;

// DeepSeek-V3's attention (HF config.json: hidden 7168, 128 heads, q_lora_rank 1536,
// kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128) over its dense
// MLP (intermediate_size 18432), 4K tokens per sequence.
clustersim::RunConfig deepseek_v3_attention(int32_t tp, bool sp) {
  clustersim::RunConfig c;
  auto* m = c.mutable_model();
  m->set_num_layers(61);
  m->set_hidden_size(7168);
  m->set_num_heads(128);
  m->set_ffn_hidden_size(18432);
  m->set_vocab_size(129280);
  m->set_seq_length(4096);
  m->set_activation(clustersim::ModelConfig::SWIGLU);
  m->set_causal(false);
  auto* mla = m->mutable_mla();
  mla->set_q_lora_rank(1536);
  mla->set_kv_lora_rank(512);
  mla->set_qk_nope_head_dim(128);
  mla->set_qk_rope_head_dim(64);
  mla->set_v_head_dim(128);
  auto* p = c.mutable_parallel();
  p->set_tp(tp);
  p->set_sequence_parallel(sp);
  p->set_microbatch_size(1);
  p->set_global_batch_size(1);
  return c;
}

// Qwen3-30B-A3B's attention (hidden 2048, 32 heads of head_dim 128, 4 kv heads) over its dense
// MLP size (intermediate_size 6144).
clustersim::RunConfig qwen3_30b_attention(int32_t tp) {
  clustersim::RunConfig c;
  auto* m = c.mutable_model();
  m->set_num_layers(48);
  m->set_hidden_size(2048);
  m->set_num_heads(32);
  m->set_num_kv_heads(4);
  m->set_head_dim(128);
  m->set_ffn_hidden_size(6144);
  m->set_vocab_size(151936);
  m->set_seq_length(4096);
  m->set_activation(clustersim::ModelConfig::SWIGLU);
  auto* p = c.mutable_parallel();
  p->set_tp(tp);
  p->set_microbatch_size(1);
  p->set_global_batch_size(1);
  return c;
}

void expect_gemm(const LayerOp& op, int64_t m, int64_t n, int64_t k) {
  EXPECT_EQ(op.kernel.kind, KernelKind::kGemm) << op.name();
  EXPECT_EQ(op.kernel.m, m) << op.name();
  EXPECT_EQ(op.kernel.n, n) << op.name();
  EXPECT_EQ(op.kernel.k, k) << op.name();
}

TEST(Mla, DeepSeekV3AttentionParametersInClosedForm) {
  const ParamCounts p = count_params(deepseek_v3_attention(1, false).model());
  // W_DQ 7168 x 1536 = 11,010,048; W_UQ 1536 x 128·192 = 37,748,736; W_DKV 7168 x (512 + 64) =
  // 4,128,768; W_UKV 512 x 128·(128 + 128) = 16,777,216; W_O 128·128 x 7168 = 117,440,512.
  EXPECT_EQ(p.attention_per_layer, 11'010'048 + 37'748'736 + 4'128'768 + 16'777'216 + 117'440'512);
  EXPECT_EQ(p.attention_per_layer, 187'105'280);
  EXPECT_EQ(p.tp_replicated_per_layer, 11'010'048 + 4'128'768);
  EXPECT_EQ(p.norms_per_layer, 2 * 7168 + 1536 + 512);  // + q_a_layernorm, kv_a_layernorm
  // 61 layers hold 11.41B attention parameters of DeepSeek-V3's 671B.
  EXPECT_EQ(61 * p.attention_per_layer, 11'413'422'080);
  // On one of 8 TP ranks the down projections stay whole.
  EXPECT_EQ(p.per_layer_on_tp_rank(8),
            (187'105'280 - 15'138'816 + p.mlp_per_layer) / 8 + 15'138'816 + p.norms_per_layer);
  // Without q LoRA the queries are one h x a·qk matrix.
  auto no_q = deepseek_v3_attention(1, false);
  no_q.mutable_model()->mutable_mla()->set_q_lora_rank(0);
  const ParamCounts q = count_params(no_q.model());
  EXPECT_EQ(q.attention_per_layer, 7168LL * 128 * 192 + 4'128'768 + 16'777'216 + 117'440'512);
  EXPECT_EQ(q.tp_replicated_per_layer, 4'128'768);
}

TEST(Mla, StageParamsKeepTheDownProjectionsWholeOnEveryTpRank) {
  const auto c1 = deepseek_v3_attention(1, false);
  const auto c8 = deepseek_v3_attention(8, true);
  const ParamCounts p = count_params(c1.model());
  // One stage: 8 ranks together hold the model once plus 7 extra copies of the replicated parts.
  EXPECT_EQ(8 * stage_params(c8, 0) - stage_params(c1, 0),
            7 * 61 * (p.tp_replicated_per_layer + p.norms_per_layer) + 7 * 7168);
}

TEST(Mla, AttentionFlopsUseTheQueryKeyAndValueWidths) {
  const auto m = deepseek_v3_attention(1, false).model();
  // QKᵀ over 192 and PV over 128 per head: 6·L·s·a·(192 + 128).
  EXPECT_DOUBLE_EQ(attention_flops_per_token(m), 6.0 * 61 * 4096 * 128 * (192 + 128));
  const auto ops = layer_ops(deepseek_v3_attention(1, false), Phase::kForward);
  const LayerOp& attn = op_named(ops, "attn_fwd");
  EXPECT_EQ(attn.kernel.head_dim, 192);
  EXPECT_EQ(attn.kernel.heads, 128);
  EXPECT_DOUBLE_EQ(attn.kernel.flops, attention_flops_per_token(m) / 61 / 3 * 4096);
}

TEST(Mla, GemmShapesUnderTensorAndSequenceParallelism) {
  const int64_t T = 4096, local = T / 8, a = 128 / 8;
  const auto f = layer_ops(deepseek_v3_attention(8, true), Phase::kForward);
  expect_gemm(op_named(f, "q_down_fwd"), local, 1536, 7168);  // replicated, on the SP shard
  expect_gemm(op_named(f, "kv_down_fwd"), local, 512 + 64, 7168);
  expect_gemm(op_named(f, "q_up_fwd"), T, a * 192, 1536);
  expect_gemm(op_named(f, "kv_up_fwd"), T, a * (128 + 128), 512);
  expect_gemm(op_named(f, "proj_fwd"), T, 7168, a * 128);
  EXPECT_FALSE(has_op(f, "qkv_fwd"));
  const auto b = layer_ops(deepseek_v3_attention(8, true), Phase::kBackward);
  expect_gemm(op_named(b, "kv_up_dgrad"), T, 512, a * 256);
  expect_gemm(op_named(b, "q_down_dgrad"), local, 7168, 1536);
  const auto w = layer_ops(deepseek_v3_attention(8, true), Phase::kWeightGrad);
  expect_gemm(op_named(w, "kv_down_wgrad"), 7168, 512 + 64, local);
  expect_gemm(op_named(w, "q_up_wgrad"), 1536, a * 192, T);
  // The latent norms run on the SP shard: RMSNorm reads and writes q_lora (kv_lora) columns.
  EXPECT_DOUBLE_EQ(op_named(f, "q_norm_fwd").kernel.bytes, 4.0 * local * 1536);
  EXPECT_DOUBLE_EQ(op_named(b, "kv_norm_bwd").kernel.bytes, 6.0 * local * 512);
}

TEST(Mla, EachWeightHasOneGemmPerPhase) {
  for (bool sp : {false, true}) {
    const auto c = deepseek_v3_attention(4, sp);
    const double fwd = sum_flops(layer_ops(c, Phase::kForward), KernelKind::kGemm);
    EXPECT_DOUBLE_EQ(sum_flops(layer_ops(c, Phase::kBackward), KernelKind::kGemm), fwd);
    EXPECT_DOUBLE_EQ(sum_flops(layer_ops(c, Phase::kWeightGrad), KernelKind::kGemm), fwd);
    // Over the 4 ranks: 2·N·T, plus, without SP, 3 redundant copies of the replicated down
    // projections (every rank runs them on all T tokens).
    const ParamCounts p = count_params(c.model());
    const double n = static_cast<double>(p.attention_per_layer + p.mlp_per_layer);
    const double extra = sp ? 0.0 : 3.0 * static_cast<double>(p.tp_replicated_per_layer);
    EXPECT_DOUBLE_EQ(4 * fwd, 2.0 * 4096 * (n + extra)) << sp;
  }
}

TEST(Mla, TensorParallelTrafficIsAtLatentWidth) {
  const double T = 4096, e = 2.0;
  // SP: the latents and k_pe are all-gathered forward and reduce-scattered backward; only the
  // output projection's reduce-scatter (and its backward all-gather) is h wide.
  const auto f = layer_ops(deepseek_v3_attention(8, true), Phase::kForward);
  EXPECT_EQ(op_named(f, "mla_q_sp_ag").bytes, static_cast<Bytes>(T * 1536 * e));
  EXPECT_EQ(op_named(f, "mla_kv_sp_ag").bytes, static_cast<Bytes>(T * 512 * e));
  EXPECT_EQ(op_named(f, "mla_kpe_sp_ag").bytes, static_cast<Bytes>(T * 64 * e));
  EXPECT_EQ(op_named(f, "attn_sp_rs").bytes, static_cast<Bytes>(T * 7168 * e));
  EXPECT_FALSE(has_op(f, "attn_sp_ag"));
  const auto b = layer_ops(deepseek_v3_attention(8, true), Phase::kBackward);
  EXPECT_EQ(op_named(b, "mla_kv_sp_rs_bwd").comm.op, coll::Op::kReduceScatter);
  EXPECT_EQ(op_named(b, "mla_kpe_sp_rs_bwd").bytes, static_cast<Bytes>(T * 64 * e));
  EXPECT_EQ(op_named(b, "mla_q_sp_rs_bwd").bytes, static_cast<Bytes>(T * 1536 * e));
  EXPECT_FALSE(has_op(b, "attn_sp_rs_bwd"));
  const auto w = layer_ops(deepseek_v3_attention(8, true), Phase::kWeightGrad);
  EXPECT_EQ(op_named(w, "mla_kv_sp_ag_wgrad").bytes, static_cast<Bytes>(T * 512 * e));
  // No SP: one all-reduce forward (h), and the latent gradients' all-reduces backward.
  const auto fp = layer_ops(deepseek_v3_attention(8, false), Phase::kForward);
  EXPECT_EQ(op_named(fp, "attn_ar").bytes, static_cast<Bytes>(T * 7168 * e));
  EXPECT_FALSE(has_op(fp, "mla_q_sp_ag"));
  const auto bp = layer_ops(deepseek_v3_attention(8, false), Phase::kBackward);
  EXPECT_EQ(op_named(bp, "mla_kv_ar_bwd").bytes, static_cast<Bytes>(T * (512 + 64) * e));
  EXPECT_EQ(op_named(bp, "mla_q_ar_bwd").comm.op, coll::Op::kAllReduce);
  EXPECT_FALSE(has_op(bp, "attn_ar_bwd"));
  // No TP, no TP traffic.
  for (Phase ph : kAllPhases) {
    for (const LayerOp& op : layer_ops(deepseek_v3_attention(1, true), ph))
      EXPECT_FALSE(op.is_comm) << op.name();
  }
}

TEST(Mla, ActivationBytesPerLayerInClosedForm) {
  const double T = 4096, t = 8, h = 7168, ffn = 18432;
  const auto c = deepseek_v3_attention(8, true);
  // Norms 8h/t; latents 4·(1536 + 512)/t; Q and K 4·a·192/t, V and O 4·a·128/t; SwiGLU 6·ffn/t;
  // FlashAttention's log-sum-exp 4·a/t.
  const double expected = 8.0 * T * h / t + 4.0 * (1536 + 512) * T / t +
                          (4.0 * T * 128 * (192 + 128) + 6.0 * T * ffn) / t + 4.0 * 128 / t * T;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(c), expected);
}

TEST(HeadDim, Qwen3ThirtyBHeadsAreWiderThanHiddenOverHeads) {
  const auto c = qwen3_30b_attention(4);
  const ParamCounts p = count_params(c.model());
  // Wq 2048 x 32·128, Wk and Wv 2048 x 4·128, Wo 32·128 x 2048.
  EXPECT_EQ(p.attention_per_layer, 2048 * 4096 + 2 * 2048 * 512 + 4096 * 2048);
  EXPECT_EQ(p.tp_replicated_per_layer, 0);
  // Causal (the default): half of 12·L·(heads·head_dim)·s, the scores the kernels compute.
  EXPECT_DOUBLE_EQ(attention_flops_per_token(c.model()), 6.0 * 48 * (32 * 128) * 4096);
  const auto f = layer_ops(c, Phase::kForward);
  expect_gemm(op_named(f, "qkv_fwd"), 4096, (4096 + 2 * 512) / 4, 2048);
  expect_gemm(op_named(f, "proj_fwd"), 4096, 2048, 4096 / 4);
  const LayerOp& attn = op_named(f, "attn_fwd");
  EXPECT_EQ(attn.kernel.head_dim, 128);
  EXPECT_EQ(attn.kernel.heads, 32 / 4);
  // RoPE on this GPU's 8 query and 1 key heads of 128.
  EXPECT_DOUBLE_EQ(op_named(f, "rope_fwd").kernel.bytes, 2.0 * 2.0 * 4096 * (8 + 1) * 128);
}

TEST(HeadDim, ActivationsKeepQAndTheProjectionInputAtHeadsTimesHeadDim) {
  const double T = 4096, t = 4, h = 2048, ffn = 6144;
  const auto c = qwen3_30b_attention(4);
  const double expected =
      8.0 * T * h + (4.0 * T * 4096 + 4.0 * T * 512 + 6.0 * T * ffn) / t + 4.0 * 32 / t * T;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(c), expected);
  // The widest backward working set is still the SwiGLU fc1 here: 4·ffn/t + 2h per token.
  EXPECT_DOUBLE_EQ(backward_working_set_bytes(c), (4.0 * ffn / t + 2.0 * h) * T);
}

}  // namespace
}  // namespace cs::workload
