// Oversubscribed tiers' trunks, and the analytical network queuing at them.
#include "sim/net/trunks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/simulator.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"

namespace cs::net {
namespace {

constexpr double kNicBytesPerS = 400e9 / 8;

// Two leaves of two servers of two GPUs (one 400 Gb/s NIC each) under one spine; `over` is the
// leaves' oversubscription, so each leaf has 4 NICs below and 4 / over of their rate above.
Topology two_leaves(double over) {
  const std::string text =
      "name: \"t\" gpu: \"h100\" tiered { node { gpus_per_node: 2 nvlink_bandwidth_gbytes: 450 "
      "nvlink_latency_ns: 250 nics_per_gpu: 1 nic_bandwidth_gbits: 400 pcie_bandwidth_gbytes: 63 "
      "pcie_latency_ns: 300 } tiers { group_size: 2 switches_per_group: 1 link_latency_ns: 100 "
      "oversubscription: " +
      std::to_string(over) +
      " } tiers { group_size: 2 switches_per_group: 1 link_latency_ns: 200 } }";
  return build_topology(load_topology_text(text, "t.textproto"), 8, "t.textproto");
}

TEST(Trunks, EachOversubscribedGroupHasAnOutAndAnInTrunkOfItsLinksSum) {
  const Topology t = two_leaves(4);
  const Trunks trunks = oversubscribed_trunks(t);
  ASSERT_EQ(trunks.bandwidth.size(), 4u);  // two leaves, out and in
  for (const Bandwidth bw : trunks.bandwidth)
    EXPECT_NEAR(bw.in_bytes_per_s(), 4 * kNicBytesPerS / 4, 1e-3);
  // Every link between a leaf and the spine is in a trunk, no other link is.
  for (LinkId l = 0; l < t.num_links(); ++l) {
    const VertexInfo& a = t.vertex(t.link_source(l));
    const VertexInfo& b = t.vertex(t.link_target(l));
    const bool leaf_spine =
        a.kind == VertexKind::kSwitch && b.kind == VertexKind::kSwitch && a.tier != b.tier;
    EXPECT_EQ(trunks.trunk(l) >= 0, leaf_spine) << l;
  }
}

TEST(Trunks, FullBisectionAndUntieredGraphsHaveNone) {
  EXPECT_TRUE(oversubscribed_trunks(two_leaves(1)).empty());
  Topology hand;  // no tier groups
  const VertexId a = hand.add_vertex({VertexKind::kGpu, -1, 0, -1});
  const VertexId s = hand.add_vertex({VertexKind::kSwitch, 0, -1, -1});
  hand.add_duplex_link(a, s, Bandwidth::gigabytes_per_s(50), Time::ns(100), LinkClass::kNetwork);
  EXPECT_TRUE(oversubscribed_trunks(hand).empty());
}

TEST(Trunks, Llama3PodsSendAtASeventhOfTheirNicsAcrossTheirTier) {
  const Topology t = build_topology(resolve_topology("llama3-24k"), 6144, "llama3-24k");
  const Trunks trunks = oversubscribed_trunks(t);
  ASSERT_EQ(trunks.bandwidth.size(), 4u);  // two pods of 3,072 GPUs
  EXPECT_NEAR(trunks.bandwidth[0].in_bytes_per_s() / (3072 * kNicBytesPerS), 1.0 / 7, 1e-9);
}

TEST(TierSpans, GiveTheRouteLatencyOfTheTierTwoServersShare) {
  // GPU 0 and a GPU of another server: under one ToR, one pod, or two pods of llama3-24k; on the
  // same rail of a DGX H100 SuperPOD's leaf and spine.
  for (const auto& [name, peers] : std::vector<std::pair<std::string, std::vector<int32_t>>>{
           {"llama3-24k", {8, 16, 3072}}, {"dgx-h100", {8, 256}}}) {
    SCOPED_TRACE(name);
    const auto description = resolve_topology(name);
    const Topology t = build_topology(description, 6144, name);
    Routing routing(t);
    const auto spans = tier_spans(description);
    for (const int32_t peer : peers) {
      std::size_t tier = 0;
      while (tier + 1 < spans.size() && peer / spans[tier].gpus != 0) ++tier;
      EXPECT_NEAR(spans[tier].route_latency_s,
                  routing.route(t.gpu(0), t.gpu(peer)).latency.as_seconds(), 1e-12)
          << "peer " << peer;
    }
  }
}

// When each of `senders` GPUs of the first leaf's has sent `bytes` to its peer on the other leaf
// at once, as messages or as one fluid transfer, on the analytical network; trunks are seen
// where paths are not hashed (hashed_paths off).
Time all_arrived(const Topology& t, bool trunks, bool fluid, int senders, Bytes bytes,
                 bool hashed_paths = false) {
  Simulator sim;
  Routing routing(t);
  auto net = make_network(NetworkMode::kAnalytical, sim, t, routing,
                          {.oversubscribed_trunks = trunks, .hashed_paths = hashed_paths});
  Time last;
  std::vector<FluidEdge> edges;
  for (int i = 0; i < senders; ++i)
    edges.push_back({t.gpu(i), t.gpu(4 + i), static_cast<double>(bytes)});
  if (fluid) {
    net->send_fluid(
        edges, 1, Time{}, [&] { last = sim.now(); }, nullptr);
  } else {
    for (const FluidEdge& e : edges)
      net->send(e.src, e.dst, bytes, [&] { last = std::max(last, sim.now()); });
  }
  sim.run();
  return last;
}

TEST(AnalyticalTrunks, TrafficAcrossAnOversubscribedTierDrainsAtItsTrunk) {
  const Topology t = two_leaves(4);
  constexpr Bytes kBytes = 100'000'000;
  const double nic_s = kBytes / kNicBytesPerS;  // one NIC's time for the message
  for (const bool fluid : {false, true}) {
    // Four senders share a trunk of one NIC's rate: four times one NIC's time, where without
    // trunks each drains at its own NIC's.
    EXPECT_NEAR(all_arrived(t, true, fluid, 4, kBytes).as_seconds(), 4 * nic_s, 0.01 * nic_s)
        << fluid;
    EXPECT_NEAR(all_arrived(t, false, fluid, 4, kBytes).as_seconds(), nic_s, 0.01 * nic_s) << fluid;
    // One sender alone fits the trunk.
    EXPECT_NEAR(all_arrived(t, true, fluid, 1, kBytes).as_seconds(), nic_s, 0.01 * nic_s) << fluid;
  }
}

// Hashed paths load the leaf's one uplink link by link, trunks or not: the same four times.
TEST(AnalyticalTrunks, HashedPathsSeeTheOversubscribedUplinksThemselves) {
  const Topology t = two_leaves(4);
  constexpr Bytes kBytes = 100'000'000;
  const double nic_s = kBytes / kNicBytesPerS;
  for (const bool fluid : {false, true})
    for (const bool trunks : {false, true})
      EXPECT_NEAR(all_arrived(t, trunks, fluid, 4, kBytes, true).as_seconds(), 4 * nic_s,
                  0.01 * nic_s)
          << fluid << trunks;
}

TEST(AnalyticalTrunks, AFullBisectionFabricIsUnchanged) {
  const Topology t = two_leaves(1);
  for (const bool fluid : {false, true})
    EXPECT_EQ(all_arrived(t, true, fluid, 4, 100'000'000),
              all_arrived(t, false, fluid, 4, 100'000'000));
}

}  // namespace
}  // namespace cs::net
