// The bucket rule every lowering bucket follows: due once it holds its capacity, emptied when due,
// and the last partly filled one sent by a flush.
#include "sim/lower/bucket.h"

#include <gtest/gtest.h>

namespace cs::lower {
namespace {

TEST(Bucket, FillsUntilItHoldsItsCapacityThenEmpties) {
  Bucket b(100);
  EXPECT_EQ(b.add(40), 0);
  EXPECT_EQ(b.add(40), 0);
  EXPECT_EQ(b.held(), 80);
  EXPECT_EQ(b.add(30), 110);  // over capacity: the whole content goes, not just 100
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.add(100), 100);  // exactly its capacity is due
  EXPECT_TRUE(b.empty());
}

TEST(Bucket, OneLayerLargerThanTheCapacityIsABucketOfItsOwn) {
  Bucket b(100);
  EXPECT_EQ(b.add(10), 0);
  EXPECT_EQ(b.add(500), 510);
  EXPECT_EQ(b.add(500), 500);
}

TEST(Bucket, FlushSendsThePartlyFilledRestAndNothingWhenEmpty) {
  Bucket b(100);
  EXPECT_EQ(b.flush(), 0);
  EXPECT_EQ(b.add(30), 0);
  EXPECT_EQ(b.flush(), 30);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.flush(), 0);
  EXPECT_EQ(b.add(20, /*flush=*/true), 20);
}

TEST(Bucket, NothingIsDueWithoutParametersEvenAtCapacityZero) {
  Bucket b(0);
  EXPECT_EQ(b.add(0), 0);
  EXPECT_EQ(b.add(1), 1);
}

}  // namespace
}  // namespace cs::lower
