#include "sim/coll/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/collective.h"

namespace cs::coll {
namespace {

TEST(Collective, NamesRoundTrip) {
  for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter, Op::kAllToAll, Op::kBroadcast,
                Op::kSendRecv}) {
    EXPECT_EQ(parse_op(to_string(op)), op);
  }
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kHierarchical,
                      Algorithm::kDirect, Algorithm::kAuto}) {
    EXPECT_EQ(parse_algorithm(to_string(a)), a);
  }
  EXPECT_EQ(parse_op("all_reduce"), Op::kAllReduce);
  EXPECT_EQ(parse_algorithm("tree"), Algorithm::kTree);
  EXPECT_THROW(parse_op("allreduce"), std::invalid_argument);
  EXPECT_THROW(parse_algorithm("butterfly"), std::invalid_argument);
}

TEST(Collective, BusBandwidthFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Op::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Op::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Op::kReduceScatter, 3), 2.0 / 3);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Op::kAllToAll, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Op::kBroadcast, 16), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Op::kSendRecv, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Op::kAllReduce, 1), 0.0);
}

TEST(Collective, AutoResolvesPerOp) {
  EXPECT_EQ(resolve(Algorithm::kAuto, Op::kAllReduce), Algorithm::kRing);
  EXPECT_EQ(resolve(Algorithm::kAuto, Op::kAllToAll), Algorithm::kDirect);
  EXPECT_EQ(resolve(Algorithm::kTree, Op::kAllReduce), Algorithm::kTree);
  EXPECT_TRUE(supports(Algorithm::kAuto, Op::kSendRecv));
  EXPECT_FALSE(supports(Algorithm::kTree, Op::kAllGather));
  EXPECT_FALSE(supports(Algorithm::kDirect, Op::kAllReduce));
}

TEST(ScheduleBuilder, StoresDepsAndDependentsAsInverseCsr) {
  ScheduleBuilder b(ScheduleKey{.n = 3}, 3);
  const uint32_t a = b.add(Message{0, 1, 0, 0, 1, Action::kCopy});
  const uint32_t c = b.add(Message{1, 2, 1, 1, 1, Action::kReduce}, {a, a});
  const uint32_t d = b.add(Message{2, 0, 2, 2, 1, Action::kCopy}, {c, a});
  EXPECT_THROW(b.add(Message{0, 1, 0, 0, 1}, {7}), std::invalid_argument);
  EXPECT_THROW(b.add(Message{0, 3, 0, 0, 1}), std::invalid_argument);
  EXPECT_THROW(b.add(Message{0, 1, 2, 0, 2}), std::invalid_argument);
  const Schedule s = std::move(b).build();
  ASSERT_EQ(s.num_messages(), 3u);
  EXPECT_EQ(std::vector<uint32_t>(s.deps(c).begin(), s.deps(c).end()), std::vector<uint32_t>{a});
  EXPECT_EQ(std::vector<uint32_t>(s.deps(d).begin(), s.deps(d).end()),
            (std::vector<uint32_t>{a, c}));
  EXPECT_EQ(std::vector<uint32_t>(s.dependents(a).begin(), s.dependents(a).end()),
            (std::vector<uint32_t>{c, d}));
  EXPECT_TRUE(s.dependents(d).empty());
  EXPECT_EQ(s.max_deps(), 2u);
}

