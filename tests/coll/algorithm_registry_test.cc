// The algorithm table agrees with the enum and the names, each entry's forms say what its
// schedules do, and the errors that name algorithms are unchanged.
#include "sim/coll/algorithms/registry.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "sim/coll/algorithms.h"
#include "sim/coll/collective.h"

namespace cs::coll {
namespace {

constexpr Op kOps[] = {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter,
                       Op::kAllToAll,  Op::kBroadcast, Op::kSendRecv};
static_assert(std::size(kOps) == kNumOps);

std::string message_of(const auto& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no throw";
}

TEST(AlgorithmRegistry, TableFollowsTheEnumAndTheNames) {
  const auto& table = algorithm_table();
  // Every value before kAuto has an entry, in enum order; kAuto has none.
  ASSERT_EQ(table.size(), static_cast<size_t>(Algorithm::kAuto));
  std::set<std::string_view> names;
  for (size_t i = 0; i < table.size(); ++i) {
    const AlgorithmInfo& a = table[i];
    SCOPED_TRACE(std::string(a.name));
    EXPECT_EQ(static_cast<size_t>(a.value), i);
    EXPECT_EQ(&algorithm_info(a.value), &a);
    EXPECT_EQ(to_string(a.value), a.name);
    EXPECT_EQ(parse_algorithm(a.name), a.value);
    EXPECT_TRUE(names.insert(a.name).second);
    EXPECT_FALSE(a.ops.empty());
    std::set<Op> ops;
    for (const OpForm& f : a.ops) {
      EXPECT_TRUE(ops.insert(f.op).second) << to_string(f.op);
      EXPECT_NE(f.build, nullptr) << to_string(f.op);
      EXPECT_EQ(f.fluid.fits == nullptr, f.fluid.phases == nullptr) << to_string(f.op);
      EXPECT_EQ(a.form(f.op), &f);
      EXPECT_EQ(find_form(a.value, f.op), &f);
    }
    for (const Op op : kOps) EXPECT_EQ(supports(a.value, op), ops.count(op) == 1) << to_string(op);
  }
  EXPECT_EQ(to_string(Algorithm::kAuto), "auto");
  EXPECT_EQ(parse_algorithm("auto"), Algorithm::kAuto);
  EXPECT_THROW(algorithm_info(Algorithm::kAuto), std::invalid_argument);
  EXPECT_EQ(to_string(static_cast<Algorithm>(200)), "?");
  for (const Op op : kOps) {
    EXPECT_EQ(find_form(Algorithm::kAuto, op), nullptr);
    // Whatever kAuto resolves to implements the op.
    EXPECT_TRUE(supports(Algorithm::kAuto, op)) << to_string(op);
  }
}

TEST(AlgorithmRegistry, FormsMatchTheirSchedules) {
  for (const AlgorithmInfo& a : algorithm_table()) {
    for (const OpForm& f : a.ops) {
      SCOPED_TRACE(std::string(a.name) + " " + std::string(to_string(f.op)));
      ScheduleKey key{f.op, a.value, 8, 3};
      key.window = 2;
      key.channels = 2;
      key.local_size = 4;
      const ScheduleKey k = normalize(key);
      // Chunks and window stay only where the form pipelines, channels where it takes them,
      // local_size where the schedule is laid out on servers or runs rail-aligned rings.
      EXPECT_EQ(k.chunks, f.pipelining ? 3 : 1);
      EXPECT_EQ(k.window, f.pipelining ? 2 : 1);
      EXPECT_EQ(k.channels, f.channels ? 2 : 1);
      EXPECT_EQ(k.local_size, f.on_servers() || f.channels ? 4 : 0);
      EXPECT_EQ(build_schedule(key)->key(), k);
      if (f.on_servers()) {
        key.local_size = 3;
        EXPECT_THROW(normalize(key), std::invalid_argument);
      }
      // Forms without pipelining get one chunk and one send in flight, whatever the size.
      if (f.pipelining == nullptr) {
        EXPECT_EQ(auto_chunks(f.op, a.value, 64, kGiB), 1);
        EXPECT_EQ(auto_window(f.op, a.value, 64, 1, 4 * kKiB), 1);
      }
    }
  }
}

TEST(AlgorithmRegistry, ErrorMessagesNameTheAlgorithms) {
  EXPECT_EQ(message_of([] { parse_algorithm("butterfly"); }),
            "unknown collective algorithm 'butterfly' (expected one of: ring, tree, hierarchical, "
            "direct, nvls, nvls_tree, pat, chain_tree, auto)");
  EXPECT_EQ(message_of([] {
              normalize(ScheduleKey{Op::kAllGather, Algorithm::kTree, 4});
            }),
            "collective algorithm 'tree' does not implement all_gather");
  EXPECT_EQ(message_of([] {
              normalize(ScheduleKey{Op::kAllReduce, Algorithm::kDirect, 4});
            }),
            "collective algorithm 'direct' does not implement all_reduce");
  ScheduleKey hier{Op::kAllReduce, Algorithm::kHierarchical, 6};
  hier.local_size = 4;
  EXPECT_EQ(message_of([&] { normalize(hier); }),
            "hierarchical all-reduce need local_size >= 1 dividing the group size (n = 6, "
            "local_size = 4)");
  // Rail-aligned rings take a short last server (6 = 4 + 2), not servers larger than the group.
  ScheduleKey rails{Op::kAllGather, Algorithm::kRing, 6};
  rails.channels = 2;
  rails.local_size = 4;
  EXPECT_EQ(message_of([&] { normalize(rails); }), "no throw");
  rails.local_size = 8;
  EXPECT_EQ(message_of([&] { normalize(rails); }),
            "rail-aligned rings need local_size <= n (n = 6, local_size = 8)");
}

}  // namespace
}  // namespace cs::coll
