// An overlapped pair hands the compute stream over at each expert all-to-all, and a half with
// fewer all-to-alls is cut by compute time so that it fills every gap of the other.
#include "sim/workload/pair_turns.h"

#include <gtest/gtest.h>

#include <string>

namespace cs::workload {
namespace {

// A phase from a pattern: 'c' a 1 us compute op, 'C' a 3 us one, 'a' an expert all-to-all,
// 't' a TP collective and 'g' the EP group's token-count all-gather (neither a turn boundary).
PhaseOps phase(const std::string& pattern) {
  PhaseOps p;
  for (const char c : pattern) {
    Op op;
    if (c == 'a' || c == 't' || c == 'g') {
      op.kind = OpKind::kCollective;
      op.dim = c == 't' ? Dim::kTp : Dim::kEp;
      op.coll_op = c == 'a'   ? coll::Op::kAllToAll
                   : c == 'g' ? coll::Op::kAllGather
                              : coll::Op::kAllReduce;
    } else {
      op.duration = Time::us(c == 'C' ? 3 : 1);
    }
    p.add(op);
  }
  return p;
}

using Ends = std::vector<std::size_t>;

TEST(PairTurns, EachAllToAllEndsATurn) {
  const PhaseOps f = phase("ccaccacc"), b = phase("cccacccacc");
  const auto turns = pair_turns({&f, &b});
  EXPECT_EQ(turns[0], (Ends{3, 6, 8}));
  EXPECT_EQ(turns[1], (Ends{4, 8, 10}));
}

TEST(PairTurns, OtherCollectivesDoNotEndATurn) {
  const PhaseOps f = phase("ctcacc"), b = phase("ctcacc");
  EXPECT_EQ(pair_turns({&f, &b})[0], (Ends{4, 6}));
  const PhaseOps counted = phase("cgcacc");  // an EP collective that is not an all-to-all
  EXPECT_EQ(pair_turns({&counted, &b})[0], (Ends{4, 6}));
}

TEST(PairTurns, AHalfWithoutAllToAllsIsCutByComputeTime) {
  // The dense half (6 us) fills the two gaps of the expert half: cut where its compute reaches
  // half, then its longer part again.
  const PhaseOps dense = phase("cccccc"), experts = phase("cacac");
  const auto turns = pair_turns({&dense, &experts});
  EXPECT_EQ(turns[1], (Ends{2, 4, 5}));
  ASSERT_EQ(turns[0].size(), 3u);
  EXPECT_EQ(turns[0].back(), 6u);
  EXPECT_LT(turns[0][0], turns[0][1]);
  // A long op counts for its time: 'C' (3 us) alone is half of "Cccc".
  const PhaseOps uneven = phase("Cccc"), one = phase("cac");
  EXPECT_EQ(pair_turns({&uneven, &one})[0], (Ends{1, 4}));
}

TEST(PairTurns, AHalfTooShortToCutEndsEarly) {
  const PhaseOps single = phase("c"), experts = phase("cacac");
  const auto turns = pair_turns({&single, &experts});
  EXPECT_EQ(turns[0], (Ends{1, 1, 1}));
  EXPECT_EQ(turns[1], (Ends{2, 4, 5}));
}

}  // namespace
}  // namespace cs::workload
