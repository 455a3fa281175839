#include "sim/workload/layer_ops.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/coll/collective.h"
#include "sim/workload/model_math.h"
#include "tests/support/layer_op_lookup.h"

namespace cs::workload {
namespace {

using testing_support::find_op;
using testing_support::kAllPhases;
using testing_support::sum_flops;

// A small Llama-like model: GQA (16 heads, 4 kv heads), SwiGLU.
clustersim::RunConfig llama_like(int32_t tp, int32_t cp, bool sp) {
  clustersim::RunConfig c;
  auto* m = c.mutable_model();
  m->set_num_layers(6);
  m->set_hidden_size(1024);
  m->set_num_heads(16);
  m->set_num_kv_heads(4);
  m->set_ffn_hidden_size(2816);
  m->set_vocab_size(32000);
  m->set_seq_length(2048);
  m->set_activation(clustersim::ModelConfig::SWIGLU);
  m->set_causal(false);
  auto* p = c.mutable_parallel();
  p->set_tp(tp);
  p->set_cp(cp);
  p->set_sequence_parallel(sp);
  p->set_microbatch_size(2);
  p->set_global_batch_size(2);
  return c;
}

std::vector<LayerOp> comms(const std::vector<LayerOp>& ops) {
  std::vector<LayerOp> out;
  for (const LayerOp& op : ops) {
    if (op.is_comm) out.push_back(op);
  }
  return out;
}

// Bytes each rank puts on the wire: nccl-tests' bus factor times S.
double bus_bytes(const std::vector<LayerOp>& ops, int n) {
  double b = 0;
  for (const LayerOp& op : comms(ops)) b += coll::bus_bandwidth_factor(op.comm.op, n) * op.bytes;
  return b;
}

TEST(LayerOps, GemmFlopsOverAllGpusAreSixNTokens) {
  for (int32_t tp : {1, 2, 4}) {
    for (int32_t cp : {1, 2}) {
      const clustersim::RunConfig c = llama_like(tp, cp, tp > 1);
      double gemm = 0, attention_fwd = 0, attention_bwd = 0;
      for (Phase ph : kAllPhases) {
        gemm += c.model().num_layers() * sum_flops(layer_ops(c, ph), compute::KernelKind::kGemm);
        gemm += sum_flops(head_ops(c, ph), compute::KernelKind::kGemm);
        gemm += sum_flops(embedding_ops(c, ph), compute::KernelKind::kGemm);
      }
      attention_fwd = c.model().num_layers() *
                      sum_flops(layer_ops(c, Phase::kForward), compute::KernelKind::kAttention);
      attention_bwd = c.model().num_layers() *
                      sum_flops(layer_ops(c, Phase::kBackward), compute::KernelKind::kAttention);
      const double gpus = tp * cp;
      const double tokens = 2.0 * 2048;  // one microbatch of 2 sequences
      const double n = static_cast<double>(count_params(c.model()).dense_matmul());
      EXPECT_NEAR(gemm * gpus, 6.0 * n * tokens, 1e-12 * gemm * gpus) << tp << " " << cp;
      // Attention: the forward is a third of 12·L·h·s per token; FlashAttention's backward is
      // 2.5x its forward (it recomputes QKᵀ) where the MFU convention counts 2x.
      const double model_attention = attention_flops_per_token(c.model()) * tokens;
      EXPECT_NEAR(attention_fwd * gpus, model_attention / 3, 1e-12 * model_attention);
      EXPECT_NEAR(attention_bwd * gpus, 2.5 * model_attention / 3, 1e-12 * model_attention);
    }
  }
}

TEST(LayerOps, EachPhaseHasOneGemmPerWeightWithForwardFlops) {
  const clustersim::RunConfig c = llama_like(2, 1, false);
  const double f = sum_flops(layer_ops(c, Phase::kForward), compute::KernelKind::kGemm);
  EXPECT_DOUBLE_EQ(sum_flops(layer_ops(c, Phase::kBackward), compute::KernelKind::kGemm), f);
  EXPECT_DOUBLE_EQ(sum_flops(layer_ops(c, Phase::kWeightGrad), compute::KernelKind::kGemm), f);
  const auto& m = c.model();
  const double tokens = 2.0 * 2048;
  const ParamCounts p = count_params(m);
  EXPECT_DOUBLE_EQ(f, 2.0 * tokens * (p.attention_per_layer + p.mlp_per_layer) / 2);
  for (const LayerOp& op : layer_ops(c, Phase::kWeightGrad)) {
    ASSERT_FALSE(op.is_comm);
    EXPECT_EQ(op.kernel.kind, compute::KernelKind::kGemm);
  }
}

TEST(LayerOps, TensorParallelTrafficIsMegatrons) {
  const int32_t t = 4;
  const double s_bytes = 2.0 * 2048 * 1024 * 2;  // b·s·h·2
  const clustersim::RunConfig plain = llama_like(t, 1, false);
  for (Phase ph : {Phase::kForward, Phase::kBackward}) {
    const auto cs = comms(layer_ops(plain, ph));
    ASSERT_EQ(cs.size(), 2u);
    for (const LayerOp& op : cs) {
      EXPECT_EQ(op.comm, (LayerComm{Dim::kTp, coll::Op::kAllReduce}));
      EXPECT_EQ(op.bytes, s_bytes);
    }
  }
  EXPECT_TRUE(comms(layer_ops(plain, Phase::kWeightGrad)).empty());

  // SP: an all-gather and a reduce-scatter of the same S replace each all-reduce, same bus bytes.
  const clustersim::RunConfig sp = llama_like(t, 1, true);
  for (Phase ph : {Phase::kForward, Phase::kBackward}) {
    const auto cs = comms(layer_ops(sp, ph));
    ASSERT_EQ(cs.size(), 4u);
    int ag = 0, rs = 0;
    for (const LayerOp& op : cs) {
      EXPECT_EQ(op.bytes, s_bytes);
      ag += op.comm == (LayerComm{Dim::kTp, coll::Op::kAllGather});
      rs += op.comm == (LayerComm{Dim::kTp, coll::Op::kReduceScatter});
    }
    EXPECT_EQ(ag, 2);
    EXPECT_EQ(rs, 2);
    EXPECT_DOUBLE_EQ(bus_bytes(layer_ops(sp, ph), t), bus_bytes(layer_ops(plain, ph), t));
  }
  // SP's wgrad re-gathers the two column-parallel inputs it stored sharded.
  const auto w = comms(layer_ops(sp, Phase::kWeightGrad));
  ASSERT_EQ(w.size(), 2u);
  for (const LayerOp& op : w) EXPECT_EQ(op.comm, (LayerComm{Dim::kTp, coll::Op::kAllGather}));
  // No TP, no TP traffic.
  for (Phase ph : kAllPhases) EXPECT_TRUE(comms(layer_ops(llama_like(1, 1, true), ph)).empty());
}

TEST(LayerOps, ComputeScalesAsOneOverTp) {
  const auto one = layer_ops(llama_like(1, 1, false), Phase::kForward);
  for (int32_t t : {2, 4}) {
    for (bool sp : {false, true}) {
      std::vector<LayerOp> split;
      for (const LayerOp& op : layer_ops(llama_like(t, 1, sp), Phase::kForward)) {
        if (!op.is_comm) split.push_back(op);
      }
      ASSERT_EQ(split.size(), one.size());
      for (size_t i = 0; i < one.size(); ++i) {
        EXPECT_EQ(split[i].kernel.name, one[i].kernel.name);
        const compute::Kernel& k = split[i].kernel;
        // Norms and residuals are replicated over TP ranks unless SP splits their tokens.
        const bool splits = k.kind != compute::KernelKind::kMemoryBound || sp ||
                            k.name == "mlp_act_fwd" || k.name == "rope_fwd";
        const double factor = splits ? t : 1;
        EXPECT_DOUBLE_EQ(k.flops * factor, one[i].kernel.flops) << k.name;
        if (k.kind == compute::KernelKind::kMemoryBound) {
          EXPECT_DOUBLE_EQ(k.bytes * factor, one[i].kernel.bytes) << k.name;
        }
      }
    }
  }
}

TEST(LayerOps, GemmShapesAfterSplits) {
  const clustersim::RunConfig c = llama_like(4, 2, false);
  const auto ops = layer_ops(c, Phase::kForward);
  const int64_t tokens = 2 * 2048 / 2;
  for (const LayerOp& op : ops) {
    if (op.is_comm || op.kernel.kind != compute::KernelKind::kGemm) continue;
    EXPECT_EQ(op.kernel.m, tokens);
    if (op.kernel.name == "qkv_fwd") {
      EXPECT_EQ(op.kernel.n, (1024 + 2 * 4 * 64) / 4);
      EXPECT_EQ(op.kernel.k, 1024);
    } else if (op.kernel.name == "proj_fwd") {
      EXPECT_EQ(op.kernel.k, 1024 / 4);
    } else if (op.kernel.name == "mlp_up_fwd") {
      EXPECT_EQ(op.kernel.n, 2 * 2816 / 4);
    } else if (op.kernel.name == "mlp_down_fwd") {
      EXPECT_EQ(op.kernel.k, 2816 / 4);
    }
  }
  for (const LayerOp& op : ops) {
    if (op.kernel.kind == compute::KernelKind::kAttention) {
      EXPECT_EQ(op.kernel.heads, 2 * 16 / 4);
      EXPECT_EQ(op.kernel.seq_q, 2048 / 2);
      EXPECT_EQ(op.kernel.seq_kv, 2048);
      EXPECT_EQ(op.kernel.head_dim, 64);
    }
  }
}

TEST(LayerOps, ContextParallelMovesKeysAndValues) {
  const clustersim::RunConfig c = llama_like(2, 4, false);
  // K and V of the whole sequence for this GPU's kv heads: 2 x b·s·(kv/t)·d x 2 bytes.
  const Bytes kv = 2LL * 2 * 2048 * (4 / 2) * 64 * 2;
  int found = 0;
  for (const LayerOp& op : comms(layer_ops(c, Phase::kForward))) {
    if (op.comm == (LayerComm{Dim::kCp, coll::Op::kAllGather})) {
      EXPECT_EQ(op.bytes, kv);
      ++found;
    }
  }
  for (const LayerOp& op : comms(layer_ops(c, Phase::kBackward))) {
    if (op.comm == (LayerComm{Dim::kCp, coll::Op::kReduceScatter})) {
      EXPECT_EQ(op.bytes, kv);
      ++found;
    }
  }
  EXPECT_EQ(found, 2);
  for (Phase ph : kAllPhases) {
    for (const LayerOp& op : comms(layer_ops(llama_like(2, 1, false), ph))) {
      EXPECT_NE(op.comm, (LayerComm{Dim::kCp, coll::Op::kAllGather}));
      EXPECT_NE(op.comm, (LayerComm{Dim::kCp, coll::Op::kReduceScatter}));
    }
  }
}

TEST(LayerOps, RecomputeMatchesHardwareFlops) {
  for (auto r : {clustersim::ParallelConfig::SELECTIVE, clustersim::ParallelConfig::FULL}) {
    clustersim::RunConfig c = llama_like(2, 2, true);
    c.mutable_parallel()->set_recompute(r);
    const auto ops = layer_recompute_ops(c);
    const double per_gpu = sum_flops(ops, compute::KernelKind::kGemm) +
                           sum_flops(ops, compute::KernelKind::kAttention);
    // One microbatch is the whole global batch here.
    EXPECT_NEAR(per_gpu * c.model().num_layers() * 4,
                hardware_flops_per_step(c) - model_flops_per_step(c), 1e-9 * per_gpu);
  }
  EXPECT_TRUE(layer_recompute_ops(llama_like(2, 2, true)).empty());
}

TEST(LayerOps, EmbeddingHeadAndOptimizer) {
  const clustersim::RunConfig c = llama_like(4, 1, false);
  const auto emb = comms(embedding_ops(c, Phase::kForward));
  ASSERT_EQ(emb.size(), 1u);
  EXPECT_EQ(emb[0].comm, (LayerComm{Dim::kTp, coll::Op::kAllReduce}));
  const auto head = head_ops(c, Phase::kForward);
  bool logits = false;
  for (const LayerOp& op : head) {
    if (op.name() == "logits_fwd") {
      logits = true;
      EXPECT_EQ(op.kernel.n, 32000 / 4);
    }
    if (op.name() == "loss_ar") {
      EXPECT_EQ(op.bytes, 3 * 4 * 2 * 2048);
    }
  }
  EXPECT_TRUE(logits);
  // Padded vocabulary: 32001 splits as 4 x 8001.
  clustersim::RunConfig odd = c;
  odd.mutable_model()->set_vocab_size(32001);
  for (const LayerOp& op : head_ops(odd, Phase::kForward)) {
    if (op.name() == "logits_fwd") {
      EXPECT_EQ(op.kernel.n, 8001);
    }
  }
}

TEST(LayerOps, Fp8HalvesGemmInputsNotFlops) {
  clustersim::RunConfig c = llama_like(2, 1, false);
  const auto bf16 = layer_ops(c, Phase::kForward);
  c.set_precision(clustersim::FP8);
  c.mutable_effects()->set_fp8_casts(false);  // same op list, only the GEMMs change
  const auto fp8 = layer_ops(c, Phase::kForward);
  ASSERT_EQ(bf16.size(), fp8.size());
  for (size_t i = 0; i < fp8.size(); ++i) {
    if (fp8[i].is_comm || fp8[i].kernel.kind != compute::KernelKind::kGemm) continue;
    const auto& k = fp8[i].kernel;
    EXPECT_EQ(fp8[i].precision, compute::Precision::kFp8);
    EXPECT_EQ(bf16[i].precision, compute::Precision::kBf16);
    EXPECT_DOUBLE_EQ(k.flops, bf16[i].kernel.flops);
    EXPECT_DOUBLE_EQ(k.bytes, 1.0 * (k.m * k.k + k.k * k.n) + 2.0 * k.m * k.n);
  }
}

}  // namespace

std::vector<LayerOp> all_ops(const clustersim::RunConfig& c) {
  std::vector<LayerOp> out;
  for (Phase ph : kAllPhases) {
    for (const auto& list : {layer_ops(c, ph), embedding_ops(c, ph), head_ops(c, ph)})
      out.insert(out.end(), list.begin(), list.end());
  }
  const auto rec = layer_recompute_ops(c);
  out.insert(out.end(), rec.begin(), rec.end());
  const auto opt = optimizer_ops(c, 1000, 1000, 4000);
  out.insert(out.end(), opt.begin(), opt.end());
  return out;
}

double group_bytes(const std::vector<LayerOp>& ops, compute::KernelGroup g) {
  double b = 0;
  for (const LayerOp& op : ops)
    if (!op.is_comm && op.kernel.group == g) b += op.kernel.bytes;
  return b;
}

bool has_name_part(const std::vector<LayerOp>& ops, std::string_view part) {
  for (const LayerOp& op : ops)
    if (op.name().find(part) != std::string_view::npos) return true;
  return false;
}

// GPT-3 style: LayerNorm, learned positions, biases, dropout 0.1, GeLU, unfused attention.
clustersim::RunConfig gpt_like(int32_t tp, bool sp) {
  clustersim::RunConfig c = llama_like(tp, 1, sp);
  auto* m = c.mutable_model();
  m->set_num_kv_heads(0);
  m->set_activation(clustersim::ModelConfig::GELU);
  m->set_ffn_hidden_size(4096);
  m->set_norm(clustersim::ModelConfig::LAYERNORM);
  m->set_position_embedding(clustersim::ModelConfig::LEARNED);
  m->set_add_bias(true);
  m->set_hidden_dropout(0.1);
  m->set_attention_dropout(0.1);
  m->set_attention(clustersim::ModelConfig::UNFUSED);
  return c;
}

TEST(LayerKernels, NormBytesAreOneReadOneWriteForwardTwoReadsOneWriteBackward) {
  for (bool sp : {false, true}) {
    const clustersim::RunConfig c = llama_like(4, 1, sp);
    const double n = 2.0 * 2048 / (sp ? 4 : 1) * 1024;  // T (/ tp under SP) x h
    EXPECT_DOUBLE_EQ(find_op(layer_ops(c, Phase::kForward), "ln1_fwd")->kernel.bytes, 2 * 2 * n);
    EXPECT_DOUBLE_EQ(find_op(layer_ops(c, Phase::kBackward), "ln2_bwd")->kernel.bytes, 3 * 2 * n);
    EXPECT_EQ(find_op(layer_ops(c, Phase::kForward), "ln1_fwd")->kernel.group,
              compute::KernelGroup::kNorm);
  }
  // LayerNorm moves the same bytes and does more arithmetic (the mean).
  clustersim::RunConfig ln = llama_like(1, 1, false);
  ln.mutable_model()->set_norm(clustersim::ModelConfig::LAYERNORM);
  const auto rms_ops = layer_ops(llama_like(1, 1, false), Phase::kForward);
  const auto ln_ops = layer_ops(ln, Phase::kForward);
  const auto& rms = find_op(rms_ops, "ln1_fwd")->kernel;
  const auto& layer = find_op(ln_ops, "ln1_fwd")->kernel;
  EXPECT_DOUBLE_EQ(layer.bytes, rms.bytes);
  EXPECT_GT(layer.flops, rms.flops);
}

TEST(LayerKernels, RopeOnQueryAndKeyHeadsOnlyWithRotaryPositions) {
  const clustersim::RunConfig c = llama_like(2, 1, true);
  // Q and K of this GPU's heads: T x (16 + 4) / 2 heads x 64, read and written in bf16.
  const double n = 2.0 * 2048 * (16 + 4) / 2 * 64;
  EXPECT_DOUBLE_EQ(find_op(layer_ops(c, Phase::kForward), "rope_fwd")->kernel.bytes, 2 * 2 * n);
  EXPECT_DOUBLE_EQ(find_op(layer_ops(c, Phase::kBackward), "rope_bwd")->kernel.bytes, 2 * 2 * n);
  EXPECT_EQ(find_op(embedding_ops(c, Phase::kForward), "position_embedding_fwd"), nullptr);
  clustersim::RunConfig learned = c;
  learned.mutable_model()->set_position_embedding(clustersim::ModelConfig::LEARNED);
  for (Phase ph : kAllPhases) EXPECT_FALSE(has_name_part(layer_ops(learned, ph), "rope"));
  // Learned positions: added once, on the first stage (embedding_ops), over T x h.
  EXPECT_DOUBLE_EQ(
      find_op(embedding_ops(learned, Phase::kForward), "position_embedding_fwd")->kernel.bytes,
      3 * 2 * 2.0 * 2048 * 1024);
  EXPECT_NE(find_op(embedding_ops(learned, Phase::kWeightGrad), "position_embedding_wgrad"),
            nullptr);
}

TEST(LayerKernels, DropoutKernelsAndMasksOnlyWhereTheModelHasDropout) {
  const clustersim::RunConfig none = llama_like(2, 1, false);
  EXPECT_FALSE(has_name_part(all_ops(none), "dropout"));
  const double n = 2.0 * 2048 * 1024;
  // Bias-dropout-add without dropout: read x and the residual, write the sum.
  EXPECT_DOUBLE_EQ(find_op(layer_ops(none, Phase::kForward), "attn_residual_fwd")->kernel.bytes,
                   3 * 2 * n);
  clustersim::RunConfig hidden = none;
  hidden.mutable_model()->set_hidden_dropout(0.1);
  EXPECT_DOUBLE_EQ(find_op(layer_ops(hidden, Phase::kForward), "attn_residual_fwd")->kernel.bytes,
                   3 * 2 * n + n);  // + the 1-byte mask
  EXPECT_DOUBLE_EQ(find_op(layer_ops(hidden, Phase::kBackward), "mlp_dropout_bwd")->kernel.bytes,
                   (2 * 2 + 1) * n);
  EXPECT_NE(find_op(embedding_ops(hidden, Phase::kForward), "embedding_dropout_fwd"), nullptr);
  // Attention dropout runs as its own kernel only on the unfused path (FlashAttention applies it
  // inside the kernel from its RNG state).
  clustersim::RunConfig attn = none;
  attn.mutable_model()->set_attention_dropout(0.1);
  EXPECT_FALSE(has_name_part(all_ops(attn), "dropout"));
  attn.mutable_model()->set_attention(clustersim::ModelConfig::UNFUSED);
  const double scores = 2.0 * 16 / 2 * 2048 * 2048;  // b x heads/tp x s x s
  EXPECT_DOUBLE_EQ(find_op(layer_ops(attn, Phase::kForward), "attn_dropout_fwd")->kernel.bytes,
                   (2 * 2 + 1) * scores);
  EXPECT_NE(find_op(layer_ops(attn, Phase::kBackward), "attn_dropout_bwd"), nullptr);
}

TEST(LayerKernels, BiasAddsAndGradientsOnlyWithBiases) {
  const clustersim::RunConfig c = gpt_like(2, false);
  const int64_t qkv_n = 3 * 1024 / 2;
  const double T = 2.0 * 2048;
  EXPECT_DOUBLE_EQ(find_op(layer_ops(c, Phase::kForward), "qkv_bias_fwd")->kernel.bytes,
                   2 * 2 * T * qkv_n);
  const auto w = layer_ops(c, Phase::kWeightGrad);
  EXPECT_DOUBLE_EQ(find_op(w, "qkv_bias_grad")->kernel.bytes, 2 * T * qkv_n);
  EXPECT_DOUBLE_EQ(find_op(w, "mlp_up_bias_grad")->kernel.bytes, 2 * T * 4096 / 2);
  EXPECT_NE(find_op(w, "proj_bias_grad"), nullptr);
  EXPECT_NE(find_op(w, "mlp_down_bias_grad"), nullptr);
  clustersim::RunConfig no_bias = c;
  no_bias.mutable_model()->set_add_bias(false);
  EXPECT_FALSE(has_name_part(all_ops(no_bias), "bias"));
}

TEST(LayerKernels, UnfusedAttentionHasTheScoreGemmsAndSoftmaxInHbm) {
  const clustersim::RunConfig c = gpt_like(2, false);
  const int64_t bh = 2 * 16 / 2, s = 2048, d = 64;
  const auto fwd = layer_ops(c, Phase::kForward);
  const compute::Kernel& scores = find_op(fwd, "attn_scores_fwd")->kernel;
  EXPECT_EQ(scores.kind, compute::KernelKind::kGemm);
  EXPECT_EQ(scores.batch, bh);
  // Q·Kᵀ per head: 2·s·s·d FLOPs, the whole square (the causal mask is applied in the softmax).
  EXPECT_DOUBLE_EQ(scores.flops, 2.0 * bh * s * s * d);
  EXPECT_DOUBLE_EQ(find_op(fwd, "attn_context_fwd")->kernel.flops, 2.0 * bh * s * s * d);
  EXPECT_DOUBLE_EQ(find_op(fwd, "attn_softmax_fwd")->kernel.bytes, 2 * 2.0 * bh * s * s);
  EXPECT_EQ(find_op(fwd, "attn_fwd"), nullptr);
  // Backward: four GEMMs of the forward's shape (dV, dP, dQ, dK).
  double bwd_gemm = 0;
  for (const LayerOp& op : layer_ops(c, Phase::kBackward))
    if (op.kernel.group == compute::KernelGroup::kAttention &&
        op.kernel.kind == compute::KernelKind::kGemm)
      bwd_gemm += op.kernel.flops;
  EXPECT_DOUBLE_EQ(bwd_gemm, 2 * 2 * 2.0 * bh * s * s * d);
  EXPECT_DOUBLE_EQ(find_op(layer_ops(c, Phase::kBackward), "attn_softmax_bwd")->kernel.bytes,
                   3 * 2.0 * bh * s * s);
  // Selective recompute re-runs the unfused core.
  clustersim::RunConfig sel = c;
  sel.mutable_parallel()->set_recompute(clustersim::ParallelConfig::SELECTIVE);
  EXPECT_NE(find_op(layer_recompute_ops(sel), "attn_scores_fwd"), nullptr);
  // GQA repeats K and V to every query head first.
  clustersim::RunConfig gqa = llama_like(2, 1, false);
  gqa.mutable_model()->set_attention(clustersim::ModelConfig::UNFUSED);
  EXPECT_NE(find_op(layer_ops(gqa, Phase::kForward), "attn_kv_repeat_fwd"), nullptr);
}

TEST(LayerKernels, ModelFlopsDoNotChangeWithKernelsAroundTheGemms) {
  const clustersim::RunConfig flash = llama_like(2, 1, false);
  clustersim::RunConfig other = gpt_like(2, false);
  other.mutable_model()->set_num_kv_heads(4);
  other.mutable_model()->set_activation(clustersim::ModelConfig::SWIGLU);
  other.mutable_model()->set_ffn_hidden_size(2816);
  other.mutable_model()->set_add_bias(false);
  other.mutable_model()->set_position_embedding(clustersim::ModelConfig::ROPE);
  EXPECT_DOUBLE_EQ(model_flops_per_step(other), model_flops_per_step(flash));
  other.set_precision(clustersim::FP8);
  EXPECT_DOUBLE_EQ(model_flops_per_step(other), model_flops_per_step(flash));
}

TEST(LayerKernels, CrossEntropyIsMegatronsFp32PassesOverTheVocabularyShard) {
  const clustersim::RunConfig c = llama_like(4, 1, false);
  const double logits = 2.0 * 2048 * 32000 / 4;
  // cast (2 + 4), max (4), subtract (8), exp (8), sum (4), divide (8) bytes per logit.
  EXPECT_DOUBLE_EQ(group_bytes(head_ops(c, Phase::kForward), compute::KernelGroup::kLoss),
                   38 * logits);
  // scale by the loss gradient (8), cast back to bf16 (6).
  EXPECT_DOUBLE_EQ(group_bytes(head_ops(c, Phase::kBackward), compute::KernelGroup::kLoss),
                   14 * logits);
}

TEST(LayerKernels, Fp8CastsEveryTensorEnteringALayerGemmOnlyUnderFp8) {
  clustersim::RunConfig c = llama_like(2, 1, false);
  EXPECT_EQ(group_bytes(all_ops(c), compute::KernelGroup::kFp8Cast), 0);
  c.set_precision(clustersim::FP8);
  const double T = 2.0 * 2048, h = 1024, t = 2;
  const double qkv_n = (1024 + 2 * 4 * 64) / t, up_n = 2 * 2816 / t, ffn = 2816 / t;
  // cast_transpose: read 2 bytes, write the FP8 tensor and its transpose.
  EXPECT_DOUBLE_EQ(group_bytes(layer_ops(c, Phase::kForward), compute::KernelGroup::kFp8Cast),
                   4 * T * (h / t + ffn));
  EXPECT_DOUBLE_EQ(group_bytes(layer_ops(c, Phase::kBackward), compute::KernelGroup::kFp8Cast),
                   4 * T * (h + up_n + h + qkv_n));
  // The two norm-fed inputs are transposed for wgrad (1 + 1 bytes).
  EXPECT_DOUBLE_EQ(group_bytes(layer_ops(c, Phase::kWeightGrad), compute::KernelGroup::kFp8Cast),
                   2 * 2 * T * h);
  // The norms write FP8 themselves: 2 + 1 bytes per element.
  EXPECT_DOUBLE_EQ(find_op(layer_ops(c, Phase::kForward), "ln1_fwd")->kernel.bytes, 3 * T * h);
  // Weights once per step: cast + transpose, 4 bytes per weight.
  EXPECT_DOUBLE_EQ(find_op(optimizer_ops(c, 100, 5000, 800), "fp8_weight_cast")->kernel.bytes,
                   4 * 5000);
  EXPECT_NE(find_op(optimizer_ops(c, 100, 5000, 800), "fp8_scale_update"), nullptr);
  // The output layer stays BF16.
  EXPECT_EQ(find_op(head_ops(c, Phase::kForward), "logits_fwd")->precision,
            compute::Precision::kBf16);
}

TEST(LayerKernels, OptimizerStepAndGradNormOverTheShard) {
  clustersim::RunConfig c = llama_like(2, 1, false);
  c.mutable_effects()->set_grad_buffer_kernels(false);
  const auto ops = optimizer_ops(c, 1000, 0, 8000);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].name(), "grad_norm");            // clipping needs the norm before the step
  EXPECT_DOUBLE_EQ(ops[0].kernel.bytes, 4 * 1000);  // fp32 main gradients
  EXPECT_DOUBLE_EQ(ops[1].kernel.bytes, 30 * 1000);
  c.mutable_parallel()->set_grad_reduce_dtype(clustersim::ParallelConfig::GRAD_BF16);
  EXPECT_DOUBLE_EQ(find_op(optimizer_ops(c, 1000, 0, 8000), "grad_norm")->kernel.bytes, 2 * 1000);
  EXPECT_DOUBLE_EQ(find_op(optimizer_ops(c, 1000, 0, 8000), "adam_step")->kernel.bytes, 28 * 1000);
}

