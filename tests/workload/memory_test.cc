#include "sim/workload/memory.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/workload/model_math.h"

namespace cs::workload {
namespace {

using clustersim::ParallelConfig;

// GPT-3 175B as in Korthikanti et al. 2022, Table 3: t = 8, micro-batch 1.
clustersim::RunConfig gpt3(int32_t tp, bool sp) {
  clustersim::RunConfig c;
  auto* m = c.mutable_model();
  m->set_num_layers(96);
  m->set_hidden_size(12288);
  m->set_num_heads(96);
  m->set_ffn_hidden_size(4 * 12288);
  m->set_vocab_size(51200);
  m->set_seq_length(2048);
  auto* p = c.mutable_parallel();
  p->set_tp(tp);
  p->set_sequence_parallel(sp);
  p->set_microbatch_size(1);
  p->set_global_batch_size(64);
  return c;
}

constexpr MemoryOptions kPaper{.flash_attention = false};

TEST(Memory, ZeroModelStatesFor7_5BOn64Gpus) {
  // Rajbhandari et al. 2020, Figure 1: Psi = 7.5B, Nd = 64, K = 12.
  const double expected_gb[] = {120.0, 31.4, 16.6, 1.9};
  for (int32_t stage = 0; stage <= 3; ++stage) {
    EXPECT_NEAR(model_state_bytes(7.5e9, stage, 64).total() / 1e9, expected_gb[stage], 0.05)
        << "ZeRO stage " << stage;
  }
  const ModelStateBytes z1 = model_state_bytes(7.5e9, 1, 64);
  EXPECT_DOUBLE_EQ(z1.weights, 15e9);
  EXPECT_DOUBLE_EQ(z1.gradients, 15e9);
  EXPECT_DOUBLE_EQ(z1.optimizer, 90e9 / 64);
}

TEST(Memory, ModelStatesOfAConfigFollowItsParameters) {
  // A 7.5B-class GPT (h 4096, 36 layers): the breakdown is exactly 2/2/12 bytes over its params.
  clustersim::RunConfig c = gpt3(1, false);
  c.mutable_model()->set_num_layers(36);
  c.mutable_model()->set_hidden_size(4096);
  c.mutable_model()->set_num_heads(32);
  c.mutable_model()->set_ffn_hidden_size(4 * 4096);
  c.mutable_parallel()->set_dp(64);
  c.mutable_parallel()->set_zero_stage(2);
  const MemoryBreakdown b = estimate_memory(c, 1);
  const int64_t n = count_params(c.model()).total();
  EXPECT_EQ(b.params, n);
  EXPECT_EQ(b.weights, 2 * n);
  EXPECT_NEAR(static_cast<double>(b.gradients), 2.0 * n / 64, 1);
  EXPECT_NEAR(static_cast<double>(b.optimizer), 12.0 * n / 64, 1);
  EXPECT_EQ(b.total(), b.weights + b.gradients + b.optimizer + b.activations + b.temporary);
}

TEST(Memory, KorthikantiActivationFormulasExactly) {
  const double s = 2048, b = 1, h = 12288, a = 96;
  // No parallelism: s·b·h·(34 + 5as/h).
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3(1, false), kPaper),
                   s * b * h * (34 + 5 * a * s / h));
  for (int32_t t : {2, 4, 8}) {
    // TP: s·b·h·(10 + 24/t + 5as/(ht)).
    EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3(t, false), kPaper),
                     s * b * h * (10 + 24.0 / t + 5 * a * s / (h * t)));
    // TP + SP: s·b·h·(34/t + 5as/(ht)).
    EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3(t, true), kPaper),
                     s * b * h * (34.0 / t + 5 * a * s / (h * t)));
    // Selective recompute drops the 5as/h term.
    clustersim::RunConfig c = gpt3(t, true);
    c.mutable_parallel()->set_recompute(ParallelConfig::SELECTIVE);
    EXPECT_DOUBLE_EQ(layer_activation_bytes(c, kPaper), s * b * h * 34.0 / t);
    // Full recompute keeps the layer input, 2sbh (sharded under SP).
    c.mutable_parallel()->set_recompute(ParallelConfig::FULL);
    EXPECT_DOUBLE_EQ(layer_activation_bytes(c, kPaper), 2 * s * b * h / t);
    c.mutable_parallel()->set_sequence_parallel(false);
    EXPECT_DOUBLE_EQ(layer_activation_bytes(c, kPaper), 2 * s * b * h);
  }
}

