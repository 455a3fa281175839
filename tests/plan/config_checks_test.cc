// A run and the planner check a config with the same list: a config both refuse is refused with
// the same message.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/plan/memory_report.h"
#include "sim/run/step_simulation.h"
#include "sim/world/world.h"
#include "tests/support/run_fixtures.h"

namespace cs::plan {
namespace {

// What `f` throws as a ConfigError, or "" when it does not.
std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigChecks, RunAndPlanRefuseTheSameBadConfigAlike) {
  for (const std::vector<std::string>& overrides :
       std::vector<std::vector<std::string>>{{"cost.price_per_gpu_hour=-1"},
                                             {"model.attention_dropout=-0.5"},
                                             {"offload.parameters=CPU", "parallel.zero_stage=1"},
                                             {"parallel.gradient_accumulation_steps=-1"},
                                             {"parallel.dp=3"},
                                             {"precision=FP8", "cluster.gpu=a100"},
                                             {"parallel.tp=0"}}) {
    const auto config = testing_support::small_llama(overrides);
    const std::string run = refusal([&] { run::prepare_step(config, "x"); });
    const std::string plan = refusal([&] { build_memory_report(config, "x"); });
    EXPECT_FALSE(run.empty()) << overrides.front();
    EXPECT_EQ(run, plan) << overrides.front();
  }
}

// The planner sizes its own cluster and never runs: what only a run on the config's cluster needs
// (reliability, a layout over the topology's capacity) is left to the run.
TEST(ConfigChecks, PlanLeavesReliabilityAndTheClusterToTheRun) {
  const int64_t capacity =
      world::ResolvedCluster(testing_support::small_llama(), "x").capacity_gpus();
  const std::string dp = std::to_string(capacity / 8 * 2);
  for (const std::vector<std::string>& overrides : std::vector<std::vector<std::string>>{
           {"reliability.restart_s=-1"},
           {"parallel.tp=8", "parallel.dp=" + dp, "parallel.global_batch_size=" + dp}}) {
    const auto config = testing_support::small_llama(overrides);
    EXPECT_FALSE(refusal([&] { run::prepare_step(config, "x"); }).empty()) << overrides.front();
    EXPECT_EQ(refusal([&] { build_memory_report(config, "x"); }), "") << overrides.front();
  }
}

}  // namespace
}  // namespace cs::plan