// Megatron DDP's buffer holds every local gradient (ZeRO-1 shards only the optimizer states):
// one read for the NaN check and one zeroing write per step, at the buffer's element size.
TEST(LayerKernels, GradBufferIsCheckedAndZeroedWholeOncePerStep) {
  clustersim::RunConfig c = llama_like(2, 1, false);
  const auto ops = optimizer_ops(c, 1000, 0, 8000);
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].name(), "grad_buffer_nan_check");
  EXPECT_EQ(ops[1].name(), "grad_buffer_zero");
  EXPECT_DOUBLE_EQ(ops[0].kernel.bytes, 4 * 8000);
  EXPECT_DOUBLE_EQ(ops[1].kernel.bytes, 4 * 8000);
  EXPECT_EQ(ops[1].kernel.group, compute::KernelGroup::kGradBuffer);
  c.mutable_parallel()->set_grad_reduce_dtype(clustersim::ParallelConfig::GRAD_BF16);
  EXPECT_DOUBLE_EQ(find_op(optimizer_ops(c, 1000, 0, 8000), "grad_buffer_zero")->kernel.bytes,
                   2 * 8000);
}

// The embedding's weight gradient is dense over the vocabulary shard: zero-filled (bf16), then
// added into the fp32 main_grad (read 2 + 4, write 4), every microbatch, whatever the tokens.
TEST(LayerKernels, EmbeddingGradientIsDenseOverTheVocabularyShard) {
  for (const int32_t tp : {1, 2}) {
    const clustersim::RunConfig c = llama_like(tp, 1, false);
    const double rows = 32000.0 / tp * 1024;  // 32000 is a multiple of 128 x tp: no padding
    const auto w = embedding_ops(c, Phase::kWeightGrad);
    ASSERT_NE(find_op(w, "embedding_grad_zero"), nullptr);
    EXPECT_DOUBLE_EQ(find_op(w, "embedding_grad_zero")->kernel.bytes, 2 * rows);
    EXPECT_DOUBLE_EQ(find_op(w, "embedding_main_grad_add")->kernel.bytes, 10 * rows);
    EXPECT_DOUBLE_EQ(group_bytes(w, compute::KernelGroup::kEmbeddingGrad), 12 * rows);
  }
}

