#include "sim/coll/verify.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "sim/coll/algorithms.h"

namespace cs::coll {
namespace {

constexpr int kElemsPerUnit = 3;
constexpr double kTolerance = 1e-10;  // values in [-1, 1]; only summation order differs

struct Order {
  ExecOrder order;
  uint64_t seed;
};
const std::vector<Order> kOrders = {{ExecOrder::kFifo, 0},
                                    {ExecOrder::kLifo, 0},
                                    {ExecOrder::kRandom, 1},
                                    {ExecOrder::kRandom, 2},
                                    {ExecOrder::kRandom, 3}};

std::string describe(const ScheduleKey& key) {
  return std::string(to_string(key.op)) + "/" + std::string(to_string(key.algo)) +
         " n=" + std::to_string(key.n) + " chunks=" + std::to_string(key.chunks) +
         " local=" + std::to_string(key.local_size) + " root=" + std::to_string(key.root) +
         " window=" + std::to_string(key.window);
}

// Runs the schedule in every order and returns the worst output error.
double worst_error(const Schedule& schedule, const std::vector<Order>& orders, uint64_t seed = 7) {
  const DataCase data = make_data_case(schedule, kElemsPerUnit, seed);
  double worst = 0;
  for (const Order& o : orders) {
    std::vector<Eigen::VectorXd> buffers = data.initial;
    execute_on_data(schedule, buffers, kElemsPerUnit, o.order, o.seed);
    worst = std::max(worst, max_output_error(data, buffers));
  }
  return worst;
}

// One in flight per connection, a few, and more than any connection sends here: a window only
// removes dependencies, so the data must come out right for all of them.
const std::vector<int32_t> kWindows = {1, 2, 8, 1000};

void expect_correct(ScheduleKey key) {
  for (int32_t window : kWindows) {
    key.window = window;
    const auto schedule = build_schedule(key);
    EXPECT_LT(worst_error(*schedule, kOrders), kTolerance) << describe(key);
  }
}

const std::vector<int32_t> kSizes = {1, 2, 3, 5, 8, 16, 64};

TEST(VerifyOnData, RingAllReduceReduceScatterAllGather) {
  for (int32_t n : kSizes) {
    for (int32_t chunks : {1, 3}) {
      for (Op op : {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather}) {
        expect_correct(ScheduleKey{op, Algorithm::kRing, n, chunks});
      }
    }
  }
}

TEST(VerifyOnData, DoubleBinaryTreeAllReduce) {
  for (int32_t n : {1, 2, 3, 4, 5, 7, 8, 13, 16, 64}) {
    for (int32_t chunks : {1, 4})
      expect_correct(ScheduleKey{Op::kAllReduce, Algorithm::kTree, n, chunks});
  }
}

TEST(VerifyOnData, HierarchicalAllReduce) {
  const std::vector<std::pair<int32_t, int32_t>> shapes = {{1, 1}, {2, 1},  {2, 2},  {3, 3},
                                                           {5, 1}, {5, 5},  {6, 2},  {6, 3},
                                                           {8, 4}, {15, 5}, {16, 4}, {64, 8}};
  for (const auto& [n, local] : shapes) {
    for (int32_t chunks : {1, 2}) {
      ScheduleKey key{Op::kAllReduce, Algorithm::kHierarchical, n, chunks};
      key.local_size = local;
      expect_correct(key);
    }
  }
}

// NVLS inside each server, a double binary tree per rail between them: one and several servers
// (an odd count too), one GPU and several per server.
TEST(VerifyOnData, NvlsTreeAllReduce) {
  const std::vector<std::pair<int32_t, int32_t>> shapes = {{1, 1}, {4, 4},  {2, 1},  {6, 2},
                                                           {6, 3}, {15, 5}, {16, 8}, {40, 8}};
  for (const auto& [n, local] : shapes) {
    for (int32_t chunks : {1, 3}) {
      ScheduleKey key{Op::kAllReduce, Algorithm::kNvlsTree, n, chunks};
      key.local_size = local;
      expect_correct(key);
    }
  }
}

// NCCL's tree across servers: a chain per server and a double binary tree between servers, per
// channel; one server and several (odd counts too), one GPU per server and several, one channel,
// one per GPU of a server and more channels than GPUs.
TEST(VerifyOnData, ChainTreeAllReduce) {
  const std::vector<std::tuple<int32_t, int32_t, int32_t>> shapes = {
      {1, 1, 1}, {2, 1, 1}, {4, 4, 4},  {5, 1, 2},  {6, 2, 2},
      {6, 3, 1}, {8, 2, 3}, {15, 5, 5}, {16, 8, 8}, {40, 8, 8}};
  for (const auto& [n, local, channels] : shapes) {
    for (int32_t chunks : {1, 3}) {
      ScheduleKey key{Op::kAllReduce, Algorithm::kChainTree, n, chunks, local};
      key.channels = channels;
      expect_correct(key);
    }
  }
}

// Bruck's doubling for any group size, powers of two and not.
TEST(VerifyOnData, PatAllGatherAndReduceScatter) {
  for (int32_t n : {1, 2, 3, 5, 6, 7, 8, 12, 13, 64}) {
    for (Op op : {Op::kAllGather, Op::kReduceScatter})
      expect_correct(ScheduleKey{op, Algorithm::kPat, n, 1});
  }
}

TEST(VerifyOnData, BroadcastFromEveryKindOfRoot) {
  for (int32_t n : kSizes) {
    for (int32_t root : {0, n / 2, n - 1}) {
      for (int32_t chunks : {1, 4}) {
        ScheduleKey key{Op::kBroadcast, Algorithm::kRing, n, chunks};
        key.root = root;
        expect_correct(key);
        key.tail = kTailParts / 3;  // a short last piece
        expect_correct(key);
      }
    }
  }
}

TEST(VerifyOnData, AllToAllAndSendRecv) {
  for (int32_t n : kSizes) {
    expect_correct(ScheduleKey{Op::kAllToAll, Algorithm::kDirect, n});
    expect_correct(ScheduleKey{Op::kSendRecv, Algorithm::kDirect, n});
  }
}

// The check has teeth: the same schedule with one dependency dropped must fail in some order.
Schedule drop_deps(const Schedule& s, uint32_t victim, bool keep_channel_order) {
  ScheduleBuilder b(s.key(), s.num_units(), s.buffer_scale());
  for (uint32_t m = 0; m < s.num_messages(); ++m) {
    std::vector<uint32_t> deps;
    for (uint32_t d : s.deps(m)) {
      const bool channel = s.message(d).src == s.message(m).src;
      if (m != victim || (keep_channel_order && channel)) deps.push_back(d);
    }
    b.add(s.message(m), deps);
  }
  return std::move(b).build();
}

std::vector<Order> many_orders() {
  std::vector<Order> orders = {{ExecOrder::kFifo, 0}, {ExecOrder::kLifo, 0}};
  for (uint64_t seed = 1; seed <= 30; ++seed) orders.push_back({ExecOrder::kRandom, seed});
  return orders;
}

TEST(VerifyOnData, MissingDataDependencyIsCaught) {
  struct Case {
    ScheduleKey key;
    const char* what;
  };
  ScheduleKey hier{Op::kAllReduce, Algorithm::kHierarchical, 8, 1};
  hier.local_size = 4;
  ScheduleKey hier_chunked = hier;
  hier_chunked.chunks = 2;
  ScheduleKey chain_tree{Op::kAllReduce, Algorithm::kChainTree, 12, 2, 3};
  chain_tree.channels = 2;
  for (Case c : {Case{{Op::kAllReduce, Algorithm::kRing, 4}, "ring"},
                 Case{{Op::kAllReduce, Algorithm::kRing, 4, 2}, "ring chunked"},
                 Case{{Op::kAllReduce, Algorithm::kTree, 8, 2}, "tree"}, Case{hier, "hierarchical"},
                 Case{hier_chunked, "hierarchical chunked"}, Case{chain_tree, "chain-tree"},
                 Case{{Op::kBroadcast, Algorithm::kRing, 5, 2}, "broadcast"}}) {
    for (int32_t window : {1, 2, 8}) {
      c.key.window = window;
      SCOPED_TRACE(describe(c.key));
      const auto good = build_schedule(c.key);
      ASSERT_LT(worst_error(*good, many_orders()), kTolerance) << c.what;
      // Drop the data dependencies (not the window one on the sender's own connection) of every
      // message that has some, one message at a time: each must be needed.
      int checked = 0;
      for (uint32_t victim = 0; victim < good->num_messages(); ++victim) {
        bool has_data_dep = false;
        for (uint32_t d : good->deps(victim))
          has_data_dep |= good->message(d).src != good->message(victim).src;
        if (!has_data_dep) continue;
        const Schedule broken = drop_deps(*good, victim, true);
        EXPECT_GT(worst_error(broken, many_orders()), kTolerance)
            << c.what << ": dropping the data deps of message " << victim << " went unnoticed";
        ++checked;
      }
      EXPECT_GT(checked, 0) << c.what;
    }
  }
}

TEST(VerifyOnData, SchedulesWithoutDependenciesGiveOrderDependentResults) {
  const auto good = build_schedule(ScheduleKey{Op::kAllReduce, Algorithm::kRing, 5, 2});
  ScheduleBuilder b(good->key(), good->num_units());
  for (const Message& m : good->messages()) b.add(m);
  const Schedule none = std::move(b).build();
  EXPECT_GT(worst_error(none, kOrders), 1e-3);
}

}  // namespace
}  // namespace cs::coll

