// Variability through a whole step: slow GPUs, kernel jitter and degraded links move the step as
// they should, folding never hides them, and every bad field is refused by name.
#include "sim/run/variability.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/config/run_config.h"
#include "sim/run/step_simulation.h"
#include "tests/support/run_fixtures.h"
#include "tests/support/test_helpers.h"

namespace cs::run {
namespace {

using testing_support::error_of;
using testing_support::report_json;
using testing_support::small_llama;

// The ideal network moves bytes in no time (only NCCL's latencies remain), and without
// interference a kernel's time is its own: step times follow compute.
std::vector<std::string> compute_only(std::vector<std::string> more) {
  more.insert(more.begin(), {"network=IDEAL", "effects.comm_compute_interference=false"});
  return more;
}

report::StepReport run(std::vector<std::string> overrides) {
  return simulate_step(small_llama(std::move(overrides)), "test");
}

std::string error_for(std::vector<std::string> overrides) {
  return error_of([&] { run(std::move(overrides)); });
}

const std::vector<std::string> kOneGpu = {"parallel.tp=1", "parallel.dp=1",
                                          "parallel.global_batch_size=2"};

TEST(Variability, IsOffByDefaultAndWhenDisabled) {
  const std::vector<std::string> layout = {"parallel.dp=4", "parallel.global_batch_size=8"};
  const std::string base = report_json(run(layout));
  EXPECT_EQ(base.find("\"variability\""), std::string::npos);
  auto disabled = layout;
  disabled.insert(disabled.end(),
                  {"variability.enabled=false", "variability.gpu_speed.slow_ranks=1",
                   "variability.gpu_speed.slow_speeds=0.5", "variability.kernel_jitter.cv=0.2",
                   "variability.links.random_fraction=0.5"});
  EXPECT_EQ(report_json(run(disabled)), base);
  auto at_speed_one = layout;  // a named rank at full speed changes nothing
  at_speed_one.insert(at_speed_one.end(), {"variability.gpu_speed.slow_ranks=1",
                                           "variability.gpu_speed.slow_speeds=1"});
  EXPECT_EQ(report_json(run(at_speed_one)), base);
}

TEST(Variability, AHalfSpeedGpuDoublesAOneGpuStep) {
  auto slow = kOneGpu;
  slow.insert(slow.end(),
              {"variability.gpu_speed.slow_ranks=0", "variability.gpu_speed.slow_speeds=0.5"});
  const auto base = run(kOneGpu);
  const auto r = run(slow);
  EXPECT_EQ(r.iteration_time_s, 2 * base.iteration_time_s);
  ASSERT_TRUE(r.variability.enabled);
  EXPECT_EQ(r.variability.slow_gpus, 1);
  EXPECT_EQ(r.variability.speed_min, 0.5);
  EXPECT_EQ(r.variability.busy_max_s, 2 * base.stages[0].compute_s + 2 * base.interference_s);
}

TEST(Variability, ASlowReplicaPacesAFoldedDataParallelStep) {
  // DP 2 is folded by default: replica 0 alone would hide the slow replica 1 and give the
  // nominal step. Communication costs only NCCL's latencies here, so the step is replica 1's
  // compute at half speed plus the same short tail: twice the nominal step, to within the tail.
  const auto layout =
      compute_only({"parallel.tp=1", "parallel.dp=2", "parallel.global_batch_size=4"});
  auto slow = layout;
  slow.insert(slow.end(),
              {"variability.gpu_speed.slow_ranks=1", "variability.gpu_speed.slow_speeds=0.5"});
  auto unfolded = slow;
  unfolded.push_back("simulation.fold_data_parallel=false");
  const auto base = run(layout);
  const auto r = run(slow);
  EXPECT_NEAR(r.iteration_time_s, 2 * base.iteration_time_s, 1e-3 * base.iteration_time_s);
  EXPECT_EQ(report_json(r), report_json(run(unfolded)));
  EXPECT_EQ(r.variability.busy_max_rank, 1);
  EXPECT_EQ(r.variability.busy_min_rank, 0);
  EXPECT_EQ(r.variability.busy_max_s, 2 * r.variability.busy_min_s);
  EXPECT_EQ(r.variability.finishing_first, std::vector<int32_t>{1});
}

TEST(Variability, ASlowTensorParallelRankGivesWhatTheUnfoldedRunGives) {
  // TP 8 owns its server's NVLink, so TP and DP are both folded by default; with one slow
  // member the run must unfold and give exactly the unfolded run's step.
  const std::vector<std::string> layout = {"parallel.tp=8", "parallel.dp=2",
                                           "parallel.global_batch_size=4"};
  auto slow = layout;
  slow.insert(slow.end(),
              {"variability.gpu_speed.slow_ranks=11", "variability.gpu_speed.slow_speeds=0.8"});
  auto unfolded = slow;
  unfolded.insert(unfolded.end(),
                  {"simulation.fold_tensor_parallel=false", "simulation.fold_data_parallel=false"});
  const auto base = run(layout);
  const auto r = run(slow);
  EXPECT_GT(r.iteration_time_s, 1.05 * base.iteration_time_s);
  EXPECT_EQ(report_json(r), report_json(run(unfolded)));
  EXPECT_EQ(r.variability.busy_max_rank, 11);
  ASSERT_EQ(r.variability.stage_busiest.size(), 1u);
  EXPECT_EQ(r.variability.stage_busiest[0].first, 11);
}

TEST(Variability, SlowingEveryGpuScalesAComputeOnlyPipelineStep) {
  const auto layout = compute_only(
      {"parallel.tp=1", "parallel.pp=2", "parallel.dp=1", "parallel.global_batch_size=8"});
  auto all_slow = layout;
  all_slow.insert(all_slow.end(), {"variability.gpu_speed.slow_ranks=0,1",
                                   "variability.gpu_speed.slow_speeds=0.5"});
  auto stage_slow = layout;
  stage_slow.insert(stage_slow.end(), {"variability.gpu_speed.slow_ranks=1",
                                       "variability.gpu_speed.slow_speeds=0.5"});
  const auto base = run(layout);
  const auto all = run(all_slow);
  const auto stage = run(stage_slow);
  EXPECT_DOUBLE_EQ(all.iteration_time_s, 2 * base.iteration_time_s);
  // One slow stage: its rank computes twice as long, and the step can end no sooner.
  EXPECT_EQ(stage.stages[1].compute_s, 2 * base.stages[1].compute_s);
  EXPECT_EQ(stage.stages[0].compute_s, base.stages[0].compute_s);
  EXPECT_GE(stage.iteration_time_s, stage.stages[1].compute_s);
  EXPECT_LT(stage.iteration_time_s, all.iteration_time_s);
  EXPECT_EQ(stage.variability.stage_busiest[1].first, 1);
  EXPECT_GE(stage.variability.finishing_ranks, 1);
}

TEST(Variability, ASpeedSpreadIsDrawnWithinItsClipBySeed) {
  const std::vector<std::string> spread = {
      "parallel.dp=8", "parallel.global_batch_size=8", "variability.gpu_speed.relative_std=0.1",
      "variability.gpu_speed.min_speed=0.9", "variability.gpu_speed.max_speed=1.05"};
  const auto a = run(spread);
  EXPECT_GE(a.variability.speed_min, 0.9);
  EXPECT_LT(a.variability.speed_min, 1);
  EXPECT_GT(a.variability.speed_max, 1);
  EXPECT_LE(a.variability.speed_max, 1.05);
  EXPECT_GT(a.variability.slow_gpus, 0);
  EXPECT_EQ(report_json(a), report_json(run(spread)));
}

TEST(Variability, JitterIsReproducibleAndMovesWithTheSeed) {
  // Eight microbatches per rank: about 1,300 kernels, so that no once-per-step kernel (Adam over
  // half the parameters, the gradient buffer's) weighs more than a few percent of the busy time.
  const std::vector<std::string> layout = {"parallel.tp=2", "parallel.dp=2",
                                           "parallel.global_batch_size=16",
                                           "variability.kernel_jitter.cv=0.1"};
  auto other = layout;
  other.push_back("variability.seed=2");
  const auto a = run(layout);
  EXPECT_EQ(report_json(a), report_json(run(layout)));
  const auto b = run(other);
  EXPECT_NE(a.iteration_time_s, b.iteration_time_s);
  EXPECT_GT(a.variability.busy_max_s, a.variability.busy_min_s);
  // Mean-one factors over thousands of kernels keep the mean busy time within a percent or so.
  auto plain = layout;
  plain.back() = "variability.kernel_jitter.cv=0";
  const double nominal = run(plain).stages[0].compute_s;
  EXPECT_NEAR(a.variability.busy_mean_s / nominal, 1, 0.03);
}

TEST(Variability, ASlowNicSlowsDataParallelCommunication) {
  // TP 8 fills a server, so the DP all-reduce of rank 0 crosses its NIC.
  const std::vector<std::string> layout = {"parallel.tp=8", "parallel.dp=2",
                                           "parallel.global_batch_size=2", "parallel.zero_stage=0"};
  auto slow = layout;
  slow.insert(slow.end(),
              {"variability.links.slow_nic_ranks=0", "variability.links.slow_nic_factors=0.1"});
  const auto base = run(layout);
  const auto r = run(slow);
  EXPECT_GT(r.variability.degraded_links, 0);
  EXPECT_GT(r.exposed(workload::Dim::kDp), base.exposed(workload::Dim::kDp));
  EXPECT_GT(r.iteration_time_s, base.iteration_time_s);
}

TEST(Variability, RandomLinkDegradationIsSeeded) {
  const std::vector<std::string> layout = {"parallel.tp=8",
                                           "parallel.dp=4",
                                           "parallel.global_batch_size=4",
                                           "parallel.zero_stage=0",
                                           "variability.links.random_fraction=0.5",
                                           "variability.links.random_factor=0.1"};
  const auto a = run(layout);
  EXPECT_GT(a.variability.degraded_links, 0);
  EXPECT_EQ(report_json(a), report_json(run(layout)));
}

TEST(Variability, NamedLinksAreDegraded) {
  const auto r = run({"parallel.tp=8", "parallel.dp=2", "parallel.global_batch_size=2",
                      "variability.links.names=gpu0-nic0,gpu1-nvswitch0",
                      "variability.links.name_factors=0.5"});
  EXPECT_EQ(r.variability.degraded_links, 4);
}

TEST(VariabilityValidation, RefusesBadSpeedsNamingTheField) {
  const std::string f = "variability.gpu_speed.";
  EXPECT_NE(error_for({f + "slow_ranks=64", f + "slow_speeds=0.5"})
                .find("test: variability.gpu_speed.slow_ranks[0] = 64 is not a rank of this run "
                      "(0 to 63)"),
            std::string::npos);
  EXPECT_NE(error_for({f + "slow_ranks=-1", f + "slow_speeds=0.5"}).find("slow_ranks[0] = -1"),
            std::string::npos);
  EXPECT_NE(error_for({f + "slow_ranks=3,3", f + "slow_speeds=0.5"}).find("names a rank twice"),
            std::string::npos);
  EXPECT_NE(error_for({f + "slow_ranks=3", f + "slow_speeds=0"})
                .find("variability.gpu_speed.slow_speeds[0] = 0 must be in [0.01, 10]"),
            std::string::npos);
  EXPECT_NE(error_for({f + "slow_ranks=3", f + "slow_speeds=-0.5"}).find("slow_speeds[0] = -0.5"),
            std::string::npos);
  EXPECT_NE(error_for({f + "slow_ranks=3", f + "slow_speeds=80"}).find("slow_speeds[0] = 80"),
            std::string::npos);
  EXPECT_NE(error_for({f + "slow_ranks=1,2", f + "slow_speeds=0.5,0.6,0.7"}).find("has 3 entries"),
            std::string::npos);
  EXPECT_NE(error_for({f + "slow_ranks=1"}).find("slow_speeds has 0 entries"), std::string::npos);
  EXPECT_NE(error_for({f + "slow_speeds=0.5"}).find("slow_speeds is set but"), std::string::npos);
  EXPECT_NE(error_for({f + "relative_std=-0.1"}).find("relative_std must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_for({f + "relative_std=2"}).find("relative_std must be at most 1"),
            std::string::npos);
  EXPECT_NE(error_for({f + "min_speed=0"}).find("min_speed must be in [0.01, 10]"),
            std::string::npos);
  EXPECT_NE(error_for({f + "min_speed=0.9", f + "max_speed=0.8"}).find("max_speed must be in"),
            std::string::npos);
}

TEST(VariabilityValidation, RefusesBadJitterNamingTheField) {
  const std::string f = "variability.kernel_jitter.";
  EXPECT_NE(error_for({f + "cv=-0.1"}).find("test: variability.kernel_jitter.cv must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_for({f + "cv=1.5"}).find("cv must be at most 1"), std::string::npos);
  EXPECT_NE(error_for({f + "cv=0.4", f + "distribution=NORMAL"}).find("below 1/3"),
            std::string::npos);
  EXPECT_EQ(error_for({f + "cv=0.4"}), "");  // lognormal factors stay positive
}

TEST(VariabilityValidation, RefusesBadLinksNamingTheField) {
  const std::string f = "variability.links.";
  EXPECT_NE(error_for({f + "names=gpu0-gpu1", f + "name_factors=0.5"})
                .find("test: variability.links.names[0]: no link joins gpu0 and gpu1"),
            std::string::npos);
  EXPECT_NE(error_for({f + "names=gpu0-nic0,bogus", f + "name_factors=0.5"})
                .find("names[1]: \"bogus\" is not of the form"),
            std::string::npos);
  EXPECT_NE(error_for({f + "names=gpu0-switch99999", f + "name_factors=0.5"})
                .find("there is no switch99999"),
            std::string::npos);
  EXPECT_NE(error_for({f + "names=gpu0-nic0", f + "name_factors=1.5"})
                .find("name_factors[0] = 1.5 must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(error_for({f + "random_fraction=1.5"}).find("random_fraction must be in [0, 1]"),
            std::string::npos);
  EXPECT_NE(error_for({f + "random_fraction=-0.1"}).find("random_fraction must be in [0, 1]"),
            std::string::npos);
  EXPECT_NE(error_for({f + "random_factor=0"}).find("random_factor must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(error_for({f + "slow_nic_ranks=64"}).find("slow_nic_ranks[0] = 64 is not a rank"),
            std::string::npos);
  EXPECT_NE(error_for({f + "slow_nic_ranks=0", f + "slow_nic_factors=0"})
                .find("slow_nic_factors[0] = 0 must be in (0, 1]"),
            std::string::npos);
}

}  // namespace
}  // namespace cs::run