TEST(Memory, FlashAttentionDropsTheScoreTerm) {
  const double s = 2048, h = 12288;
  for (bool sp : {false, true}) {
    clustersim::RunConfig c = gpt3(8, sp);
    const double flash = layer_activation_bytes(c);
    c.mutable_parallel()->set_recompute(ParallelConfig::SELECTIVE);
    EXPECT_DOUBLE_EQ(flash, layer_activation_bytes(c, kPaper));
  }
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3(8, true)), s * h * 34.0 / 8);
}

TEST(Memory, RecomputeOrdersActivations) {
  for (bool flash : {false, true}) {
    for (bool sp : {false, true}) {
      clustersim::RunConfig c = gpt3(8, sp);
      const MemoryOptions o{.flash_attention = flash};
      const double none = layer_activation_bytes(c, o);
      c.mutable_parallel()->set_recompute(ParallelConfig::SELECTIVE);
      const double selective = layer_activation_bytes(c, o);
      c.mutable_parallel()->set_recompute(ParallelConfig::FULL);
      const double full = layer_activation_bytes(c, o);
      EXPECT_LT(full, selective);
      EXPECT_LE(selective, none);
      if (!flash) {
        EXPECT_LT(selective, none);
      }
      // Same ordering for the whole GPU, temporaries included.
      c.mutable_parallel()->set_pp(8);
      c.mutable_parallel()->set_recompute(ParallelConfig::NONE);
      const Bytes total_none = estimate_memory(c, 8, o).activations;
      c.mutable_parallel()->set_recompute(ParallelConfig::FULL);
      EXPECT_LT(estimate_memory(c, 8, o).total() - estimate_memory(c, 8, o).weights -
                    estimate_memory(c, 8, o).gradients - estimate_memory(c, 8, o).optimizer,
                total_none);
    }
  }
}

TEST(Memory, SequenceParallelReducesActivationsVersusTensorParallelAlone) {
  for (int32_t t : {2, 4, 8}) {
    for (bool flash : {false, true}) {
      const MemoryOptions o{.flash_attention = flash};
      EXPECT_LT(layer_activation_bytes(gpt3(t, true), o),
                layer_activation_bytes(gpt3(t, false), o));
      EXPECT_LT(layer_activation_bytes(gpt3(t, false), o),
                layer_activation_bytes(gpt3(1, false), o));
    }
  }
  // With tp = 1 sequence parallelism is a no-op.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3(1, true)), layer_activation_bytes(gpt3(1, false)));
}

TEST(Memory, ContextParallelSplitsTheSequence) {
  clustersim::RunConfig c = gpt3(8, true);
  const double one = layer_activation_bytes(c);
  c.mutable_parallel()->set_cp(2);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(c), one / 2);
  // The score term: this GPU's s/cp queries against all s keys.
  const double paper_one = layer_activation_bytes(gpt3(8, true), kPaper) - one;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(c, kPaper) - layer_activation_bytes(c), paper_one / 2);
}

TEST(Memory, GroupedQueryAttentionShrinksKeysAndValues) {
  clustersim::RunConfig c = gpt3(8, false);
  const double mha = layer_activation_bytes(c);
  c.mutable_model()->set_num_kv_heads(8);
  const double s = 2048, h = 12288;
  // K and V go from 2sbh/t each to 2sbh/t · kv/a each.
  EXPECT_DOUBLE_EQ(mha - layer_activation_bytes(c), 2 * 2 * s * h / 8 * (1 - 8.0 / 96));
}