TEST(LayerKernels, EachEffectSwitchRemovesExactlyItsGroup) {
  struct Switch {
    void (clustersim::EffectsConfig::*set)(bool);
    compute::KernelGroup group;
  };
  const Switch switches[] = {
      {&clustersim::EffectsConfig::set_norm_kernels, compute::KernelGroup::kNorm},
      {&clustersim::EffectsConfig::set_elementwise_kernels, compute::KernelGroup::kElementwise},
      {&clustersim::EffectsConfig::set_loss_kernels, compute::KernelGroup::kLoss},
      {&clustersim::EffectsConfig::set_fp8_casts, compute::KernelGroup::kFp8Cast},
      {&clustersim::EffectsConfig::set_grad_norm, compute::KernelGroup::kGradNorm},
      {&clustersim::EffectsConfig::set_embedding_dense_grad, compute::KernelGroup::kEmbeddingGrad},
      {&clustersim::EffectsConfig::set_grad_buffer_kernels, compute::KernelGroup::kGradBuffer}};
  clustersim::RunConfig on = gpt_like(2, true);
  on.set_precision(clustersim::FP8);
  const auto all = all_ops(on);
  for (const Switch& sw : switches) {
    EXPECT_GT(group_bytes(all, sw.group), 0) << compute::to_string(sw.group);
    clustersim::RunConfig off = on;
    (off.mutable_effects()->*sw.set)(false);
    const auto fewer = all_ops(off);
    EXPECT_EQ(group_bytes(fewer, sw.group), 0) << compute::to_string(sw.group);
    for (auto g : {compute::KernelGroup::kGemm, compute::KernelGroup::kAttention,
                   compute::KernelGroup::kOptimizer, compute::KernelGroup::kNorm,
                   compute::KernelGroup::kElementwise, compute::KernelGroup::kLoss}) {
      if (g == sw.group) continue;
      // The norms write FP8 only while the casts are modelled.
      if (sw.group == compute::KernelGroup::kFp8Cast && g == compute::KernelGroup::kNorm) continue;
      EXPECT_DOUBLE_EQ(group_bytes(fewer, g), group_bytes(all, g)) << compute::to_string(g);
    }
  }
}

}  // namespace cs::workload
