// The overlap switches and the interference effect, end to end on small layouts.
#include <gtest/gtest.h>

#include "sim/config/run_config.h"
#include "sim/run/step_simulation.h"

namespace cs::run {
namespace {

clustersim::RunConfig small(std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), {"model.num_layers=4", "model.seq_length=2048"});
  return load_run_config("", "llama3-8b", overrides).config;
}

TEST(Overlap, GradientReductionAfterTheBackwardIsExposed) {
  // Without overlap_grad_reduce every bucket waits for the whole backward: the reduction no
  // longer hides under it, so exposed DP time and the step grow.
  auto run = [](bool overlap) {
    return simulate_step(
        small({"parallel.tp=2", "parallel.dp=8", "parallel.global_batch_size=8",
               "parallel.zero_stage=0", "parallel.dp_bucket_params=20000000",
               std::string("parallel.overlap_grad_reduce=") + (overlap ? "true" : "false")}),
        "test");
  };
  const auto on = run(true), off = run(false);
  EXPECT_GT(off.exposed_dp_s, on.exposed_dp_s);
  EXPECT_GT(off.iteration_time_s, on.iteration_time_s);
  EXPECT_DOUBLE_EQ(off.comm_bytes_by_dim[3], on.comm_bytes_by_dim[3]);  // same reduction
}

TEST(Overlap, ParameterGatherUnderTheForwardRemovesTheTail) {
  // ZeRO-1: after the optimizer, the updated parameters are all-gathered. Without overlap that
  // gather is the step's exposed tail; with overlap_param_gather it runs bucket by bucket under
  // the forward, and only the first bucket is waited for.
  auto run = [](bool overlap) {
    return simulate_step(
        small({"parallel.tp=2", "parallel.dp=8", "parallel.global_batch_size=32",
               "parallel.zero_stage=1", "parallel.dp_bucket_params=20000000",
               std::string("parallel.overlap_param_gather=") + (overlap ? "true" : "false")}),
        "test");
  };
  const auto on = run(true), off = run(false);
  EXPECT_GT(off.exposed_dp_s, on.exposed_dp_s);
  EXPECT_GT(off.iteration_time_s, on.iteration_time_s);
  // The gathers move the same parameters either way (to within the embedding / norm split).
  EXPECT_NEAR(on.comm_bytes_by_dim[3] / off.comm_bytes_by_dim[3], 1.0, 0.01);
}

TEST(Overlap, InterferenceIsItsOwnLineAndCanBeSwitchedOff) {
  auto run = [](bool interference) {
    return simulate_step(small({"parallel.tp=2", "parallel.dp=8", "parallel.global_batch_size=8",
                                "parallel.zero_stage=0",
                                std::string("effects.comm_compute_interference=") +
                                    (interference ? "true" : "false")}),
                         "test");
  };
  const auto on = run(true), off = run(false);
  EXPECT_EQ(off.interference_s, 0.0);
  EXPECT_GT(on.interference_s, 0.0);
  // Here the DP stream, busy end to end with the last microbatch's buckets, sets the step's end,
  // so slower kernels may not lengthen it; they can never shorten it.
  EXPECT_GE(on.iteration_time_s, off.iteration_time_s);
  // Kernels alone cost the same; interference is on top of them.
  ASSERT_EQ(on.stages.size(), off.stages.size());
  EXPECT_DOUBLE_EQ(on.stages[0].compute_s, off.stages[0].compute_s);
}

}  // namespace
}  // namespace cs::run
