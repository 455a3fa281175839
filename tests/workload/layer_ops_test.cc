#include "sim/workload/layer_ops.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/coll/collective.h"
#include "sim/workload/model_math.h"

namespace cs::workload {
namespace {

constexpr Phase kPhases[] = {Phase::kForward, Phase::kBackward, Phase::kWeightGrad};

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

double sum_flops(const std::vector<LayerOp>& ops, compute::KernelKind kind) {
  double f = 0;
  for (const LayerOp& op : ops) {
    if (!op.is_comm && op.kernel.kind == kind) f += op.kernel.flops;
  }
  return f;
}

std::vector<LayerOp> comms(const std::vector<LayerOp>& ops) {
  std::vector<LayerOp> out;
  for (const LayerOp& op : ops) {
    if (op.is_comm) out.push_back(op);
  }
  return out;
}

coll::Op coll_op(CommKind k) {
  switch (k) {
    case CommKind::kTpAllReduce:
      return coll::Op::kAllReduce;
    case CommKind::kTpAllGather:
    case CommKind::kCpAllGather:
      return coll::Op::kAllGather;
    default:
      return coll::Op::kReduceScatter;
  }
}

// Bytes each rank puts on the wire: nccl-tests' bus factor times S.
double bus_bytes(const std::vector<LayerOp>& ops, int n) {
  double b = 0;
  for (const LayerOp& op : comms(ops))
    b += coll::bus_bandwidth_factor(coll_op(op.comm), n) * op.bytes;
  return b;
}

TEST(LayerOps, GemmFlopsOverAllGpusAreSixNTokens) {
  for (int32_t tp : {1, 2, 4}) {
    for (int32_t cp : {1, 2}) {
      const clustersim::RunConfig c = llama_like(tp, cp, tp > 1);
      double gemm = 0, attention_fwd = 0, attention_bwd = 0;
      for (Phase ph : kPhases) {
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
      EXPECT_EQ(op.comm, CommKind::kTpAllReduce);
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
      ag += op.comm == CommKind::kTpAllGather;
      rs += op.comm == CommKind::kTpReduceScatter;
    }
    EXPECT_EQ(ag, 2);
    EXPECT_EQ(rs, 2);
    EXPECT_DOUBLE_EQ(bus_bytes(layer_ops(sp, ph), t), bus_bytes(layer_ops(plain, ph), t));
  }
  // SP's wgrad re-gathers the two column-parallel inputs it stored sharded.
  const auto w = comms(layer_ops(sp, Phase::kWeightGrad));
  ASSERT_EQ(w.size(), 2u);
  for (const LayerOp& op : w) EXPECT_EQ(op.comm, CommKind::kTpAllGather);
  // No TP, no TP traffic.
  for (Phase ph : kPhases) EXPECT_TRUE(comms(layer_ops(llama_like(1, 1, true), ph)).empty());
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
        const bool splits =
            k.kind != compute::KernelKind::kMemoryBound || sp || k.name == "mlp_act_fwd";
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
    if (op.comm == CommKind::kCpAllGather) {
      EXPECT_EQ(op.bytes, kv);
      ++found;
    }
  }
  for (const LayerOp& op : comms(layer_ops(c, Phase::kBackward))) {
    if (op.comm == CommKind::kCpReduceScatter) {
      EXPECT_EQ(op.bytes, kv);
      ++found;
    }
  }
  EXPECT_EQ(found, 2);
  for (Phase ph : kPhases) {
    for (const LayerOp& op : comms(layer_ops(llama_like(2, 1, false), ph))) {
      EXPECT_NE(op.comm, CommKind::kCpAllGather);
      EXPECT_NE(op.comm, CommKind::kCpReduceScatter);
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
  EXPECT_EQ(emb[0].comm, CommKind::kTpAllReduce);
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
  EXPECT_DOUBLE_EQ(optimizer_op(1000).kernel.bytes, 28000);
  EXPECT_EQ(optimizer_op(1000).kernel.kind, compute::KernelKind::kMemoryBound);
}

TEST(LayerOps, Fp8HalvesGemmInputsNotFlops) {
  clustersim::RunConfig c = llama_like(2, 1, false);
  const auto bf16 = layer_ops(c, Phase::kForward);
  c.set_precision(clustersim::FP8);
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
}  // namespace cs::workload
