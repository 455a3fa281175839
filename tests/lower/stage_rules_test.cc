// The run-wide lowering rules: the gradient bucket rule of Megatron and of DeepSpeed, what offload
// applies, and which parameters fill the dense buckets.
#include "sim/lower/stage_rules.h"

#include <gtest/gtest.h>

#include "sim/workload/model_math.h"
#include "tests/support/lowering_fixtures.h"
#include "tests/support/moe_fixtures.h"

namespace cs::lower {
namespace {

using testing_support::small_llama;
using testing_support::StageLowering;

TEST(StageRules, MegatronBucketsByDpBucketParamsAndOverlaps) {
  const auto c = small_llama({"parallel.dp_bucket_params=1234"});
  const GradRule r = grad_rule_of(c);
  EXPECT_EQ(r.bucket_params, 1234);
  EXPECT_FALSE(r.all_reduce);
  EXPECT_FALSE(r.on_compute_stream);
}

TEST(StageRules, DeepSpeedBelowZero3AllReducesOnTheComputeStream) {
  for (const int zero : {2, 3}) {
    SCOPED_TRACE(zero);
    const GradRule r = grad_rule_of(testing_support::data_parallel("DEEPSPEED_ZERO", {}, zero));
    EXPECT_EQ(r.all_reduce, zero < 3);
    EXPECT_EQ(r.on_compute_stream, zero < 3);
  }
}

TEST(StageRules, ParameterOffloadNeedsZero3AndShardingNeedsDataParallelism) {
  const StageLowering z1(small_llama({"parallel.zero_stage=1", "offload.parameters=CPU"}));
  EXPECT_FALSE(z1.rules.offload_params);
  EXPECT_FALSE(z1.rules.gather_weights);
  EXPECT_EQ(z1.rules.shard_div, z1.config.parallel().dp());
  const StageLowering z3(small_llama({"parallel.zero_stage=3", "offload.parameters=CPU"}));
  EXPECT_TRUE(z3.rules.offload_params);
  EXPECT_TRUE(z3.rules.gather_weights);
  EXPECT_FALSE(z3.rules.sharded);  // Megatron's lowering, not a stack's own
  const StageLowering z0(small_llama({"parallel.zero_stage=0"}));
  EXPECT_EQ(z0.rules.shard_div, 1);
}

TEST(StageRules, RoutedExpertsLeaveTheDenseBucketsOnlyWithAGroupOfTheirOwn) {
  const StageLowering ep(testing_support::small_mixtral());
  const StageLowering no_ep(testing_support::small_mixtral({"parallel.ep=1"}));
  const auto& c = no_ep.config;
  EXPECT_EQ(ep.rules.dense_params(0), workload::layer_dense_params(ep.config, 0));
  EXPECT_EQ(no_ep.rules.dense_params(0),
            workload::layer_dense_params(c, 0) + workload::layer_expert_params(c, 0));
}

}  // namespace
}  // namespace cs::lower
