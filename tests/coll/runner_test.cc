#include "sim/coll/runner.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/net/analytical_network.h"
#include "sim/net/flow_network.h"
#include "sim/net/routing.h"
#include "sim/net/topology.h"

namespace cs::coll {
namespace {

using net::LinkClass;
using net::VertexId;
using net::VertexInfo;
using net::VertexKind;

// n GPUs, each on its own duplex link to one switch: a one-step path is two links.
net::Topology star(int n, Bandwidth bw, Time link_latency) {
  net::Topology t;
  const VertexId sw = t.add_vertex(VertexInfo{VertexKind::kSwitch, 0, -1, 0});
  for (int i = 0; i < n; ++i) {
    const VertexId g = t.add_vertex(VertexInfo{VertexKind::kGpu, -1, i, i});
    t.add_duplex_link(g, sw, bw, link_latency, LinkClass::kNetwork);
  }
  return t;
}

// `nodes` servers of `local` GPUs: inside a server every GPU links to an NVSwitch; between
// servers every GPU has its own NIC on one spine switch (rail style), so inter-node traffic of
// different local ranks never shares a link.
net::Topology two_level(int nodes, int local, Bandwidth fast, Time fast_latency, Bandwidth slow,
                        Time slow_latency) {
  net::Topology t;
  const VertexId spine = t.add_vertex(VertexInfo{VertexKind::kSwitch, 0, -1, 0});
  for (int q = 0; q < nodes; ++q) {
    const VertexId nvs = t.add_vertex(VertexInfo{VertexKind::kNvSwitch, -1, q, q});
    for (int l = 0; l < local; ++l) {
      const VertexId g = t.add_vertex(VertexInfo{VertexKind::kGpu, -1, q, q * local + l});
      const VertexId nic = t.add_vertex(VertexInfo{VertexKind::kNic, -1, q, q * local + l});
      t.add_duplex_link(g, nvs, fast, fast_latency, LinkClass::kNvlink);
      t.add_duplex_link(g, nic, slow, slow_latency, LinkClass::kPcie);
      t.add_duplex_link(nic, spine, slow, slow_latency, LinkClass::kNetwork);
    }
  }
  return t;
}

std::vector<VertexId> gpus(const net::Topology& t, int first, int count) {
  std::vector<VertexId> v;
  for (int i = 0; i < count; ++i) v.push_back(t.gpu(first + i));
  return v;
}

enum class NetKind { kFlow, kAnalytical };

// Runs one collective alone on the topology and returns its stats.
RunStats time_collective(const net::Topology& topo, const ScheduleKey& key, Bytes size,
                         NetKind kind = NetKind::kFlow) {
  Simulator sim;
  net::Routing routing(topo);
  std::unique_ptr<net::Network> network;
  if (kind == NetKind::kFlow) {
    network = std::make_unique<net::FlowNetwork>(sim, topo, routing);
  } else {
    network = std::make_unique<net::AnalyticalNetwork>(sim, routing);
  }
  const auto schedule = build_schedule(key);
  const auto vertices = gpus(topo, 0, key.n);
  std::optional<RunStats> result;
  run_collective(sim, *network, *schedule, vertices, size, [&](const RunStats& s) { result = s; });
  sim.run();
  EXPECT_TRUE(result.has_value());
  return result.value_or(RunStats{});
}

const Bandwidth kBw = Bandwidth::gigabytes_per_s(100);
const Time kLinkLatency = Time::us(1);
const double kAlpha = 2 * kLinkLatency.as_seconds();  // one ring step crosses two links

TEST(RunCollective, RingAllReduceMatchesAlphaBeta) {
  for (int n : {2, 3, 8, 16}) {
    const auto topo = star(n, kBw, kLinkLatency);
    for (Bytes size : {kMiB, kMiB + 7, kGiB}) {
      const RunStats s =
          time_collective(topo, ScheduleKey{Op::kAllReduce, Algorithm::kRing, n}, size);
      const double expected = 2.0 * (n - 1) * kAlpha +
                              2.0 * (n - 1) / n * static_cast<double>(size) / kBw.in_bytes_per_s();
      EXPECT_NEAR((s.end - s.start).as_seconds(), expected, 0.01 * expected)
          << "n=" << n << " size=" << size;
      EXPECT_EQ(s.bytes_sent, 2 * (n - 1) * size);  // every shard crosses 2(n-1) hops
      EXPECT_EQ(s.messages, static_cast<uint32_t>(2 * (n - 1) * n));
    }
  }
}

TEST(RunCollective, RingAllGatherAndReduceScatterMatchAlphaBeta) {
  for (int n : {2, 3, 8, 16}) {
    const auto topo = star(n, kBw, kLinkLatency);
    for (Bytes size : {kMiB, kMiB + 7, kGiB}) {
      for (Op op : {Op::kAllGather, Op::kReduceScatter}) {
        const RunStats s = time_collective(topo, ScheduleKey{op, Algorithm::kRing, n}, size);
        const double expected =
            (n - 1) * kAlpha + (n - 1.0) / n * static_cast<double>(size) / kBw.in_bytes_per_s();
        EXPECT_NEAR((s.end - s.start).as_seconds(), expected, 0.01 * expected)
            << to_string(op) << " n=" << n << " size=" << size;
        EXPECT_EQ(s.bytes_sent, (n - 1) * size);
      }
    }
  }
}

TEST(RunCollective, ContentionFreeRingAgreesWithAnalyticalNetwork) {
  // On a star a ring never shares a link, so both transfer models must agree, as long as a
  // connection has one message in flight (several would share its link in the flow model).
  const auto topo = star(8, kBw, kLinkLatency);
  ScheduleKey key{Op::kAllReduce, Algorithm::kRing, 8, 2};
  key.window = 1;
  const RunStats flow = time_collective(topo, key, 64 * kMiB, NetKind::kFlow);
  const RunStats analytical = time_collective(topo, key, 64 * kMiB, NetKind::kAnalytical);
  EXPECT_NEAR((flow.end - flow.start).as_seconds(),
              (analytical.end - analytical.start).as_seconds(),
              1e-3 * (flow.end - flow.start).as_seconds());
}

TEST(RunCollective, AllToAllIsBoundByEachRanksLink) {
  // Each rank pushes (n-1)/n·S through its one uplink; max-min sharing keeps it busy throughout.
  for (int n : {2, 5, 8}) {
    const auto topo = star(n, kBw, kLinkLatency);
    const Bytes size = 64 * kMiB;
    const RunStats s =
        time_collective(topo, ScheduleKey{Op::kAllToAll, Algorithm::kDirect, n}, size);
    const double expected =
        kAlpha + (n - 1.0) / n * static_cast<double>(size) / kBw.in_bytes_per_s();
    EXPECT_NEAR((s.end - s.start).as_seconds(), expected, 0.01 * expected) << "n=" << n;
    EXPECT_EQ(s.bytes_sent, (n - 1) * size);
  }
}

TEST(RunCollective, PipelinedBroadcastApproachesOneBufferTime) {
  // A chain of n ranks with c chunks, one in flight per connection, takes (n-1+c-1) chunk
  // steps: (n+c-2)(α + S/(c·B)).
  const int n = 8;
  const auto topo = star(n, kBw, kLinkLatency);
  const Bytes size = 256 * kMiB;
  for (int chunks : {1, 16}) {
    ScheduleKey key{Op::kBroadcast, Algorithm::kRing, n, chunks};
    key.root = 3;
    key.window = 1;
    const RunStats s = time_collective(topo, key, size);
    const double expected =
        (n + chunks - 2) * (kAlpha + static_cast<double>(size) / chunks / kBw.in_bytes_per_s());
    EXPECT_NEAR((s.end - s.start).as_seconds(), expected, 0.01 * expected) << "chunks=" << chunks;
  }
}

TEST(RunCollective, BroadcastsShortLastPieceFollowsTheFullOnes) {
  // c - 1 pieces of P and a last of P/4, one in flight per connection: the full pieces fill the
  // chain as before, (n + c - 3) steps of α + P/B, and the last one lands one short step later.
  const int n = 8, chunks = 3;
  const auto topo = star(n, kBw, kLinkLatency);
  const Bytes piece = 4 * kMiB;
  ScheduleKey key{Op::kBroadcast, Algorithm::kRing, n, chunks};
  key.window = 1;
  key.tail = kTailParts / 4;
  const RunStats s = time_collective(topo, key, (chunks - 1) * piece + piece / 4);
  const double bw = kBw.in_bytes_per_s(), p = static_cast<double>(piece);
  const double expected = (n + chunks - 3) * (kAlpha + p / bw) + kAlpha + p / 4 / bw;
  EXPECT_NEAR((s.end - s.start).as_seconds(), expected, 0.01 * expected);
}

TEST(RunCollective, WindowHidesPerChunkLatency) {
  // A chain with every chunk in flight at once (window >= chunks): each hop moves the whole
  // buffer, the chunks sharing the link, and pays one latency: (n-1)(α + S/B), against
  // (n+c-2)(α + S/(c·B)) one chunk at a time. For a small buffer that is (n-1) latencies
  // instead of (n+c-2).
  const int n = 8, chunks = 16;
  const auto topo = star(n, kBw, kLinkLatency);
  const Bytes size = 4 * kKiB;
  const double s = static_cast<double>(size), bw = kBw.in_bytes_per_s();
  ScheduleKey key{Op::kBroadcast, Algorithm::kRing, n, chunks};
  key.window = chunks;
  const RunStats wide = time_collective(topo, key, size);
  const double expected_wide = (n - 1) * (kAlpha + s / bw);
  EXPECT_NEAR((wide.end - wide.start).as_seconds(), expected_wide, 0.01 * expected_wide);
  key.window = 1;
  const RunStats narrow = time_collective(topo, key, size);
  const double expected_narrow = (n + chunks - 2) * (kAlpha + s / chunks / bw);
  EXPECT_NEAR((narrow.end - narrow.start).as_seconds(), expected_narrow, 0.01 * expected_narrow);

  // The double binary tree at 4 KiB in 64 chunks: with the window open it stays within a few
  // latencies of one chunk's up-and-down trip (2·depth hops, plus one per chunk-pair of
  // bandwidth), far from 64 chunks × α one at a time.
  const int tn = 16, tchunks = 64;
  const auto ttopo = star(tn, kBw, kLinkLatency);
  const int depth = 4;  // log2(16): every tree has at most 4 levels below its root
  ScheduleKey tree{Op::kAllReduce, Algorithm::kTree, tn, tchunks};
  tree.window = tchunks;
  const double t_wide = (time_collective(ttopo, tree, size).end - Time{}).as_seconds();
  const double bound = 2.0 * (tn - 1) / tn * s / bw;
  EXPECT_GE(t_wide, bound);
  EXPECT_LT(t_wide, 2 * (depth + 1) * kAlpha + 4 * s / bw);
  tree.window = 1;
  const double t_narrow = (time_collective(ttopo, tree, size).end - Time{}).as_seconds();
  EXPECT_GT(t_narrow, tchunks * kAlpha);
}

TEST(RunCollective, TreeAllReduceIsSensible) {
  const double bw = kBw.in_bytes_per_s();
  for (int n : {2, 3, 8, 16}) {
    const auto topo = star(n, kBw, kLinkLatency);
    const Bytes size = 256 * kMiB;
    const double ring = 2.0 * (n - 1) * kAlpha + 2.0 * (n - 1) / n * static_cast<double>(size) / bw;
    const RunStats s =
        time_collective(topo, ScheduleKey{Op::kAllReduce, Algorithm::kTree, n, 64}, size);
    const double t = (s.end - s.start).as_seconds();
    // No all-reduce beats the bandwidth bound; a well-pipelined tree stays near it.
    EXPECT_GE(t, 2.0 * (n - 1) / n * static_cast<double>(size) / bw) << "n=" << n;
    EXPECT_LT(t, 1.5 * ring) << "n=" << n;
    EXPECT_EQ(s.bytes_sent, 2 * (n - 1) * size);
  }
  // Small messages are latency-bound: log-depth trees beat a 2(n-1)-step ring.
  const int n = 64;
  const auto topo = star(n, kBw, kLinkLatency);
  const RunStats tree =
      time_collective(topo, ScheduleKey{Op::kAllReduce, Algorithm::kTree, n}, 4 * kKiB);
  const RunStats ring =
      time_collective(topo, ScheduleKey{Op::kAllReduce, Algorithm::kRing, n}, 4 * kKiB);
  EXPECT_LT((tree.end - tree.start).as_seconds() * 4, (ring.end - ring.start).as_seconds());
}

TEST(RunCollective, HierarchicalMatchesPhaseSumAndBeatsFlatRingOnSlowNetwork) {
  const Bandwidth fast = Bandwidth::gigabytes_per_s(400);
  const Bandwidth slow = Bandwidth::gigabytes_per_s(50);
  const Time fast_latency = Time::ns(250);
  const Time slow_latency = Time::ns(500);
  const double alpha_fast = 2 * fast_latency.as_seconds();  // GPU -> NVSwitch -> GPU
  const double alpha_slow = 4 * slow_latency.as_seconds();  // GPU -> NIC -> spine -> NIC -> GPU
  for (auto [nodes, local] : {std::pair{2, 4}, std::pair{4, 2}, std::pair{3, 4}}) {
    const int n = nodes * local;
    const auto topo = two_level(nodes, local, fast, fast_latency, slow, slow_latency);
    for (Bytes size : {kMiB, 256 * kMiB}) {
      const double s = static_cast<double>(size);
      ScheduleKey key{Op::kAllReduce, Algorithm::kHierarchical, n};
      key.local_size = local;
      const RunStats hier = time_collective(topo, key, size);
      // Intra reduce-scatter and all-gather: (L-1) steps of a shard S/L each; inter ring
      // all-reduce among N nodes of that shard, every local rank on its own NIC.
      const double expected =
          2.0 * (local - 1) * (alpha_fast + s / local / fast.in_bytes_per_s()) +
          2.0 * (nodes - 1) * (alpha_slow + s / (local * nodes) / slow.in_bytes_per_s());
      const double t_hier = (hier.end - hier.start).as_seconds();
      EXPECT_NEAR(t_hier, expected, 0.01 * expected) << nodes << "x" << local << " size=" << size;
      const RunStats flat =
          time_collective(topo, ScheduleKey{Op::kAllReduce, Algorithm::kRing, n}, size);
      EXPECT_LT(t_hier, (flat.end - flat.start).as_seconds()) << nodes << "x" << local;
      // Intra phases move (L-1)·S per node each; the L inter rings 2(N-1)·S/L each: 2(n-1)·S in
      // all, the same volume as a flat ring, but only 2(N-1)·S of it on the slow network.
      EXPECT_EQ(hier.bytes_sent, 2 * nodes * (local - 1) * size + 2 * (nodes - 1) * size);
      EXPECT_EQ(hier.bytes_sent, 2 * (n - 1) * size);
    }
  }
}

TEST(RunCollective, ManyGroupsShareOneScheduleConcurrently) {
  // 4 disjoint groups of 4 on one non-blocking switch: each finishes as if alone.
  const int groups = 4, n = 4;
  const auto topo = star(groups * n, kBw, kLinkLatency);
  Simulator sim;
  net::Routing routing(topo);
  net::FlowNetwork network(sim, topo, routing);
  ScheduleCache cache;
  std::vector<std::optional<RunStats>> results(groups);
  std::vector<std::shared_ptr<const Schedule>> held;
  const Bytes size = 16 * kMiB;
  for (int g = 0; g < groups; ++g) {
    held.push_back(cache.get(ScheduleKey{Op::kAllReduce, Algorithm::kRing, n}));
    const auto vertices = gpus(topo, g * n, n);
    run_collective(sim, network, *held.back(), vertices, size,
                   [&results, g](const RunStats& s) { results[g] = s; });
  }
  EXPECT_EQ(cache.size(), 1u);
  sim.run();
  const double expected =
      2.0 * (n - 1) * kAlpha + 2.0 * (n - 1) / n * static_cast<double>(size) / kBw.in_bytes_per_s();
  for (int g = 0; g < groups; ++g) {
    ASSERT_TRUE(results[g].has_value());
    EXPECT_NEAR((results[g]->end - results[g]->start).as_seconds(), expected, 0.01 * expected);
  }
}

TEST(RunCollective, SingleRankAndBadArguments) {
  const auto topo = star(2, kBw, kLinkLatency);
  Simulator sim;
  net::Routing routing(topo);
  net::FlowNetwork network(sim, topo, routing);
  const auto one = build_schedule(ScheduleKey{Op::kAllReduce, Algorithm::kRing, 1});
  const auto v = gpus(topo, 0, 1);
  int calls = 0;
  run_collective(sim, network, *one, v, kMiB, [&] { ++calls; });
  sim.run();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(sim.now(), Time{});
  const auto two = build_schedule(ScheduleKey{Op::kAllReduce, Algorithm::kRing, 2});
  EXPECT_THROW(run_collective(sim, network, *two, v, kMiB, [] {}), std::invalid_argument);
}

}  // namespace
}  // namespace cs::coll
