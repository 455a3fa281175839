#include "sim/workload/layout.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "proto/config.pb.h"
#include "sim/workload/layout_config.h"

namespace cs::workload {
namespace {

clustersim::ParallelConfig parallel(int tp, int cp, int pp, int dp, int ep, int etp) {
  clustersim::ParallelConfig p;
  p.set_tp(tp);
  p.set_cp(cp);
  p.set_pp(pp);
  p.set_dp(dp);
  p.set_ep(ep);
  p.set_etp(etp);
  return p;
}

// Every group of `d` partitions the world: each rank is in exactly one, group ids are dense, and
// members agree on their group.
void expect_partition(const Layout& layout, Dim d) {
  std::vector<int> seen(static_cast<std::size_t>(layout.world()), 0);
  std::set<int32_t> ids;
  for (int32_t r = 0; r < layout.world(); ++r) {
    if (layout.coord(r, d) != 0) continue;
    const auto members = layout.group_members(r, d);
    ASSERT_EQ(static_cast<int32_t>(members.size()), layout.size(d));
    for (int32_t i = 0; i < layout.size(d); ++i) {
      ++seen[static_cast<std::size_t>(members[i])];
      EXPECT_EQ(layout.coord(members[i], d), i);
      EXPECT_EQ(layout.group_id(members[i], d), layout.group_id(r, d));
      if (d != Dim::kPp) {
        EXPECT_EQ(layout.coord(members[i], Dim::kPp), layout.coord(r, Dim::kPp));
      }
    }
    ids.insert(layout.group_id(r, d));
  }
  for (const int s : seen) EXPECT_EQ(s, 1);
  EXPECT_EQ(static_cast<int32_t>(ids.size()), layout.num_groups(d));
  EXPECT_EQ(*ids.rbegin(), layout.num_groups(d) - 1);
}

TEST(Layout, ExpertSizesComeFromEpAndEtp) {
  const auto sizes = dim_sizes(parallel(2, 2, 2, 8, 4, 0));  // etp 0: TP
  EXPECT_EQ(sizes[static_cast<int>(Dim::kEp)], 4);
  EXPECT_EQ(sizes[static_cast<int>(Dim::kEdp)], 2 * 2 * 8 / (2 * 4));
  EXPECT_EQ(world_of(sizes), 2 * 2 * 2 * 8);  // the expert dimensions are not factors
  EXPECT_EQ(dim_sizes(parallel(2, 1, 1, 4, 3, 0))[static_cast<int>(Dim::kEdp)], 0);  // 3 ∤ 4
  EXPECT_EQ(dims_text(sizes), "TP 2 x CP 2 x PP 2 x DP 8 x EP 4 x EDP 4");
  EXPECT_EQ(dims_text(dim_sizes(parallel(2, 2, 2, 8, 1, 0))), "TP 2 x CP 2 x PP 2 x DP 8");
}

// Megatron-Core's expert ranks with ETP = TP: an EP group holds the ranks of one TP coordinate
// in consecutive (CP, DP) places of its stage.
TEST(Layout, ExpertGroupsWithExpertTpEqualToTp) {
  const Layout layout = layout_of(parallel(2, 2, 2, 4, 4, 0));
  EXPECT_EQ(layout.expert_tp(), 2);
  // Stage 0's ranks with tp 0, by (cp, dp): the first four (cp, dp) places form an EP group.
  const int32_t s_cp = layout.stride(Dim::kCp), s_dp = layout.stride(Dim::kDp);
  EXPECT_EQ(layout.group_members(0, Dim::kEp), (std::vector<int32_t>{0, s_cp, s_dp, s_cp + s_dp}));
  EXPECT_EQ(layout.group_members(0, Dim::kEdp), (std::vector<int32_t>{0, 2 * s_dp}));
  for (const Dim d : {Dim::kEp, Dim::kEdp, Dim::kTp, Dim::kDp}) expect_partition(layout, d);
}

// With ETP 1 the EP group runs over consecutive ranks, TP ranks included.
TEST(Layout, ExpertGroupsWithExpertTpOne) {
  const Layout layout = layout_of(parallel(4, 1, 2, 4, 8, 1));
  EXPECT_EQ(layout.group_members(1, Dim::kEp),
            (std::vector<int32_t>{0, 1, 2, 3, 8, 9, 10, 11}));  // DP stride is TP x PP = 8
  EXPECT_EQ(layout.group_members(4, Dim::kEp),
            (std::vector<int32_t>{4, 5, 6, 7, 12, 13, 14, 15}));  // stage 1
  EXPECT_EQ(layout.size(Dim::kEdp), 2);
  for (const Dim d : {Dim::kEp, Dim::kEdp}) expect_partition(layout, d);
}

// Megatron-Core's order puts stages outermost, so EP groups carved from DP stay on one server.
TEST(Layout, PipelineOutermostKeepsExpertGroupsTogether) {
  auto p = parallel(1, 1, 4, 16, 8, 0);
  p.set_rank_order(clustersim::ParallelConfig::TP_CP_DP_PP);
  const Layout layout = layout_of(p);
  EXPECT_EQ(layout.stride(Dim::kDp), 1);
  EXPECT_EQ(layout.stride(Dim::kPp), 16);
  EXPECT_EQ(layout.group_members(17, Dim::kEp),
            (std::vector<int32_t>{16, 17, 18, 19, 20, 21, 22, 23}));
  EXPECT_EQ(layout.with_stage(17, 3), 49);
  for (const Dim d : {Dim::kTp, Dim::kPp, Dim::kDp, Dim::kEp, Dim::kEdp})
    expect_partition(layout, d);
  EXPECT_EQ(layout_of(parallel(1, 1, 4, 16, 8, 0)).group_members(0, Dim::kEp)[1], 4);
}

TEST(Layout, ExpertDimensionsAreUsedOnlyWhenExpertsAreSplit) {
  EXPECT_FALSE(layout_of(parallel(8, 1, 2, 4, 1, 0)).uses(Dim::kEdp));
  EXPECT_TRUE(layout_of(parallel(8, 1, 2, 4, 1, 0)).uses(Dim::kDp));
  EXPECT_TRUE(layout_of(parallel(1, 1, 2, 8, 4, 0)).uses(Dim::kEp));
  EXPECT_THROW(Layout(DimSizes{2, 1, 1, 4, 4, 4}, 2), std::invalid_argument);  // 2·4·4 ≠ 8
}

}  // namespace
}  // namespace cs::workload
