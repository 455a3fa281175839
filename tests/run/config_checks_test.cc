// The one list of config checks: its order and owners, and that each check in it refuses the
// config it is there for (a check dropped from the list fails its case here).
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/run/config_checks.h"
#include "tests/support/run_fixtures.h"

namespace cs::run {
namespace {

TEST(ConfigChecks, ListHoldsEachLayersCheckInOrder) {
  std::vector<std::pair<std::string, std::string>> got;
  for (const ConfigCheck& c : config_checks()) got.emplace_back(c.name, c.layer);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"preset names", "config"},  {"run fields", "run"},        {"cost", "cost"},
      {"offload figures", "cost"}, {"offload placement", "run"}, {"gradient accumulation", "run"},
      {"reliability", "cost"},     {"gpu", "compute"},           {"cluster", "world"},
      {"stack", "workload"},       {"layout", "workload"},       {"precision", "compute"}};
  EXPECT_EQ(got, want);
}

TEST(ConfigChecks, PlannerSkipsOnlyTheClusterChecks) {
  std::vector<std::string> skipped;
  for (const ConfigCheck& c : config_checks())
    if (!c.in_plan) skipped.emplace_back(c.name);
  EXPECT_EQ(skipped, (std::vector<std::string>{"preset names", "reliability", "cluster"}));
}

// A config only check `check` refuses, and the start of its message.
struct BadConfig {
  std::string check;
  std::vector<std::string> overrides;
  std::string message;
};

const std::vector<BadConfig>& bad_configs() {
  static const std::vector<BadConfig> bad = {
      {"run fields", {"model.hidden_dropout=1"}, "x: model.hidden_dropout must be in [0, 1)"},
      {"cost", {"cost.price_per_gpu_hour=-1"}, "x: cost.price_per_gpu_hour"},
      {"offload figures", {"offload.host_memory_gb=-1"}, "x: offload.host_memory_gb must be > 0"},
      {"offload placement",
       {"offload.parameters=CPU", "parallel.zero_stage=1"},
       "x: offload.parameters needs parallel.zero_stage 3, got 1"},
      {"gradient accumulation",
       {"parallel.gradient_accumulation_steps=100000"},
       "x: parallel.gradient_accumulation_steps"},
      {"reliability", {"reliability.restart_s=-1"}, "x: reliability.restart_s must be finite"},
      {"cluster", {"cluster.topology=no-such-topology"}, "x: cluster.topology: unknown topology"},
      {"stack", {"stack_variant=no-such-stack"}, "x: stack_variant: unknown stack profile"},
      {"layout", {"parallel.dp=3"}, "x: parallel.global_batch_size = 512 must be divisible"},
      {"precision", {"precision=NVFP4"}, "x: precision: "},
  };
  return bad;
}

// The message `checks` refuse `overrides` with in `context`, or "" when they accept it.
std::string refusal(const std::vector<std::string>& overrides,
                    std::span<const ConfigCheck> checks = config_checks(),
                    CheckContext context = CheckContext::kRun) {
  auto config = testing_support::small_llama(overrides);
  try {
    validate_config(config, "x", context, checks);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigChecks, EachCheckRefusesItsConfigAndNoOtherDoes) {
  const auto all = config_checks();
  for (const BadConfig& b : bad_configs()) {
    const std::string with = refusal(b.overrides, all);
    EXPECT_EQ(with.rfind(b.message, 0), 0u) << b.check << ": " << with;
    std::vector<ConfigCheck> without;
    for (const ConfigCheck& c : all)
      if (c.name != b.check) without.push_back(c);
    ASSERT_EQ(without.size() + 1, all.size()) << b.check << " is not in the list";
    EXPECT_NE(refusal(b.overrides, without), with) << b.check;
  }
}

// An unknown cluster.gpu names the source and the field for the planner and the memory report
// too, which skip the cluster check that names it for a run (they said "unknown GPU 'h1000'").
TEST(ConfigChecks, AnUnknownGpuNamesTheFieldInEveryContext) {
  for (const auto context : {CheckContext::kRun, CheckContext::kPlan}) {
    const std::string why = refusal({"cluster.gpu=no-such-gpu"}, config_checks(), context);
    EXPECT_EQ(why.rfind("x: cluster.gpu: unknown GPU 'no-such-gpu'", 0), 0u) << why;
  }
}

TEST(ConfigChecks, RunResolvesTheClusterAndThePlannerOnlyTheGpu) {
  auto config = testing_support::small_llama();
  auto planned = config;
  const CheckedConfig run = validate_config(config, "x", CheckContext::kRun);
  ASSERT_TRUE(run.cluster && run.gpu);
  EXPECT_EQ(run.gpu->name(), run.cluster->gpu_type());
  const CheckedConfig plan = validate_config(planned, "x", CheckContext::kPlan);
  EXPECT_FALSE(plan.cluster);
  ASSERT_TRUE(plan.gpu);
  EXPECT_EQ(plan.gpu->name(), run.gpu->name());
  // Both complete the config the same way: the resolved stack.
  EXPECT_EQ(config.resolved_stack().SerializeAsString(),
            planned.resolved_stack().SerializeAsString());
}

// Without cluster.gpu the planner and the memory report check the precision on the topology's
// GPU, as a run does (they printed an FP8 memory report for A100s, which have no FP8 tensor
// cores), and name the topology for one that does not resolve.
TEST(ConfigChecks, ThePlannerChecksThePrecisionOnTheTopologysGpu) {
  for (const auto context : {CheckContext::kRun, CheckContext::kPlan}) {
    const std::string why = refusal({"cluster.gpu=", "cluster.topology=dgx-a100", "precision=FP8"},
                                    config_checks(), context);
    EXPECT_EQ(why.rfind("x: precision: FP8 needs FP8 tensor cores", 0), 0u) << why;
  }
  EXPECT_EQ(configured_gpu(testing_support::small_llama({"cluster.gpu="}), "x"), "h100");
  const std::string why = refusal({"cluster.gpu=", "cluster.topology=no-such-topology"},
                                  config_checks(), CheckContext::kPlan);
  EXPECT_EQ(why.rfind("x: cluster.topology: unknown topology", 0), 0u) << why;
}

}  // namespace
}  // namespace cs::run
