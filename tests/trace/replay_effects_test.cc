// An imported trace replays on the world `run` builds: the interference of communication with
// compute, and NCCL's settings, change its step as they change a run's.
#include <gtest/gtest.h>

#include "sim/compute/gpu_profile.h"
#include "sim/trace/chakra.h"
#include "sim/trace/replay.h"
#include "tests/support/chakra_nodes.h"

// A namespace of its own: the test folder builds as one unity source.
namespace cs::trace::replay_effects_test {
namespace {

using testing_support::comp;

// Eight ranks of one server, each running a compute kernel of `compute_ps` beside an all-reduce
// of `bytes`, neither waiting for the other: the two overlap from the start.
exec::ExplicitWorkload overlapped(int64_t compute_ps, int64_t bytes) {
  std::vector<ChakraRank> ranks(8);
  std::vector<std::string> files;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    ranks[r].nodes = {comp(1, compute_ps),
                      testing_support::coll(2, ChakraProtoMsg::ALL_REDUCE, bytes)};
    files.push_back("overlap." + std::to_string(r) + ".et");
  }
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  return chakra_to_workload(ranks, files, cost, {});
}

double step_seconds(const exec::ExplicitWorkload& workload, const ReplayTarget& target) {
  return simulate_workload(workload, target, "overlap", "overlap").iteration_time_s;
}

TEST(ReplayEffects, InterferenceSlowsComputeUnderCommunication) {
  // The kernel outlasts the all-reduce, so the step is the kernel's time, slowed while the
  // all-reduce holds SMs and HBM bandwidth.
  const auto workload = overlapped(/*compute_ps=*/20'000'000'000, /*bytes=*/int64_t{1} << 30);
  ReplayTarget target{"dgx-h100", "", clustersim::CONGESTION_AWARE};
  const double with = step_seconds(workload, target);
  target.effects.set_comm_compute_interference(false);
  const double without = step_seconds(workload, target);
  EXPECT_NEAR(without, 0.020, 0.0005);
  EXPECT_GT(with, without * 1.01) << "replay no longer applies the interference effect";
}

TEST(ReplayEffects, NcclProtocolSettingChangesTheCollective) {
  // A small all-reduce alone: LL's latency against Simple's.
  const auto workload = overlapped(/*compute_ps=*/1, /*bytes=*/64 << 10);
  ReplayTarget target{"dgx-h100", "", clustersim::CONGESTION_AWARE};
  target.nccl.set_protocol(clustersim::NcclConfig::SIMPLE);
  const double simple = step_seconds(workload, target);
  target.nccl.set_protocol(clustersim::NcclConfig::LL);
  const double ll = step_seconds(workload, target);
  EXPECT_LT(ll, simple) << "replay no longer applies nccl.protocol";
}

}  // namespace
}  // namespace cs::trace::replay_effects_test
