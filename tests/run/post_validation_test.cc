// Optimizer post-validation in a full step: the step time is the longest stage span, which frees
// ZB-H2 of its parallelogram's skew and changes nothing for 1F1B.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/config/run_config.h"
#include "sim/run/step_simulation.h"

namespace cs::run {
namespace {

// Llama 3 8B's layer shapes on 4 near-uniform stages (a small vocabulary keeps the embedding and
// the head a sliver), 8 microbatches, free communication.
report::StepReport step(const std::string& schedule, bool post_validation) {
  const std::vector<std::string> overrides = {
      "model.num_layers=16",
      "model.seq_length=2048",
      "model.vocab_size=1024",
      "parallel.pp=4",
      "parallel.tp=1",
      "parallel.dp=1",
      "parallel.global_batch_size=8",
      "network=IDEAL",
      "parallel.schedule=" + schedule,
      std::string("parallel.optimizer_post_validation=") + (post_validation ? "true" : "false")};
  return simulate_step(load_run_config("", "llama3-8b", overrides).config, "test");
}

TEST(PostValidation, FreesZbH2OfItsSkew) {
  const auto free_running = step("ZB_H2", true);
  const auto synchronous = step("ZB_H2", false);
  const auto h1 = step("ZB_H1", false);
  EXPECT_LT(free_running.iteration_time_s, synchronous.iteration_time_s);
  EXPECT_LE(synchronous.iteration_time_s, h1.iteration_time_s);
  // One more W per idle slot than ZB-H1: the laws differ by some 9 points. Each schedule sits
  // above its law, by no more than the 4 points the first and last stages' embedding, head and
  // loss leave the others idle (ZB-H1 by 1 to 3.5 points as its W's, placed by estimated costs,
  // fall; ZB-H2 by 3.6), so the bubbles differ by the laws' gap less at most those 4 points.
  for (const auto* r : {&free_running, &h1}) {
    EXPECT_GE(r->bubble_fraction, r->analytic_bubble_fraction);
    EXPECT_LE(r->bubble_fraction, r->analytic_bubble_fraction + 0.04);
  }
  EXPECT_GT(h1.analytic_bubble_fraction - free_running.analytic_bubble_fraction, 0.08);
  EXPECT_GT(h1.bubble_fraction - free_running.bubble_fraction, 0.04);
  EXPECT_LT(free_running.bubble_fraction, synchronous.bubble_fraction);
  EXPECT_NEAR(free_running.tokens_per_s * free_running.iteration_time_s, 8.0 * 2048, 1e-6);
  // Held activations: 2p-1 on stage 0 (ZB-H1: p).
  EXPECT_EQ(free_running.stages[0].peak_in_flight, 7);
  EXPECT_EQ(h1.stages[0].peak_in_flight, 4);
}

TEST(PostValidation, LeavesOneFOneBAlone) {
  // 1F1B's stage 0 runs from the first forward to the last backward: its idle lies in its span.
  const auto free_running = step("ONE_F_ONE_B", true);
  const auto synchronous = step("ONE_F_ONE_B", false);
  EXPECT_DOUBLE_EQ(free_running.iteration_time_s, synchronous.iteration_time_s);
  EXPECT_NEAR(free_running.bubble_fraction, synchronous.bubble_fraction, 1e-12);
}

}  // namespace
}  // namespace cs::run
