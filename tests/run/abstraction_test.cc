// The simulation abstractions (SimulationConfig) against the detailed runs they replace: each
// keeps the step within 0.5% while cutting events.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/config/run_config.h"
#include "sim/run/step_simulation.h"

namespace cs::run {
namespace {

// Llama 3 8B's layer shapes on a few layers, TP 8 x PP 2 x DP 8 on 128 GPUs of the Llama 3
// cluster (16-flow ECMP): DP and PP traffic over shared ToR uplinks.
report::StepReport step(std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(),
                   {"model.num_layers=4", "model.seq_length=2048", "parallel.tp=8", "parallel.pp=2",
                    "parallel.dp=8", "parallel.global_batch_size=32", "parallel.zero_stage=1",
                    "cluster.topology=llama3-24k"});
  return simulate_step(load_run_config("", "llama3-8b", overrides).config, "test");
}

const std::string kNoFluid = "simulation.fluid_collectives=false";
const std::string kNoTpFold = "simulation.fold_tensor_parallel=false";
const std::string kNoDpFold = "simulation.fold_data_parallel=false";
const std::vector<std::string> kDetailed = {kNoFluid, kNoTpFold, kNoDpFold};

void expect_close(const report::StepReport& fast, const report::StepReport& detailed) {
  EXPECT_NEAR(fast.iteration_time_s / detailed.iteration_time_s, 1.0, 0.005);
  EXPECT_NEAR(fast.bubble_fraction, detailed.bubble_fraction, 0.005);
  EXPECT_NEAR(fast.exposed(workload::Dim::kDp), detailed.exposed(workload::Dim::kDp),
              0.005 * detailed.iteration_time_s);
  // Every byte is still sent, by every GPU.
  EXPECT_NEAR(fast.comm_bytes_network / detailed.comm_bytes_network, 1.0, 1e-6);
  for (std::size_t d = 0; d < fast.comm_bytes_by_dim.size(); ++d)
    EXPECT_NEAR(fast.comm_bytes_by_dim[d], detailed.comm_bytes_by_dim[d],
                1e-6 * detailed.comm_bytes_by_dim[d] + 1);
}

TEST(Abstractions, FoldingTensorParallelGroupsKeepsTheStepWithinHalfAPercent) {
  const auto detailed = step(kDetailed);
  const auto folded = step({kNoFluid, kNoDpFold});
  expect_close(folded, detailed);
  // Compute and TP events drop 8 times; the messages of the DP and PP traffic stay.
  EXPECT_LT(folded.events, detailed.events / 2);
}

TEST(Abstractions, FoldingDataParallelReplicasKeepsTheStepWithinHalfAPercent) {
  const auto detailed = step(kDetailed);
  const auto folded = step({kNoFluid, kNoTpFold});
  expect_close(folded, detailed);
  // One replica of eight runs its compute and pipeline transfers; DP messages stay.
  EXPECT_LT(folded.events, detailed.events / 2);
}

TEST(Abstractions, FluidCollectivesKeepTheStepWithinHalfAPercent) {
  const auto detailed = step(kDetailed);
  const auto fluid = step({kNoTpFold, kNoDpFold});
  expect_close(fluid, detailed);
  EXPECT_LT(fluid.events, detailed.events);
}

TEST(Abstractions, AllTogetherKeepTheStepWithinHalfAPercent) {
  const auto detailed = step(kDetailed);
  const auto fast = step({});
  expect_close(fast, detailed);
  EXPECT_LT(fast.events, detailed.events / 50);
}

TEST(Abstractions, ContextParallelLayoutsKeepTheStepWithinHalfAPercent) {
  // CP 2: ring attention's K/V hops between the two halves of each sequence, beside TP and DP.
  const std::vector<std::string> cp = {"parallel.cp=2", "parallel.dp=4"};
  auto with = [&](const std::vector<std::string>& extra) {
    auto overrides = cp;
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    return step(overrides);
  };
  const auto detailed = with(kDetailed);
  EXPECT_GT(detailed.comm_bytes_by_dim[static_cast<int>(workload::Dim::kCp)], 0);
  // Fluid collectives and folded replicas keep every figure.
  expect_close(with({kNoTpFold}), detailed);
  // Folded TP groups keep the step and every byte, but their first rank's waits stand for the
  // group's: about 2 points of bubble move to DP waits (a known gap of TP folding with CP).
  const auto fast = with({});
  EXPECT_NEAR(fast.iteration_time_s / detailed.iteration_time_s, 1.0, 0.005);
  for (std::size_t d = 0; d < fast.comm_bytes_by_dim.size(); ++d)
    EXPECT_NEAR(fast.comm_bytes_by_dim[d], detailed.comm_bytes_by_dim[d],
                1e-6 * detailed.comm_bytes_by_dim[d] + 1);
  EXPECT_LT(fast.events, detailed.events / 10);
}

// TP 1, 2 and 4 on dgx-h100 (8 GPUs a server): several replicas share each server, so the data-
// parallel rings mix NVLink and network hops (fluid with their own walk, ring.cc) and, folded,
// keep one server's links of each ring (FluidLane::runs). TP 1 runs ZeRO-3 (its gathers and
// reduce-scatters over DP), the others ZeRO-1.
report::StepReport small_tp_step(int32_t tp, std::vector<std::string> overrides) {
  overrides.insert(
      overrides.begin(),
      {"model.num_layers=2", "model.seq_length=2048", "parallel.tp=" + std::to_string(tp),
       "parallel.pp=1", "parallel.dp=" + std::to_string(64 / tp),
       "parallel.global_batch_size=" + std::to_string(128 / tp),
       "parallel.sequence_parallel=" + std::string(tp > 1 ? "true" : "false"),
       "parallel.zero_stage=" + std::string(tp > 1 ? "1" : "3"), "cluster.topology=dgx-h100"});
  return simulate_step(load_run_config("", "llama3-8b", overrides).config, "test");
}

TEST(Abstractions, SmallTensorParallelLayoutsKeepTheStepWithinHalfAPercent) {
  for (const int32_t tp : {1, 2, 4}) {
    SCOPED_TRACE("TP " + std::to_string(tp));
    const auto detailed = small_tp_step(tp, kDetailed);
    const auto fluid = small_tp_step(tp, {kNoTpFold, kNoDpFold});
    const auto fast = small_tp_step(tp, {});
    expect_close(fluid, detailed);
    expect_close(fast, detailed);
    // Folding the replicas (and each ring's servers) changes nothing beyond the fluid form.
    EXPECT_NEAR(fast.iteration_time_s / fluid.iteration_time_s, 1.0, 1e-9);
    EXPECT_LT(fast.events, detailed.events / 10);
  }
}

// Mixtral's layout (EP 8 inside DP 16, EDP 2 on 64 H100s). Under balanced routing every EP rank
// runs alike, so whole DP replicas fold and each EP group's all-to-all is sent by one member;
// under skewed routing the EP ranks differ and only whole EDP replicas may fold.
report::StepReport moe_step(const std::string& routing, std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), "model.moe.routing.kind=" + routing);
  return simulate_step(load_run_config("", "mixtral-8x7b", overrides).config, "test");
}