// Fills a builder for `key` to the cap and returns what the next message's refusal says.
std::string refusal_past_the_cap(const ScheduleKey& key) {
  ScheduleBuilder b(key, 1);
  for (std::size_t m = 0; m < kMaxScheduleMessages; ++m) b.add(Message{0, 1, 0, 0, 1});
  try {
    b.add(Message{0, 1, 0, 0, 1});
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ScheduleBuilder, RefusesMoreMessagesThanTheCapAndSaysWhatToRunInstead) {
  // A ring inside one server has a fluid form; an all-to-all has none.
  const ScheduleKey ring{.op = Op::kAllReduce, .algo = Algorithm::kRing, .n = 8, .node_size = 8};
  const std::string ring_refusal = refusal_past_the_cap(ring);
  EXPECT_NE(ring_refusal.find("ring all_reduce over 8 ranks"), std::string::npos) << ring_refusal;
  EXPECT_NE(ring_refusal.find("--fluid"), std::string::npos) << ring_refusal;
  const ScheduleKey all_to_all{.op = Op::kAllToAll, .algo = Algorithm::kDirect, .n = 8};
  const std::string direct_refusal = refusal_past_the_cap(all_to_all);
  EXPECT_NE(direct_refusal.find("no fluid form"), std::string::npos) << direct_refusal;
}

TEST(Schedule, UnitBytesSplitExactlyAndAddUp) {
  ScheduleBuilder b(ScheduleKey{.n = 1}, 7);
  const Schedule s = std::move(b).build();
  for (Bytes size : {Bytes{0}, Bytes{1}, Bytes{6}, Bytes{7}, Bytes{1000003}, 5 * kGiB + 3}) {
    Bytes total = 0;
    Bytes lo = size, hi = 0;
    for (uint32_t u = 0; u < 7; ++u) {
      const Bytes part = s.unit_bytes(u, u + 1, size);
      total += part;
      lo = std::min(lo, part);
      hi = std::max(hi, part);
    }
    EXPECT_EQ(total, size);
    EXPECT_LE(hi - lo, 1);
    EXPECT_EQ(s.unit_bytes(2, 5, size), s.unit_bytes(2, 3, size) + s.unit_bytes(3, 5, size));
  }
}

TEST(DoubleBinaryTree, EachTreeSpansAllRanksWithConsistentLinks) {
  for (int32_t n : {1, 2, 3, 4, 5, 7, 8, 13, 14, 16, 63, 64, 100}) {
    for (int tree = 0; tree < 2; ++tree) {
      int roots = 0;
      std::vector<int> child_count(n, 0);
      for (int32_t r = 0; r < n; ++r) {
        const TreeNode node = double_binary_tree(n, tree, r);
        if (node.parent < 0) ++roots;
        for (int32_t ch : {node.child0, node.child1}) {
          if (ch < 0) continue;
          ASSERT_LT(ch, n);
          EXPECT_EQ(double_binary_tree(n, tree, ch).parent, r) << "n=" << n << " tree=" << tree;
          ++child_count[ch];
        }
      }
      EXPECT_EQ(roots, 1) << "n=" << n;
      // Every non-root is the child of exactly one rank: a tree, since links are consistent.
      EXPECT_EQ(std::accumulate(child_count.begin(), child_count.end(), 0), n - 1);
    }
  }
}

TEST(DoubleBinaryTree, InnerNodesOfTheTwoTreesBarelyOverlap) {
  // The point of two trees: a rank forwards (sends to children) in at most one of them, so no
  // rank carries both halves' broadcast traffic. Odd n leaves one rank inner in both.
  for (int32_t n : {2, 3, 4, 5, 8, 13, 14, 64, 99}) {
    int both = 0;
    for (int32_t r = 0; r < n; ++r) {
      const auto inner = [&](int tree) {
        const TreeNode t = double_binary_tree(n, tree, r);
        return t.child0 >= 0 || t.child1 >= 0;
      };
      both += inner(0) && inner(1);
    }
    EXPECT_LE(both, n % 2) << "n=" << n;
  }
}

TEST(DoubleBinaryTree, MatchesNcclFourteenRankPicture) {
  // The picture in NCCL's trees.cc: 0 -> 8 -> {4, 12}; 12 -> {10, 13}; odd ranks are leaves.
  EXPECT_EQ(double_binary_tree(14, 0, 0).child1, 8);
  EXPECT_EQ(double_binary_tree(14, 0, 8).child0, 4);
  EXPECT_EQ(double_binary_tree(14, 0, 8).child1, 12);
  EXPECT_EQ(double_binary_tree(14, 0, 12).child0, 10);
  EXPECT_EQ(double_binary_tree(14, 0, 12).child1, 13);
  EXPECT_EQ(double_binary_tree(14, 0, 5).child0, -1);
  // Even n mirrors: tree 1's root is n-1 and the even ranks become leaves.
  EXPECT_EQ(double_binary_tree(14, 1, 13).parent, -1);
  EXPECT_EQ(double_binary_tree(14, 1, 2).child0, -1);
  // Odd n shifts by one: tree 1's root is 1.
  EXPECT_EQ(double_binary_tree(13, 1, 1).parent, -1);
}

// Per-rank bytes of the schedule against NCCL's formulas, for a size where everything divides
// and one where nothing does.
TEST(Schedule, PerRankBytesMatchNcclFormulas) {
  for (int32_t n : {1, 2, 3, 5, 8, 16, 64}) {
    for (int32_t chunks : {1, 4}) {
      const Bytes even = Bytes{n} * chunks * 4096;
      const Bytes odd = even + 12345;
      for (Bytes size : {even, odd}) {
        const double s = static_cast<double>(size);
        const double tolerance = static_cast<double>(2 * n * chunks);  // at most a byte per piece
        const auto check = [&](Op op, Algorithm algo, double expected_per_rank) {
          const auto sched = build_schedule(ScheduleKey{op, algo, n, chunks});
          const auto sent = sched->bytes_sent_per_rank(size);
          for (int32_t r = 0; r < n; ++r) {
            EXPECT_NEAR(static_cast<double>(sent[r]), expected_per_rank, tolerance)
                << to_string(op) << " n=" << n << " rank " << r;
            if (size == even) {
              EXPECT_EQ(static_cast<double>(sent[r]), expected_per_rank) << to_string(op);
            }
          }
        };
        check(Op::kAllReduce, Algorithm::kRing, 2.0 * (n - 1) / n * s);
        check(Op::kAllGather, Algorithm::kRing, 1.0 * (n - 1) / n * s);
        check(Op::kReduceScatter, Algorithm::kRing, 1.0 * (n - 1) / n * s);
        check(Op::kAllToAll, Algorithm::kDirect, 1.0 * (n - 1) / n * s);
        if (n > 1) check(Op::kSendRecv, Algorithm::kDirect, s);
        // Total over all ranks: a tree moves each half up n-1 edges and down n-1 edges, like a
        // ring's 2(n-1)/n·S per rank; hierarchical does the same per phase.
        for (Algorithm algo : {Algorithm::kTree, Algorithm::kHierarchical}) {
          ScheduleKey key{Op::kAllReduce, algo, n, chunks};
          key.local_size = n % 4 == 0 ? 4 : 1;
          const auto sent = build_schedule(key)->bytes_sent_per_rank(size);
          const double total = static_cast<double>(std::accumulate(sent.begin(), sent.end(), 0LL));
          EXPECT_NEAR(total, 2.0 * (n - 1) * s, tolerance * n) << to_string(algo);
        }
        // Broadcast: every rank but the last in the chain forwards the whole buffer once.
        ScheduleKey bkey{Op::kBroadcast, Algorithm::kRing, n, chunks};
        bkey.root = n / 2;
        const auto sent = build_schedule(bkey)->bytes_sent_per_rank(size);
        for (int32_t r = 0; r < n; ++r) {
          const bool last = (r + 1) % n == n / 2;
          EXPECT_EQ(sent[r], last ? 0 : size) << "broadcast n=" << n << " rank " << r;
        }
      }
    }
  }
}

TEST(Schedule, RingStepCountsAndChannelOrder) {
  for (int32_t n : {2, 3, 8}) {
    const auto ar = build_schedule(ScheduleKey{Op::kAllReduce, Algorithm::kRing, n});
    EXPECT_EQ(ar->num_messages(), static_cast<std::size_t>(2 * (n - 1) * n));
    const auto ag = build_schedule(ScheduleKey{Op::kAllGather, Algorithm::kRing, n, 3});
    EXPECT_EQ(ag->num_messages(), static_cast<std::size_t>(3 * (n - 1) * n));
    for (const Message& msg : ar->messages()) EXPECT_EQ(msg.dst, (msg.src + 1) % n);
  }
}

// Rail-aligned rings over servers of `local` members whose last server holds fewer (8 + 4 GPUs;
// 72 + 56 of two NVL72 racks): each channel visits every rank once, and every hop between
// servers leaves and enters on one local index (one NIC each end) but where a short server's
// own indices wrap.
TEST(Schedule, RailRingsTakeAShortLastServer) {
  for (const auto& [n, local, channels] : {std::tuple{12u, 8u, 4u}, std::tuple{128u, 72u, 16u},
                                           std::tuple{9u, 8u, 1u}, std::tuple{20u, 8u, 4u}}) {
    std::set<uint32_t> short_server_entries;
    for (uint32_t ch = 0; ch < channels; ++ch) {
      const auto ring = channel_ring(n, local, ch);
      ASSERT_EQ(ring.size(), n);
      EXPECT_EQ(std::set<uint32_t>(ring.begin(), ring.end()).size(), n);
      for (std::size_t p = 0; p < ring.size(); ++p) {
        const uint32_t a = ring[p], b = ring[(p + 1) % n];
        if (a / local == b / local) continue;  // inside a server
        const bool both_full = a / local < n / local && b / local < n / local;
        // Between full servers a hop stays on its rail, but the one closing the ring.
        if (both_full && b / local != 0) {
          EXPECT_EQ(a % local, b % local) << n << " ch " << ch;
        }
        if (b / local == n / local) short_server_entries.insert(b);
      }
    }
    // Each channel enters the short last server on a GPU of its own (its own NIC).
    const uint32_t short_size = n % local;
    EXPECT_EQ(short_server_entries.size(), std::min(channels, short_size)) << n;
  }
  // The schedule builds and every rank sends its share.
  ScheduleKey key{Op::kAllReduce, Algorithm::kRing, 12};
  key.local_size = 8;
  key.channels = 4;
  key.node_size = 8;
  const auto s = build_schedule(normalize(key));
  EXPECT_EQ(s->num_messages(), static_cast<std::size_t>(4 * 2 * 11 * 12));
  // A server count of member runs: the last run may be short; runs must not interleave.
  const auto runs = [](const std::vector<int32_t>& servers) {
    return members_per_server(static_cast<int32_t>(servers.size()),
                              [&](int32_t i) { return servers[i]; });
  };
  EXPECT_EQ(runs({0, 0, 0, 0, 1, 1}), 4);
  EXPECT_EQ(runs({0, 0, 1, 1, 2, 2}), 2);
  EXPECT_EQ(runs({0, 0, 0, 1, 1, 2}), 1);  // a short run before the last
  EXPECT_EQ(runs({0, 0, 1, 1, 0, 0}), 1);  // a server seen again
  EXPECT_EQ(runs({0, 1, 2}), 1);
  EXPECT_EQ(runs({3, 3, 3}), 3);
  // Groups planned together keep a count only when they all share it.
  const auto common = [](const std::vector<std::vector<int32_t>>& groups) {
    return common_members_per_server(static_cast<int32_t>(groups.size()),
                                     static_cast<int32_t>(groups.front().size()),
                                     [&](int32_t g, int32_t i) { return groups[g][i]; });
  };
  EXPECT_EQ(common({{0, 0, 1, 1}, {2, 2, 3, 3}}), 2);
  EXPECT_EQ(common({{0, 0, 0, 0}, {0, 1, 1, 1}}), 1);
  EXPECT_EQ(common({{0, 0, 0, 0}, {1, 1, 1, 1}}), 4);
}

// The window's definition: the k-th send on a connection (sender, receiver, channel) waits for its
// (k−W)-th, so at most W are in flight; the window never changes what moves.
TEST(Schedule, EverySendWaitsForTheSendOneWindowEarlierOnItsConnection) {
  std::vector<ScheduleKey> keys = {{Op::kAllReduce, Algorithm::kRing, 5, 3},
                                   {Op::kReduceScatter, Algorithm::kRing, 4, 2},
                                   {Op::kAllReduce, Algorithm::kTree, 13, 6},
                                   {Op::kBroadcast, Algorithm::kRing, 6, 10}};
  keys[3].root = 2;
  for (ScheduleKey key : keys) {
    key.window = 1;
    const auto one = build_schedule(key);
    for (int32_t window : {1, 2, 3, 8}) {
      key.window = window;
      const auto s = build_schedule(key);
      ASSERT_EQ(s->num_messages(), one->num_messages());
      EXPECT_EQ(s->bytes_sent_per_rank(12345), one->bytes_sent_per_rank(12345));
      // The two trees of a double binary tree are separate channels, one per half.
      const auto channel = [&](const Message& msg) {
        return key.algo == Algorithm::kTree ? msg.src_unit / static_cast<uint32_t>(key.chunks) : 0u;
      };
      std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::vector<uint32_t>> sends;
      for (uint32_t m = 0; m < s->num_messages(); ++m) {
        const Message& msg = s->message(m);
        auto& conn = sends[{msg.src, msg.dst, channel(msg)}];
        if (conn.size() >= static_cast<std::size_t>(window)) {
          const uint32_t earlier = conn[conn.size() - static_cast<std::size_t>(window)];
          const auto deps = s->deps(m);
          EXPECT_NE(std::find(deps.begin(), deps.end(), earlier), deps.end())
              << to_string(key.op) << " window " << window << " message " << m;
        }
        conn.push_back(m);
      }
    }
  }
}

TEST(AutoChunks, CutsBlocksIntoNcclSizedPiecesUpToACap) {
  // Hierarchical: S/n pieces in 2 MiB chunks (4 NCCL slots of 512 KiB). A flat ring: one.
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kHierarchical, 64, kGiB), 8);  // 16 MiB
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kHierarchical, 8, 16 * kMiB + 8), 2);
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kRing, 64, kGiB), 1);
  EXPECT_EQ(auto_chunks(Op::kAllGather, Algorithm::kAuto, 8, 64 * kMiB), 1);
  // Broadcast: the whole buffer in 512 KiB slots, rounded up.
  EXPECT_EQ(auto_chunks(Op::kBroadcast, Algorithm::kRing, 8, 4 * kMiB), 8);
  EXPECT_EQ(auto_chunks(Op::kBroadcast, Algorithm::kRing, 8, 4 * kMiB + 1), 9);
  // Tree: halves in 512 KiB pieces once there are 8 per level (64 ranks: 6 levels, 48 pieces);
  // smaller halves in pieces down to 64 KiB.
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kTree, 64, 48 * kMiB), 48);
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kTree, 64, kMiB), 8);  // 512 KiB / 64 KiB
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kTree, 64, 4 * kKiB), 1);
  // Chain-tree: a channel's tree carries S / (2 x GPUs per server) in NCCL's tree chunks: Simple's
  // 512 KiB at any size (the protocol unknown: Simple's), LL128's halved while there are fewer
  // than 8 per level of depth (7 + log2(servers)): 16 x 8 GPUs and 32 MiB give 2 MiB halves, 4
  // Simple chunks, or 32 LL128 pieces of 64 KiB (down to 128 KiB for 8 per level, then 64 KiB
  // for 4). Past about four million messages the pieces grow, to no fewer than 16 per channel.
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kChainTree, 16, 32 * kMiB, 8), 4);
  EXPECT_EQ(
      auto_chunks(Op::kAllReduce, Algorithm::kChainTree, 16, 32 * kMiB, 8, 0, Protocol::kSimple),
      4);
  EXPECT_EQ(
      auto_chunks(Op::kAllReduce, Algorithm::kChainTree, 16, 32 * kMiB, 8, 0, Protocol::kLl128),
      32);
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kChainTree, 16, kGiB, 8), kMaxAutoChunks);
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kChainTree, 1024, kGiB, 8), kMaxAutoChunks);
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kChainTree, 4096, kGiB, 8), 32);
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kChainTree, 8192, kGiB, 8), 16);
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kChainTree, 16384, kGiB, 8), 16);
  // One GPU per server: NCCL's double binary tree, halves of the buffer, log2(64) levels.
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kChainTree, 64, 48 * kMiB, 1), 48);
  // A channel's share is one channel's, not one GPU's of a server: 20 GB200 NVL72 racks on the
  // 16 channels NCCL's search gives them carry 16 GiB / 32 per tree, cut into 45 pieces by the
  // message budget; as one channel per GPU (72) they would carry a fifth of that in 16.
  const Bytes big = 16 * kGiB;
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kChainTree, 1440, big, 72, 16), 45);
  EXPECT_EQ(auto_chunks(Op::kAllReduce, Algorithm::kChainTree, 1440, big, 72), 16);
  // The cap, and what never pipelines.
  for (Algorithm algo : {Algorithm::kRing, Algorithm::kTree, Algorithm::kHierarchical}) {
    if (algo != Algorithm::kRing) {
      EXPECT_EQ(auto_chunks(Op::kAllReduce, algo, 16, 64 * kGiB), kMaxAutoChunks);
    }
    EXPECT_EQ(auto_chunks(Op::kAllReduce, algo, 1, kGiB), 1);
    EXPECT_EQ(auto_chunks(Op::kAllReduce, algo, 16, 0), 1);
  }
  EXPECT_EQ(auto_chunks(Op::kAllToAll, Algorithm::kAuto, 64, kGiB), 1);
  EXPECT_THROW(auto_chunks(Op::kAllReduce, Algorithm::kRing, 0, kMiB), std::invalid_argument);
}

