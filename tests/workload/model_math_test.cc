#include "sim/workload/model_math.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace cs::workload {
namespace {

clustersim::ModelConfig gpt3_175b() {
  clustersim::ModelConfig m;
  m.set_num_layers(96);
  m.set_hidden_size(12288);
  m.set_num_heads(96);
  m.set_ffn_hidden_size(4 * 12288);
  m.set_vocab_size(50257);
  m.set_seq_length(2048);
  m.set_activation(clustersim::ModelConfig::GELU);
  m.set_tied_embeddings(true);
  // The papers' closed forms below (Narayanan et al. 2021, Korthikanti et al. 2022) count the
  // whole s x s score square.
  m.set_causal(false);
  return m;
}

clustersim::ModelConfig llama3_405b() {
  clustersim::ModelConfig m;
  m.set_num_layers(126);
  m.set_hidden_size(16384);
  m.set_num_heads(128);
  m.set_num_kv_heads(8);
  m.set_ffn_hidden_size(53248);
  m.set_vocab_size(128256);
  m.set_seq_length(8192);
  m.set_activation(clustersim::ModelConfig::SWIGLU);
  return m;
}

TEST(ModelMath, ParameterCountsOfKnownModels) {
  // GPT-3's 175B and Llama 3's 405B as published (we omit biases, so within 1%).
  EXPECT_NEAR(static_cast<double>(count_params(gpt3_175b()).total()), 175e9, 0.01 * 175e9);
  EXPECT_NEAR(static_cast<double>(count_params(llama3_405b()).total()), 405e9, 0.01 * 405e9);
}

TEST(ModelMath, ParameterCountsPerPart) {
  const auto m = llama3_405b();
  const ParamCounts p = count_params(m);
  const int64_t h = 16384, kv = 8 * 128;
  EXPECT_EQ(head_dim(m), 128);
  EXPECT_EQ(kv_heads(m), 8);
  EXPECT_EQ(p.attention_per_layer, 2 * h * h + 2 * h * kv);
  EXPECT_EQ(p.mlp_per_layer, 3 * h * 53248);
  EXPECT_EQ(p.output_head, p.embedding);
  EXPECT_EQ(p.total(), p.embedding + 126 * p.per_layer() + h + p.output_head);
  // Tying removes the head from the count but not from the matmuls.
  auto tied = m;
  tied.set_tied_embeddings(true);
  EXPECT_EQ(count_params(tied).total(), p.total() - p.output_head);
  EXPECT_EQ(count_params(tied).dense_matmul(), p.dense_matmul());
  // GELU has two FFN matrices.
  auto gelu = m;
  gelu.set_activation(clustersim::ModelConfig::GELU);
  EXPECT_EQ(count_params(gelu).mlp_per_layer, 2 * h * 53248);
  // MHA: num_kv_heads = 0 means num_heads.
  auto mha = m;
  mha.set_num_kv_heads(0);
  EXPECT_EQ(count_params(mha).attention_per_layer, 4 * h * h);
}

TEST(ModelMath, ModelFlopsMatchMegatronFormula) {
  // Narayanan et al. 2021: 72·B·s·L·h²·(1 + s/6h + V/12hL) per iteration of B sequences.
  const auto m = gpt3_175b();
  const double L = 96, h = 12288, s = 2048, V = 50257;
  const double megatron_per_token = 72.0 * L * h * h * (1 + s / (6 * h) + V / (12 * h * L));
  EXPECT_DOUBLE_EQ(model_flops_per_token(m), megatron_per_token);
  EXPECT_DOUBLE_EQ(attention_flops_per_token(m), 12.0 * L * h * s);
  // Causal: Megatron-LM's num_floating_point_operations halves the score term (s / h / 2 in its
  // attention factor), which makes the s/6h above s/12h.
  auto causal = m;
  causal.set_causal(true);
  EXPECT_DOUBLE_EQ(model_flops_per_token(causal),
                   72.0 * L * h * h * (1 + s / (12 * h) + V / (12 * h * L)));
}

TEST(ModelMath, HardwareFlopsWithFullRecomputeMatchKorthikanti) {
  clustersim::RunConfig c;
  *c.mutable_model() = gpt3_175b();
  c.mutable_parallel()->set_global_batch_size(1536);
  const double L = 96, h = 12288, s = 2048, V = 50257, B = 1536;
  EXPECT_DOUBLE_EQ(model_flops_per_step(c),
                   72.0 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * h * L)));
  EXPECT_DOUBLE_EQ(hardware_flops_per_step(c), model_flops_per_step(c));
  // Korthikanti et al. 2022: full recompute costs 96·B·s·L·h²·(1 + s/6h + V/16hL).
  c.mutable_parallel()->set_recompute(clustersim::ParallelConfig::FULL);
  EXPECT_NEAR(hardware_flops_per_step(c),
              96.0 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * h * L)),
              1e-12 * hardware_flops_per_step(c));
  const double full = hardware_flops_per_step(c);
  c.mutable_parallel()->set_recompute(clustersim::ParallelConfig::SELECTIVE);
  const double selective = hardware_flops_per_step(c);
  EXPECT_GT(selective, model_flops_per_step(c));
  EXPECT_LT(selective, full);
  EXPECT_DOUBLE_EQ(selective - model_flops_per_step(c), 4.0 * L * h * s * B * s);
}

TEST(ModelMath, LayerSplits) {
  clustersim::RunConfig c;
  c.mutable_model()->set_num_layers(32);
  auto* p = c.mutable_parallel();
  p->set_pp(4);
  p->set_virtual_stages(2);
  EXPECT_EQ(layers_per_piece(c), std::vector<int32_t>(8, 4));
  EXPECT_EQ(layers_on_stage(c, 3), 8);
  p->set_virtual_stages(1);
  for (int32_t n : {7, 9, 9, 7}) p->add_layers_per_stage(n);
  EXPECT_EQ(layers_per_piece(c), (std::vector<int32_t>{7, 9, 9, 7}));
  EXPECT_EQ(layers_on_stage(c, 0), 7);
  EXPECT_EQ(layers_on_stage(c, 1), 9);
  int32_t total = 0;
  for (int32_t s = 0; s < 4; ++s) total += layers_on_stage(c, s);
  EXPECT_EQ(total, 32);
}

TEST(ModelMath, MicrobatchesAndVocabPadding) {
  clustersim::ParallelConfig p;
  p.set_dp(8);
  p.set_microbatch_size(2);
  p.set_global_batch_size(512);
  EXPECT_EQ(num_microbatches(p), 32);
  clustersim::ModelConfig m;
  m.set_vocab_size(50257);
  EXPECT_EQ(padded_vocab(m, 1), 50257);
  EXPECT_EQ(padded_vocab(m, 8), 50264);
  m.set_vocab_size(128256);
  EXPECT_EQ(padded_vocab(m, 8), 128256);
}

}  // namespace
}  // namespace cs::workload
