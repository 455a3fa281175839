// Folding: which ranks run, whom each stands for, and from where folded collectives are sent.
#include "sim/exec/folding.h"

#include <gtest/gtest.h>

#include <vector>

namespace cs::exec {
namespace {

using workload::Dim;
using workload::Layout;

const std::vector<workload::Program> kNoPrograms;

TEST(Folding, NoneRunsEveryRank) {
  const Layout layout(8, 1, 2, 4);
  const Folding f(layout);
  for (int32_t r = 0; r < layout.world(); ++r) {
    EXPECT_TRUE(f.is_simulated(r));
    EXPECT_EQ(f.simulated_rank_of(r), r);
  }
  EXPECT_EQ(f.represented(), std::vector<int32_t>{0});
  EXPECT_EQ(f.copies(Dim::kDp), std::vector<int32_t>{0});
  EXPECT_EQ(f.posting(Dim::kTp), 8);
  EXPECT_EQ(f.posting(Dim::kDp), 4);
}

TEST(Folding, TensorParallelGroupRunsOnItsFirstRank) {
  const Layout layout(8, 1, 2, 4);  // TP ranks are consecutive
  const Folding f(layout, true, false, kNoPrograms);
  EXPECT_EQ(f.fold(Dim::kTp), 8);
  EXPECT_EQ(f.represented(), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(f.is_simulated(0));
  EXPECT_FALSE(f.is_simulated(1));
  EXPECT_TRUE(f.is_simulated(8));
  EXPECT_EQ(f.simulated_rank_of(13), 8);
  // The TP group's collective is the simulated rank's alone; a DP collective is sent once for
  // every TP rank it stands for (each in a different DP group).
  EXPECT_EQ(f.posting(Dim::kTp), 1);
  EXPECT_EQ(f.copies(Dim::kTp), std::vector<int32_t>{0});
  EXPECT_EQ(f.copies(Dim::kDp), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(f.posting(Dim::kDp), 4);
}

TEST(Folding, TensorParallelOfOneDoesNotFold) {
  const Folding f(Layout(1, 1, 2, 4), true, false, kNoPrograms);
  EXPECT_EQ(f.represented(), std::vector<int32_t>{0});
}

TEST(Folding, DataParallelReplicaZeroStandsForTheOthers) {
  const Layout layout(2, 1, 1, 4);
  const Folding f(layout, false, true, kNoPrograms);
  EXPECT_EQ(f.fold(Dim::kDp), 4);
  EXPECT_EQ(f.represented(), (std::vector<int32_t>{0, 2, 4, 6}));
  EXPECT_EQ(f.simulated_rank_of(5), 1);
  EXPECT_FALSE(f.is_simulated(2));
  EXPECT_EQ(f.posting(Dim::kDp), 1);
  EXPECT_EQ(f.posting(Dim::kTp), 2);
  EXPECT_EQ(f.copies(Dim::kTp), (std::vector<int32_t>{0, 2, 4, 6}));
  EXPECT_EQ(f.copies(Dim::kDp), std::vector<int32_t>{0});
}

// dp 8 with EP 2: EDP 4; an expert row whose ranks differ only folds whole EDP replicas.
Layout expert_layout() {
  return Layout(workload::DimSizes{1, 1, 1, 8, 2, 4});
}

TEST(Folding, BalancedExpertsFoldDataParallel) {
  std::vector<workload::Program> programs(1);
  programs[0].rank_times = {{Time::us(5), Time::us(5)}};
  const Layout layout = expert_layout();
  const Folding f(layout, false, true, programs);
  EXPECT_EQ(f.fold(Dim::kDp), 8);
  EXPECT_EQ(f.fold(Dim::kEdp), 1);
}

TEST(Folding, SkewedExpertsFoldWholeExpertDataParallelReplicas) {
  std::vector<workload::Program> programs(1);
  programs[0].rank_times = {{Time::us(5), Time::us(7)}};
  const Layout layout = expert_layout();
  const Folding f(layout, false, true, programs);
  EXPECT_EQ(f.fold(Dim::kDp), 1);
  EXPECT_EQ(f.fold(Dim::kEdp), 4);
  // Replica c is every rank's image c x EP places further.
  EXPECT_EQ(f.represented(), (std::vector<int32_t>{0, 2, 4, 6}));
  EXPECT_TRUE(f.is_simulated(1));  // the other EP rank of replica 0 runs
  EXPECT_FALSE(f.is_simulated(2));
  EXPECT_EQ(f.simulated_rank_of(7), 1);
}

}  // namespace
}  // namespace cs::exec
