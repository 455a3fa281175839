// Each numerical check passes on the right computation and fails on its deliberately broken twin.
#include "sim/verify/checks.h"

#include <gtest/gtest.h>

namespace cs::verify {
namespace {

const CheckOptions kBroken{.broken = true, .seed = 1};

TEST(Verify, ShardedMatmulsReassembleTheFullProduct) {
  for (int t : {2, 4, 8}) {
    EXPECT_TRUE(check_column_parallel(t).passed()) << t;
    EXPECT_TRUE(check_row_parallel(t).passed()) << t;
    EXPECT_FALSE(check_column_parallel(t, kBroken).passed()) << t;
    EXPECT_FALSE(check_row_parallel(t, kBroken).passed()) << t;
  }
}

TEST(Verify, AveragedShardGradientsEqualTheFullBatchGradient) {
  for (int d : {2, 3, 8}) {
    const auto ok = check_data_parallel_gradient(d);
    EXPECT_TRUE(ok.passed()) << d << " " << ok.max_error;
    EXPECT_FALSE(check_data_parallel_gradient(d, kBroken).passed()) << d;
  }
}

TEST(Verify, AccumulatedGradientEqualsTheLargeBatchGradient) {
  for (int k : {2, 4, 16}) {
    EXPECT_TRUE(check_gradient_accumulation(k).passed()) << k;
    EXPECT_FALSE(check_gradient_accumulation(k, kBroken).passed()) << k;
  }
}

TEST(Verify, ZeroShardedAdamEqualsUnsharded) {
  for (int n : {2, 4, 8}) {
    EXPECT_TRUE(check_zero_adam(n).passed()) << n;
    EXPECT_FALSE(check_zero_adam(n, kBroken).passed()) << n;
  }
}

TEST(Verify, EveryCollectiveScheduleComputesItsDefinition) {
  const auto results = check_collectives({2, 3, 4, 8});
  EXPECT_GE(results.size(), 8u);  // every supported (op, algorithm) pair
  for (const auto& r : results) EXPECT_TRUE(r.passed()) << r.name << " " << r.max_error;
  bool caught = false;
  for (const auto& r : check_collectives({4}, kBroken))
    if (r.name == "collective all_reduce / ring") caught = !r.passed();
  EXPECT_TRUE(caught);
}

TEST(Verify, RunAllPassesAndBrokenRunFails) {
  for (const auto& r : run_all_checks()) EXPECT_TRUE(r.passed()) << r.name;
  int failed = 0;
  for (const auto& r : run_all_checks(kBroken)) failed += r.passed() ? 0 : 1;
  EXPECT_GE(failed, 16);
}

}  // namespace
}  // namespace cs::verify
