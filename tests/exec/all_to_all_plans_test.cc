// All-to-all plans: kept by key while they fit, held once when they do not.
#include "sim/exec/all_to_all_plans.h"

#include <gtest/gtest.h>

namespace cs::exec {
namespace {

AllToAllPlan plan_of(std::size_t edges, Bytes sent) {
  AllToAllPlan p;
  p.edges->resize(edges);
  p.sent = sent;
  return p;
}

TEST(AllToAllPlans, AKeptPlanIsFoundByItsKey) {
  AllToAllPlans plans(10);
  EXPECT_EQ(plans.find({0, 1, 64}), nullptr);
  const AllToAllPlan& kept = plans.store({0, 1, 64}, plan_of(4, 100));
  ASSERT_NE(plans.find({0, 1, 64}), nullptr);
  EXPECT_EQ(plans.find({0, 1, 64}), &kept);
  EXPECT_EQ(plans.find({0, 1, 64})->sent, 100);
  EXPECT_EQ(plans.find({0, 2, 64}), nullptr);  // another routing row
  EXPECT_EQ(plans.find({0, 1, 65}), nullptr);  // another size
  EXPECT_EQ(plans.edges_kept(), 4u);
}

TEST(AllToAllPlans, APlanBeyondTheEdgeBudgetIsHeldOnlyUntilTheNext) {
  AllToAllPlans plans(10);
  plans.store({0, 0, 1}, plan_of(8, 1));
  const AllToAllPlan& big = plans.store({1, 0, 1}, plan_of(4, 2));
  EXPECT_EQ(big.sent, 2);
  EXPECT_EQ(plans.find({1, 0, 1}), nullptr);
  EXPECT_EQ(plans.edges_kept(), 8u);
  const AllToAllPlan& once = plans.one_off(plan_of(1, 3));
  EXPECT_EQ(&once, &big);  // the same holder, now the one-off plan
  EXPECT_EQ(once.sent, 3);
}

}  // namespace
}  // namespace cs::exec
