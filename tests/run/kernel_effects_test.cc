// The kernel effect switches reach a whole simulated step: the breakdown by kernel group adds up
// to the compute time, and switching an effect off removes its line and its time.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/config/run_config.h"
#include "sim/run/step_simulation.h"
#include "tests/support/run_fixtures.h"

namespace cs::run {
namespace {

// GPT-3's kernels (LayerNorm, biases, dropout, learned positions) on 8 A100s, two layers.
clustersim::RunConfig small_gpt3(std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), {"model.num_layers=2", "parallel.pp=1", "parallel.dp=1",
                                       "parallel.global_batch_size=2"});
  return load_run_config("", "gpt3-175b", overrides).config;
}

using testing_support::group_seconds;

TEST(KernelEffects, BreakdownSumsToComputeAndEachSwitchRemovesItsLine) {
  const auto on = simulate_step(small_gpt3({}), "test");
  double sum = 0;
  for (const auto& [name, seconds] : on.compute_by_kernel_group_s) sum += seconds;
  ASSERT_EQ(on.stages.size(), 1u);
  EXPECT_NEAR(sum, on.stages[0].compute_s, 1e-9 * sum);
  for (const char* group :
       {"gemm", "attention", "norm", "elementwise", "loss", "optimizer", "grad_norm"})
    EXPECT_GT(group_seconds(on, group), 0) << group;

  const auto no_norms = simulate_step(small_gpt3({"effects.norm_kernels=false"}), "test");
  EXPECT_EQ(group_seconds(no_norms, "norm"), 0);
  EXPECT_LT(no_norms.stages[0].compute_s, on.stages[0].compute_s);
}

// Llama 3.2 1B's attention (hidden 2048, 32 heads of 64) on one H100, two layers.
clustersim::RunConfig small_llama_1b(std::vector<std::string> overrides) {
  overrides.insert(
      overrides.begin(),
      {"model.num_layers=2", "model.hidden_size=2048", "model.ffn_hidden_size=8192",
       "model.num_heads=32", "model.num_kv_heads=8", "model.seq_length=2048", "parallel.tp=1",
       "parallel.sequence_parallel=false", "parallel.dp=1", "parallel.global_batch_size=2"});
  return load_run_config("", "llama3-8b", overrides).config;
}

// The small-model effects each have their own breakdown line, the lines still add up to the
// compute time, and each switch removes its line and its time and nothing else.
TEST(KernelEffects, SmallModelEffectsHaveTheirOwnLines) {
  const auto on = simulate_step(small_llama_1b({}), "test");
  double sum = 0;
  for (const auto& [name, seconds] : on.compute_by_kernel_group_s) sum += seconds;
  ASSERT_EQ(on.stages.size(), 1u);
  EXPECT_NEAR(sum, on.stages[0].compute_s, 1e-9 * sum);
  const struct {
    const char* effect;
    const char* line;
  } effects[] = {{"attention_softmax_exp", "attention_softmax_exp"},
                 {"embedding_dense_grad", "embedding_grad"},
                 {"grad_buffer_kernels", "grad_buffer"}};
  for (const auto& e : effects) {
    const double line = group_seconds(on, e.line);
    EXPECT_GT(line, 0) << e.line;
    const auto off =
        simulate_step(small_llama_1b({std::string("effects.") + e.effect + "=false"}), "test");
    EXPECT_EQ(group_seconds(off, e.line), 0) << e.line;
    EXPECT_NEAR(on.stages[0].compute_s - off.stages[0].compute_s, line, 1e-9) << e.line;
    EXPECT_EQ(group_seconds(off, "gemm"), group_seconds(on, "gemm")) << e.line;
  }
  // The attention line keeps what the head dim 128 efficiencies give: only the split moves.
  const auto no_exp =
      simulate_step(small_llama_1b({"effects.attention_softmax_exp=false"}), "test");
  EXPECT_NEAR(group_seconds(on, "attention"), group_seconds(no_exp, "attention"), 1e-9);
}

TEST(KernelEffects, SustainedClocksSlowA100GemmsByTheClockRatio) {
  const auto on = simulate_step(small_gpt3({}), "test");
  const auto off = simulate_step(small_gpt3({"effects.sustained_clocks=false"}), "test");
  // A100: 1228 of 1410 MHz sustained; GEMMs are compute-bound here, launch overhead aside.
  EXPECT_NEAR(group_seconds(off, "gemm") / group_seconds(on, "gemm"), 1228.0 / 1410.0, 0.01);
  EXPECT_EQ(group_seconds(off, "norm"), group_seconds(on, "norm"));
  EXPECT_LT(off.iteration_time_s, on.iteration_time_s);
}

}  // namespace
}  // namespace cs::run