TEST(Abstractions, FoldingExpertParallelRanksKeepsTheStepUnderEitherRouting) {
  for (const std::string routing : {"BALANCED", "SKEWED"}) {
    SCOPED_TRACE(routing);
    const auto unfolded = moe_step(routing, {kNoDpFold});
    const auto folded = moe_step(routing, {});
    expect_close(folded, unfolded);
    EXPECT_LT(folded.events, unfolded.events);
  }
  // Balanced: one rank of each EP group runs, against every EP rank of one EDP replica.
  EXPECT_LT(moe_step("BALANCED", {}).events, moe_step("SKEWED", {}).events / 4);
}

TEST(Abstractions, FoldingNeedsTensorParallelGroupsThatOwnTheirNvlink) {
  // TP 4 leaves room for a second group on each server: nothing is folded, nothing changes.
  const std::vector<std::string> tp4 = {"parallel.tp=4", "parallel.dp=16",
                                        "parallel.global_batch_size=64", kNoFluid, kNoDpFold};
  auto folded = tp4, detailed = tp4;
  detailed.push_back(kNoTpFold);
  const auto a = step(folded), b = step(detailed);
  EXPECT_EQ(a.iteration_time_s, b.iteration_time_s);
  EXPECT_EQ(a.events, b.events);
}

}  // namespace
}  // namespace cs::run