// A broadcast's pieces: the count that costs its chain least, sqrt((n - 2) share / 64 KiB) of
// even pieces for LL and LL128, which hand lines on as they land; Simple's in NCCL's 512 KiB
// slices, the last one short, as long as there are no more of them than that.
TEST(AutoChunks, BroadcastStepsThroughEachChannelsShare) {
  const Op b = Op::kBroadcast;
  const Algorithm ring = Algorithm::kRing;
  // 9 MiB over 4 channels: 2.25 MiB each, four slices and a half.
  EXPECT_EQ(auto_chunks(b, ring, 64, 9 * kMiB, 8, 4, Protocol::kSimple), 5);
  EXPECT_EQ(auto_tail(b, ring, 64, 9 * kMiB, 8, 4, Protocol::kSimple), kTailParts / 2);
  EXPECT_EQ(auto_window(b, ring, 64, 5, 9 * kMiB, 8, 4, Protocol::kSimple), 1);
  // Whole slices and a single slice need no tail; a tail rounds up to 1/256 of a slice.
  EXPECT_EQ(auto_tail(b, ring, 64, 8 * kMiB, 8, 4, Protocol::kSimple), 0);
  EXPECT_EQ(auto_tail(b, ring, 64, kMiB, 8, 4, Protocol::kSimple), 0);
  EXPECT_EQ(auto_tail(b, ring, 8, kMiB + 1, 8, 1, Protocol::kSimple), 1);
  // 1 GiB over a chain of 8: 2,048 slices would pay 2,048 sends a connection; the cheapest
  // count, sqrt(6 x 16,384) = 313.5, of even pieces.
  EXPECT_EQ(auto_chunks(b, ring, 8, kGiB, 8, 1, Protocol::kSimple), 314);
  EXPECT_EQ(auto_tail(b, ring, 8, kGiB, 8, 1, Protocol::kSimple), 0);
  // Over 256 GPUs on 8 rails the chain is long: all 256 slices of each channel's 128 MiB, past
  // kMaxAutoChunks but within the schedule's million sends (514 a channel).
  EXPECT_EQ(auto_chunks(b, ring, 256, kGiB, 8, 8, Protocol::kSimple), 256);
  EXPECT_EQ(auto_chunks(b, ring, 256, 16 * kGiB, 8, 8, Protocol::kLl128), 514);
  // LL over 64 ranks, 4 channels of 112 KiB: sqrt(62 x 112 / 64) = 10.4 pieces.
  EXPECT_EQ(auto_chunks(b, ring, 64, 448 * kKiB, 4, 4, Protocol::kLl), 10);
  EXPECT_EQ(auto_tail(b, ring, 64, 448 * kKiB, 4, 4, Protocol::kLl), 0);
  EXPECT_EQ(auto_window(b, ring, 64, 10, 448 * kKiB, 4, 4, Protocol::kLl), 1);
  EXPECT_EQ(auto_chunks(b, ring, 8, 4 * kMiB, 8, 1, Protocol::kLl128), 20);  // sqrt(6 x 64)
  // Two ranks have no chain to fill: one piece.
  EXPECT_EQ(auto_chunks(b, ring, 2, 4 * kMiB, 8, 1, Protocol::kLl), 1);
  EXPECT_EQ(auto_chunks(b, ring, 2, kGiB, 8, 1, Protocol::kSimple), 1);
}

