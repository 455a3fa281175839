// Collective groups: when a layout group or a trace's communicator is ready, with whom, and why a
// post that cannot match is refused.
#include "sim/exec/collective_groups.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace cs::exec {
namespace {

using workload::Dim;
using workload::Layout;
using workload::Op;
using workload::OpKind;
using workload::Program;
using workload::Stream;

Op collective(Dim dim, Bytes bytes, coll::Op kind = coll::Op::kAllReduce, int32_t comm = -1) {
  Op o;
  o.kind = OpKind::kCollective;
  o.dim = dim;
  o.bytes = bytes;
  o.coll_op = kind;
  o.comm = comm;
  return o;
}

struct LayoutFixture {
  Layout layout{2, 1, 1, 2};  // ranks 0,1 and 2,3 are TP groups; 0,2 and 1,3 DP groups
  Program program;
  LayoutGroups::ByDim per_server{2, 1, 1, 1, 1, 1};
  std::array<bool, workload::kNumDims> owns{true, false, false, false, false, false};

  LayoutGroups groups(const Folding& folding) {
    return LayoutGroups(
        layout, [this](int32_t) -> const Program& { return program; }, folding, per_server, owns);
  }
};

TEST(LayoutGroups, ReadyOnceEveryMemberPostedWithMembersInRingOrder) {
  LayoutFixture f;
  f.program.ops = {collective(Dim::kDp, 1024)};
  const Folding folding(f.layout);
  LayoutGroups groups = f.groups(folding);
  EXPECT_FALSE(groups.post(2, 0).ready);
  EXPECT_FALSE(groups.post(1, 0).ready);  // another DP group
  const Posted posted = groups.post(0, 0);
  ASSERT_TRUE(posted.ready);
  EXPECT_TRUE(posted.refused.empty());
  EXPECT_EQ(posted.ready->members, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(posted.ready->posts, (std::vector<Post>{{0, 0}, {2, 0}}));
  EXPECT_EQ(posted.ready->path, CommPath::kNetworkCollective);
  EXPECT_FALSE(posted.ready->owns_nvlink);
  EXPECT_TRUE(posted.ready->blocking);  // on the compute stream
  ASSERT_TRUE(groups.post(3, 0).ready);
}

TEST(LayoutGroups, AServerWideGroupRunsOverNvlinkAndOffTheComputeStreamDoesNotBlock) {
  LayoutFixture f;
  Op o = collective(Dim::kTp, 1024);
  o.stream = Stream::kDp;
  f.program.ops = {o};
  const Folding folding(f.layout);
  LayoutGroups groups = f.groups(folding);
  EXPECT_FALSE(groups.post(0, 0).ready);
  const Posted posted = groups.post(1, 0);
  ASSERT_TRUE(posted.ready);
  EXPECT_EQ(posted.ready->path, CommPath::kNvlinkCollective);
  EXPECT_TRUE(posted.ready->owns_nvlink);
  EXPECT_FALSE(posted.ready->blocking);
  EXPECT_FALSE(posted.ready->all_to_all_v);
}

TEST(LayoutGroups, FoldedReplicasLeaveTheSimulatedMemberToPostAlone) {
  LayoutFixture f;
  f.program.ops = {collective(Dim::kDp, 1024)};
  const Folding folding(f.layout, false, true, {});
  LayoutGroups groups = f.groups(folding);
  const Posted posted = groups.post(0, 0);
  ASSERT_TRUE(posted.ready);
  EXPECT_EQ(posted.ready->members, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(posted.ready->posts, (std::vector<Post>{{0, 0}}));
}

TEST(LayoutGroups, AnOpWithARoutingRowIsAnAllToAllV) {
  LayoutFixture f;
  Op o = collective(Dim::kTp, 1024, coll::Op::kAllToAll);
  o.varies = 0;
  f.program.ops = {o};
  f.program.all_to_alls = {{{0.5, 0.5}}};
  const Folding folding(f.layout);
  LayoutGroups groups = f.groups(folding);
  groups.post(0, 0);
  const Posted posted = groups.post(1, 0);
  ASSERT_TRUE(posted.ready);
  EXPECT_TRUE(posted.ready->all_to_all_v);
  EXPECT_EQ(posted.ready->path, CommPath::kNvlinkCollective);  // NCCL's kernels
}

// DeepEP's all-to-alls load the GPU with its own SM count, inside a server and across servers.
TEST(LayoutGroups, ADeduplicatedAllToAllRunsOnDeepEpsSms) {
  LayoutFixture f;
  Op tp = collective(Dim::kTp, 1024, coll::Op::kAllToAll);
  tp.varies = 0;
  Op dp = collective(Dim::kDp, 1024, coll::Op::kAllToAll);
  dp.varies = 0;
  f.program.ops = {tp, dp};
  f.program.all_to_alls = {{{0.5, 0.5}}};
  f.program.all_to_alls[0].deduplicated = true;
  const Folding folding(f.layout);
  LayoutGroups groups = f.groups(folding);
  groups.post(0, 0);
  const Posted inside = groups.post(1, 0);
  ASSERT_TRUE(inside.ready);
  EXPECT_EQ(inside.ready->path, CommPath::kDeepEpNvlink);
  groups.post(0, 1);
  const Posted across = groups.post(2, 1);
  ASSERT_TRUE(across.ready);
  EXPECT_EQ(across.ready->path, CommPath::kDeepEpNetwork);
}

struct ExplicitFixture {
  std::vector<Program> programs = std::vector<Program>(4);
  std::vector<std::vector<int32_t>> comms = {{0, 1, 2, 3}, {0, 2}, {0, 1, 2}};

  ExplicitGroups groups() {
    return ExplicitGroups(
        comms, 4, [this](int32_t r) -> const Program& { return programs[r]; },
        [](int32_t r) { return r / 2; });  // two ranks per server
  }
};

TEST(ExplicitGroups, TheNthCollectiveOfACommunicatorMeetsTheNthOfEveryMember) {
  ExplicitFixture f;
  f.programs[0].ops = {collective(Dim::kDp, 100, coll::Op::kAllReduce, 1),
                       collective(Dim::kDp, 200, coll::Op::kAllReduce, 1)};
  f.programs[2].ops = f.programs[0].ops;
  ExplicitGroups groups = f.groups();
  EXPECT_FALSE(groups.post(0, 0).ready);
  EXPECT_FALSE(groups.post(0, 1).ready);
  const Posted first = groups.post(2, 0);
  ASSERT_TRUE(first.ready);
  EXPECT_EQ(first.ready->posts, (std::vector<Post>{{0, 0}, {2, 0}}));  // by arrival
  EXPECT_EQ(first.ready->members, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(first.ready->per_server, 1);
  EXPECT_FALSE(first.ready->blocking);
  const Posted second = groups.post(2, 1);
  ASSERT_TRUE(second.ready);
  EXPECT_EQ(second.ready->posts, (std::vector<Post>{{0, 1}, {2, 1}}));
}

TEST(ExplicitGroups, RefusesAPostThatCannotMatch) {
  ExplicitFixture f;
  f.programs[0].ops = {collective(Dim::kDp, 100, coll::Op::kAllReduce, 1),
                       collective(Dim::kDp, 100, coll::Op::kAllReduce, 7),
                       collective(Dim::kDp, 100, coll::Op::kAllReduce, 1)};
  f.programs[1].ops = {collective(Dim::kDp, 100, coll::Op::kAllReduce, 1)};
  f.programs[2].ops = {collective(Dim::kDp, 300, coll::Op::kAllReduce, 1)};
  ExplicitGroups groups = f.groups();
  EXPECT_NE(groups.post(0, 1).refused.find("communicator 7 does not exist"), std::string::npos);
  EXPECT_NE(groups.post(1, 0).refused.find("rank 1 is not a member of communicator 1"),
            std::string::npos);
  EXPECT_TRUE(groups.post(0, 0).refused.empty());
  const std::string why = groups.post(2, 0).refused;
  EXPECT_NE(why.find("this rank posts all_reduce of 300 bytes, rank 0 posted all_reduce of 100"),
            std::string::npos)
      << why;
}

TEST(ExplicitGroups, ServersHoldingEqualRunsGiveMembersPerServer) {
  ExplicitFixture f;
  ExplicitGroups groups = f.groups();
  EXPECT_EQ(groups.per_server(0), 2);  // {0,1} {2,3}
  EXPECT_EQ(groups.per_server(1), 1);  // one member on each server
  EXPECT_EQ(groups.per_server(2), 2);  // {0,1} {2}: runs of 2, the last one short
}

TEST(ExplicitGroups, AllToAllVWhenAnyMemberSendsSizesOfItsOwn) {
  ExplicitFixture f;
  f.comms = {{0, 1}};
  f.programs[0].ops = {collective(Dim::kEp, 100, coll::Op::kAllToAll, 0)};
  f.programs[1].ops = {collective(Dim::kEp, 500, coll::Op::kAllToAll, 0)};
  f.programs[1].ops[0].varies = 0;
  f.programs[1].all_to_alls = {{{0.2, 0.8}}};
  ExplicitGroups groups = f.groups();
  EXPECT_TRUE(groups.post(0, 0).refused.empty());
  const Posted posted = groups.post(1, 0);  // sizes differ, yet it matches
  ASSERT_TRUE(posted.ready) << posted.refused;
  EXPECT_TRUE(posted.ready->all_to_all_v);
  EXPECT_EQ(posted.ready->path, CommPath::kNvlinkCollective);
}

TEST(ExplicitGroups, ACommunicatorNamingAnAbsentRankIsRefusedAtConstruction) {
  ExplicitFixture f;
  f.comms = {{0, 4}};
  EXPECT_THROW(f.groups(), std::invalid_argument);
}

}  // namespace
}  // namespace cs::exec
