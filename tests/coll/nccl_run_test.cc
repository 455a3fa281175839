// The training-step path runs collectives through NCCL's model, and each config switch of it
// (RunConfig.nccl, EffectsConfig 40-44) changes the step.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/config/run_config.h"
#include "sim/run/step_simulation.h"

namespace cs::coll {
namespace {

// Llama 3 8B's shapes on a few layers, TP 8 in a server and DP 2 across two: TP collectives on
// NVLink (all-reduces without sequence parallelism: NVLS or ring, LL to Simple by size) and
// data-parallel ones on the network.
double step_seconds(std::vector<std::string> overrides) {
  overrides.insert(
      overrides.begin(),
      {"model.num_layers=4", "model.seq_length=2048", "parallel.tp=8", "parallel.pp=1",
       "parallel.dp=2", "parallel.global_batch_size=8", "parallel.sequence_parallel=false"});
  const auto config = load_run_config("", "llama3-8b", overrides).config;
  return run::simulate_step(config, "test").iteration_time_s;
}

TEST(NcclRun, EverySwitchChangesTheStep) {
  const double base = step_seconds({});
  for (const std::string off :
       {"effects.nccl_protocol_overhead=false", "effects.nvlink_protocol_overhead=false",
        "effects.nccl_step_latency=false", "nccl.nvls=false", "nccl.protocol=SIMPLE",
        "effects.nvls_switch_efficiency=false", "effects.network_packet_overhead=false"}) {
    EXPECT_NE(step_seconds({off}), base) << off;
  }
  // Paying less on the wire can only make the step faster.
  EXPECT_LT(step_seconds({"effects.nvlink_protocol_overhead=false"}), base);
  EXPECT_LT(step_seconds({"effects.nccl_step_latency=false"}), base);
  EXPECT_LT(step_seconds({"effects.nvls_switch_efficiency=false"}), base);
  EXPECT_LT(step_seconds({"effects.network_packet_overhead=false"}), base);
}

TEST(NcclRun, NegativeChannelsIsAConfigError) {
  EXPECT_THROW(step_seconds({"nccl.channels=-1"}), ConfigError);
}

}  // namespace
}  // namespace cs::coll