// Pieces of a broadcast schedule with a tail: c - 1 alike, the last tail / kTailParts of them.
TEST(BroadcastSchedule, TheLastPieceIsTheTailsShare) {
  ScheduleKey key{Op::kBroadcast, Algorithm::kRing, 4, 3};
  key.tail = kTailParts / 2;
  const auto s = build_schedule(key);
  const Bytes size = 5 * 256 * kKiB;  // 512 + 512 + 256 KiB
  ASSERT_EQ(s->num_messages(), 9u);   // 3 pieces over 3 hops
  std::vector<Bytes> bytes;
  for (uint32_t m = 0; m < 9; m += 3) bytes.push_back(s->message_bytes(m, size));  // hop 0
  EXPECT_EQ(bytes, (std::vector<Bytes>{512 * kKiB, 512 * kKiB, 256 * kKiB}));
  // The tail only means something for a broadcast of several pieces.
  key.chunks = 1;
  EXPECT_EQ(normalize(key).tail, 0);
  key.tail = kTailParts;
  EXPECT_THROW(normalize(key), std::invalid_argument);
  ScheduleKey ring{Op::kAllGather, Algorithm::kRing, 4, 3};
  ring.tail = 5;
  EXPECT_EQ(normalize(ring).tail, 0);
}

TEST(AutoWindow, KeepsAbout64KiBInFlightPerConnection) {
  // Ring messages are S/(n·chunks).
  EXPECT_EQ(auto_window(Op::kAllReduce, Algorithm::kRing, 64, 1, 4 * kKiB), kMaxWindow);
  EXPECT_EQ(auto_window(Op::kAllReduce, Algorithm::kRing, 64, 1, kMiB), 4);  // 16 KiB
  EXPECT_EQ(auto_window(Op::kAllReduce, Algorithm::kHierarchical, 64, 8, kGiB), 1);
  // Tree messages are S/(2·chunks).
  EXPECT_EQ(auto_window(Op::kAllReduce, Algorithm::kTree, 8, 2, 128 * kKiB), 2);  // 32 KiB
  EXPECT_EQ(auto_window(Op::kAllReduce, Algorithm::kTree, 8, 1, 0), kMaxWindow);
  EXPECT_EQ(auto_window(Op::kAllToAll, Algorithm::kDirect, 8, 1, 4 * kKiB), 1);
}