namespace cs::coll {
namespace {

// NCCL channels: parallel rings, rail-aligned across servers (an even and an odd server count,
// one and several GPUs per server), each moving its slice of every shard.
TEST(VerifyOnData, RailAlignedChannelRings) {
  const std::vector<std::tuple<int32_t, int32_t, int32_t>> shapes = {
      {8, 4, 4}, {12, 4, 4}, {16, 8, 8}, {6, 2, 2}, {6, 3, 2}, {8, 1, 3}, {5, 0, 2}};
  for (const auto& [n, local, channels] : shapes) {
    for (Op op : {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather}) {
      ScheduleKey key{op, Algorithm::kRing, n, 2, local};
      key.channels = channels;
      expect_correct(key);
    }
  }
}

// Broadcast around rail-aligned rings: each channel's chain starts at the root wherever the
// channel's ring order puts it.
TEST(VerifyOnData, RailAlignedChannelBroadcast) {
  const std::vector<std::tuple<int32_t, int32_t, int32_t>> shapes = {
      {8, 4, 4}, {12, 4, 4}, {16, 8, 8}, {6, 3, 2}, {8, 1, 3}};
  for (const auto& [n, local, channels] : shapes) {
    for (int32_t root : {0, 5, n - 1}) {
      ScheduleKey key{Op::kBroadcast, Algorithm::kRing, n, 2, local};
      key.channels = channels;
      key.root = root;
      expect_correct(key);
    }
  }
}

TEST(VerifyOnData, NvlsAllReduce) {
  for (int32_t n : {1, 2, 3, 8}) {
    for (int32_t chunks : {1, 3})
      expect_correct(ScheduleKey{Op::kAllReduce, Algorithm::kNvls, n, chunks});
  }
}

}  // namespace
}  // namespace cs::coll