TEST(Memory, OneFOneBStageZeroHoldsTheWholeModelsActivations) {
  // Korthikanti section 4.2.3: p microbatches x L/p layers on stage 0 = L layers, whatever p.
  const double per_layer = layer_activation_bytes(gpt3(8, true));
  const double embedding = embedding_activation_bytes(gpt3(8, true));
  for (int32_t p : {2, 4, 8}) {
    clustersim::RunConfig c = gpt3(8, true);
    c.mutable_parallel()->set_pp(p);
    const MemoryBreakdown b = estimate_stage_memory(c, 0, p);
    EXPECT_NEAR(static_cast<double>(b.activations), 96 * per_layer + p * embedding, 1.0);
  }
}

TEST(Memory, InterleavingAddsMegatronsFactor) {
  // Stage 0 of interleaved 1F1B holds p·v + p − 1 chunk passes of L/(p·v) layers:
  // (1 + (p−1)/(p·v)) times the 1F1B amount.
  clustersim::RunConfig c = gpt3(8, true);
  const int32_t p = 4, v = 3;
  c.mutable_parallel()->set_pp(p);
  c.mutable_model()->set_num_layers(96);
  const double one_f_one_b = static_cast<double>(estimate_stage_memory(c, 1, p).activations);
  c.mutable_parallel()->set_virtual_stages(v);
  const double interleaved =
      static_cast<double>(estimate_stage_memory(c, 1, p * v + p - 1).activations);
  EXPECT_NEAR(interleaved / one_f_one_b, 1.0 + (p - 1.0) / (p * v), 1e-9);
}

TEST(Memory, StageParamsAddUpToTheModel) {
  for (bool tied : {false, true}) {
    clustersim::RunConfig c = gpt3(1, false);
    c.mutable_model()->set_tied_embeddings(tied);
    c.mutable_parallel()->set_pp(4);
    const ParamCounts n = count_params(c.model());
    int64_t sum = 0;
    for (int32_t s = 0; s < 4; ++s) sum += stage_params(c, s);
    // A tied head still needs its copy on the last stage.
    EXPECT_EQ(sum, n.total() + (tied ? n.embedding : 0));
    EXPECT_EQ(stage_params(c, 1), 24 * n.per_layer());
  }
  // TP divides the matrices; the padded vocabulary splits evenly.
  clustersim::RunConfig c = gpt3(8, false);
  c.mutable_model()->set_vocab_size(50257);
  const ParamCounts n = count_params(c.model());
  EXPECT_EQ(stage_params(c, 0),
            96 * ((n.attention_per_layer + n.mlp_per_layer) / 8 + n.norms_per_layer) +
                2 * (50264 / 8) * 12288 + 12288);
}

TEST(Memory, PeakStageAndZeroTemporaries) {
  clustersim::RunConfig c = gpt3(8, true);
  c.mutable_parallel()->set_pp(8);
  // 1F1B: stage s holds p - s microbatches, so stage 0 (which also has the embedding) peaks.
  std::vector<int32_t> held;
  for (int32_t s = 0; s < 8; ++s) held.push_back(8 - s);
  const MemoryBreakdown peak = estimate_memory(c, held);
  EXPECT_EQ(peak.stage, 0);
  for (int32_t s = 0; s < 8; ++s) {
    EXPECT_LE(estimate_stage_memory(c, s, held[s]).total(), peak.total());
  }
  EXPECT_EQ(peak.temporary, 0);
  // ZeRO-3 over dp adds the gathered weights of two layers and one gradient bucket.
  c.mutable_parallel()->set_dp(8);
  c.mutable_parallel()->set_zero_stage(3);
  const ParamCounts n = count_params(c.model());
  const double layer =
      static_cast<double>((n.attention_per_layer + n.mlp_per_layer) / 8 + n.norms_per_layer);
  EXPECT_NEAR(static_cast<double>(estimate_memory(c, held).temporary), 2 * 2 * layer + 2 * 40e6,
              1.0);
}

}  // namespace
}  // namespace cs::workload