TEST(Collective, ChooseAlgorithmLikeNccl) {
  const Bytes small = kTreeMaxBytes / 2, large = 64 * kMiB;
  // Across 8 servers of 8: tree when latency-bound, hierarchical when bandwidth-bound.
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, 64, 8, small), Algorithm::kTree);
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, 64, 8, kTreeMaxBytes), Algorithm::kHierarchical);
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, 64, 8, large), Algorithm::kHierarchical);
  // One member per server, or servers that do not split the group evenly: ring.
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, 64, 1, small), Algorithm::kTree);
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, 64, 1, large), Algorithm::kRing);
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, 12, 8, large), Algorithm::kRing);
  // Inside one server NVLink is a full crossbar: ring at any size.
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, 8, 8, small), Algorithm::kRing);
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, 1, 1, small), Algorithm::kRing);
  // Other ops: what resolve gives.
  EXPECT_EQ(choose_algorithm(Op::kAllGather, 64, 8, large), Algorithm::kRing);
  EXPECT_EQ(choose_algorithm(Op::kAllToAll, 64, 8, small), Algorithm::kDirect);
  // Every choice is buildable for its shape.
  for (Bytes size : {small, large}) {
    ScheduleKey key{Op::kAllReduce, choose_algorithm(Op::kAllReduce, 64, 8, size), 64};
    key.local_size = 8;
    EXPECT_NO_THROW(build_schedule(key));
  }
}

TEST(Schedule, SingleRankGroupsNeedNoNetwork) {
  for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter, Op::kBroadcast}) {
    EXPECT_EQ(build_schedule(ScheduleKey{op, Algorithm::kAuto, 1})->num_messages(), 0u);
  }
  EXPECT_EQ(build_schedule(ScheduleKey{Op::kAllReduce, Algorithm::kTree, 1})->num_messages(), 0u);
  const auto a2a = build_schedule(ScheduleKey{Op::kAllToAll, Algorithm::kAuto, 1});
  ASSERT_EQ(a2a->num_messages(), 1u);
  EXPECT_TRUE(a2a->message(0).local());
}

TEST(ScheduleCache, SharesOneScheduleAcrossEqualShapes) {
  ScheduleCache cache;
  const auto a = cache.get(ScheduleKey{Op::kAllReduce, Algorithm::kAuto, 8, 2});
  std::vector<std::shared_ptr<const Schedule>> groups;
  for (int g = 0; g < 128; ++g) {
    groups.push_back(cache.get(ScheduleKey{Op::kAllReduce, Algorithm::kRing, 8, 2}));
  }
  for (const auto& s : groups) EXPECT_EQ(s.get(), a.get());
  // Fields the algorithm ignores do not split the cache.
  ScheduleKey with_root{Op::kAllReduce, Algorithm::kRing, 8, 2};
  with_root.root = 3;
  with_root.local_size = 4;
  EXPECT_EQ(cache.get(with_root).get(), a.get());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_NE(cache.get(ScheduleKey{Op::kAllReduce, Algorithm::kRing, 8, 1}).get(), a.get());
  EXPECT_EQ(cache.size(), 2u);
  // The window is part of the shape, except where nothing waits on a connection.
  ScheduleKey narrow{Op::kAllReduce, Algorithm::kRing, 8, 2};
  narrow.window = 1;
  EXPECT_NE(cache.get(narrow).get(), a.get());
  EXPECT_EQ(cache.size(), 3u);
  ScheduleKey a2a{Op::kAllToAll, Algorithm::kDirect, 8};
  const auto direct = cache.get(a2a);
  a2a.window = 3;
  EXPECT_EQ(cache.get(a2a).get(), direct.get());
}

TEST(ScheduleKey, RejectsInvalidShapes) {
  EXPECT_THROW(normalize(ScheduleKey{Op::kAllGather, Algorithm::kTree, 4}), std::invalid_argument);
  EXPECT_THROW(normalize(ScheduleKey{Op::kAllReduce, Algorithm::kRing, 0}), std::invalid_argument);
  EXPECT_THROW(normalize(ScheduleKey{Op::kAllReduce, Algorithm::kRing, 4, 0}),
               std::invalid_argument);
  ScheduleKey hier{Op::kAllReduce, Algorithm::kHierarchical, 6};
  hier.local_size = 4;
  EXPECT_THROW(normalize(hier), std::invalid_argument);
  hier.local_size = 0;
  EXPECT_THROW(normalize(hier), std::invalid_argument);
  ScheduleKey bcast{Op::kBroadcast, Algorithm::kRing, 4};
  bcast.root = 4;
  EXPECT_THROW(normalize(bcast), std::invalid_argument);
  ScheduleKey closed{Op::kAllReduce, Algorithm::kRing, 4};
  closed.window = 0;
  EXPECT_THROW(normalize(closed), std::invalid_argument);
}

}  // namespace
}  // namespace cs::coll
