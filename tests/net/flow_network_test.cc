// Physics of the transfer models: lone-flow alpha-beta times, max-min sharing, oversubscription.
#include "sim/net/flow_network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sim/core/simulator.h"
#include "sim/net/analytical_network.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology.h"

namespace cs::net {
namespace {

constexpr LinkClass kNet = LinkClass::kNetwork;

// Completion times may differ from the closed form by rounding to whole picoseconds, once per
// rate change.
constexpr int64_t kSlackPs = 3;

VertexId add_gpu(Topology& t) {
  return t.add_vertex({VertexKind::kGpu, -1, 0, -1});
}
VertexId add_switch(Topology& t, int32_t tier = 0) {
  return t.add_vertex({VertexKind::kSwitch, tier, -1, -1});
}

// N GPUs duplex-linked to one switch.
struct Star {
  Topology topo;
  std::vector<VertexId> gpus;
  Star(int n, Bandwidth bw, Time latency) {
    const VertexId sw = add_switch(topo);
    for (int i = 0; i < n; ++i) {
      gpus.push_back(add_gpu(topo));
      topo.add_duplex_link(gpus.back(), sw, bw, latency, kNet);
    }
  }
};

// Two pods: `per_leaf` GPUs under each of two leaves, leaves joined through one spine. Each
// leaf's uplink carries `uplink` while its GPUs have `downlink` each.
struct TwoPods {
  Topology topo;
  std::vector<VertexId> pod[2];
  Time latency = Time::ns(500);
  TwoPods(int per_leaf, Bandwidth downlink, Bandwidth uplink) {
    const VertexId spine = add_switch(topo, 1);
    for (auto& gpus : pod) {
      const VertexId leaf = add_switch(topo, 0);
      topo.add_duplex_link(leaf, spine, uplink, latency, kNet);
      for (int i = 0; i < per_leaf; ++i) {
        gpus.push_back(add_gpu(topo));
        topo.add_duplex_link(gpus.back(), leaf, downlink, latency, kNet);
      }
    }
  }
};

// Runs a network and records when each message's callback fired.
struct Harness {
  Simulator sim;
  Routing routing;
  std::unique_ptr<Network> net;
  std::vector<Time> done_at;
  std::vector<int> order;
  Harness(const Topology& topo, NetworkMode mode = NetworkMode::kCongestionAware)
      : routing(topo), net(make_network(mode, sim, topo, routing)) {}

  // Sends at time `at` (scheduled, so the send happens inside the simulation); returns its index.
  int send_at(Time at, VertexId src, VertexId dst, Bytes bytes) {
    const int id = static_cast<int>(done_at.size());
    done_at.push_back(Time::max());
    sim.schedule_at(at, [this, id, src, dst, bytes] {
      net->send(src, dst, bytes, [this, id] {
        done_at[static_cast<std::size_t>(id)] = sim.now();
        order.push_back(id);
      });
    });
    return id;
  }
  Time t(int id) const { return done_at[static_cast<std::size_t>(id)]; }
};

#define EXPECT_NEAR_PS(actual, expected)                \
  EXPECT_NEAR(static_cast<double>((actual).count_ps()), \
              static_cast<double>((expected).count_ps()), kSlackPs)

const Bandwidth kBw = Bandwidth::gigabytes_per_s(50);
const Time kLat = Time::ns(700);

TEST(FlowNetwork, LoneFlowTakesLatencyPerHopPlusSizeOverBandwidth) {
  Star star(2, kBw, kLat);
  Harness h(star.topo);
  const Bytes size = 123'456'789;
  const int id = h.send_at(Time::us(3), star.gpus[0], star.gpus[1], size);
  h.sim.run();
  // Two hops (GPU->switch->GPU); exact, since the lone rate is the bottleneck itself.
  EXPECT_EQ(h.t(id), Time::us(3) + kLat * 2 + transfer_time(size, kBw));
}

TEST(FlowNetwork, LoneFlowBottleneckIsTheSlowestHop) {
  Topology topo;
  const VertexId a = add_gpu(topo), b = add_gpu(topo);
  const VertexId s1 = add_switch(topo), s2 = add_switch(topo);
  const Bandwidth slow = Bandwidth::gigabits_per_s(100);
  topo.add_duplex_link(a, s1, kBw, Time::ns(100), kNet);
  topo.add_duplex_link(s1, s2, slow, Time::ns(1000), kNet);
  topo.add_duplex_link(s2, b, kBw, Time::ns(300), kNet);
  Harness h(topo);
  const int id = h.send_at(Time(), a, b, 10 * kMiB);
  h.sim.run();
  EXPECT_EQ(h.t(id), Time::ns(1400) + transfer_time(10 * kMiB, slow));
}

TEST(FlowNetwork, ZeroBytesPayLatencyAndSelfMessagesAreImmediate) {
  Star star(2, kBw, kLat);
  Harness h(star.topo);
  const int zero = h.send_at(Time::us(1), star.gpus[0], star.gpus[1], 0);
  const int self = h.send_at(Time::us(1), star.gpus[0], star.gpus[0], kMiB);
  h.sim.run();
  EXPECT_EQ(h.t(zero), Time::us(1) + kLat * 2);
  EXPECT_EQ(h.t(self), Time::us(1));
}

TEST(FlowNetwork, TwoFlowsOnOneBottleneckEachTakeTwiceAsLong) {
  // Both flows leave GPU 0, so they share its uplink.
  Star star(3, kBw, kLat);
  Harness h(star.topo);
  const Bytes size = 64 * kMiB;
  const int a = h.send_at(Time(), star.gpus[0], star.gpus[1], size);
  const int b = h.send_at(Time(), star.gpus[0], star.gpus[2], size);
  h.sim.run();
  const Time expected = kLat * 2 + transfer_time(2 * size, kBw);
  EXPECT_NEAR_PS(h.t(a), expected);
  EXPECT_NEAR_PS(h.t(b), expected);
}

// A fluid transfer's plan slot: filled on the first send, it names the same plan on the next;
// a slot filled by another network (for other edges) is not trusted.
TEST(FlowNetwork, AFluidPlanSlotReusesOnlyItsOwnNetworksPlan) {
  Star star(3, kBw, kLat);
  const Bytes size = 64 * kMiB;
  const std::vector<FluidEdge> two{{star.gpus[0], star.gpus[1], static_cast<double>(size)},
                                   {star.gpus[0], star.gpus[2], static_cast<double>(size)}};
  const std::vector<FluidEdge> one{{star.gpus[1], star.gpus[2], static_cast<double>(size)}};
  auto time_of = [&](FlowNetwork& net, Simulator& sim, const std::vector<FluidEdge>& edges,
                     FluidPlanSlot* slot) {
    const Time start = sim.now();
    Time end = Time::max();
    net.send_fluid(
        edges, 1, Time{}, [&] { end = sim.now(); }, slot);
    sim.run();
    return end - start;
  };
  Simulator sim_a, sim_b;
  Routing routing_a(star.topo), routing_b(star.topo);
  FlowNetwork a(sim_a, star.topo, routing_a), b(sim_b, star.topo, routing_b);
  FluidPlanSlot slot;
  const Time first = time_of(a, sim_a, two, &slot);
  EXPECT_NE(slot.network, 0u);
  EXPECT_EQ(time_of(a, sim_a, two, &slot), first);
  EXPECT_EQ(first, transfer_time(2 * size, kBw));  // GPU 0's uplink carries both edges
  // Network b gets a's slot with other edges: it plans them itself and takes the slot over.
  const uint64_t filled_by_a = slot.network;
  EXPECT_EQ(time_of(b, sim_b, one, &slot), transfer_time(size, kBw));
  EXPECT_NE(slot.network, filled_by_a);
}

// Past their room, kept plans give way to new ones least recently sent first: a transfer sent
// again and again stays planned once, and a slot whose plan was given away is planned afresh.
TEST(FlowNetwork, KeptFluidPlansGiveWayLeastRecentlySentFirst) {
  Star star(4, kBw, kLat);
  const double size = 64.0 * kMiB;
  Simulator sim;
  Routing routing(star.topo);
  FlowNetwork net(sim, star.topo, routing);
  net.set_fluid_plan_room(6);  // two plans of one edge over two links
  auto send = [&](int from, FluidPlanSlot& slot) {
    const std::vector<FluidEdge> edge{{star.gpus[from], star.gpus[from + 1], size}};
    const Time start = sim.now();
    Time end = Time::max();
    net.send_fluid(
        edge, 1, Time{}, [&] { end = sim.now(); }, &slot);
    sim.run();
    return end - start;
  };
  FluidPlanSlot a, b, c;
  send(0, a);
  send(1, b);
  for (int i = 0; i < 3; ++i) send(2, c);  // takes a's room, then is sent as kept
  EXPECT_EQ(net.fluid_plans_built(), 3u);
  const uint32_t given_away = a.generation;
  EXPECT_EQ(send(0, a), transfer_time(static_cast<Bytes>(size), kBw));
  EXPECT_EQ(net.fluid_plans_built(), 4u);
  EXPECT_NE(a.generation, given_away);
  send(2, c);  // still kept: b made room for a
  EXPECT_EQ(net.fluid_plans_built(), 4u);
}

// Mirrors promise that every run is an image of run 0; when run 0 moves nothing of its own, all
// of an image's links (each touches a GPU here) are left out and the flow would cross no link:
// the transfer then ends after its waits instead of never.
TEST(FlowNetwork, AMirroredTransferThatKeepsNoLinkEndsAfterItsWaits) {
  Star star(3, kBw, kLat);
  const double size = 64.0 * kMiB;
  const std::vector<FluidEdge> edges{{star.gpus[0], star.gpus[0], size},
                                     {star.gpus[1], star.gpus[2], size}};
  for (const Time waits : {Time{}, Time::us(3)}) {
    Simulator sim;
    Routing routing(star.topo);
    FlowNetwork net(sim, star.topo, routing);
    Time end = Time::max();
    net.send_fluid(
        edges, 2, waits, [&] { end = sim.now(); }, nullptr);
    sim.run();
    EXPECT_EQ(end, waits);
    EXPECT_EQ(net.num_active_flows(), 0u);
  }
}

// The analytical network keeps a slot's time and traffic: a second send through the slot takes
// the same time and counts the same bytes again. Both edges leave GPU 0 through its one link,
// so the transfer takes their sum over it, not the larger edge alone.
TEST(AnalyticalNetwork, AFluidPlanSlotKeepsTheTimeAndTheTraffic) {
  Star star(3, kBw, kLat);
  const Bytes size = 64 * kMiB;
  const std::vector<FluidEdge> two{{star.gpus[0], star.gpus[1], static_cast<double>(size)},
                                   {star.gpus[0], star.gpus[2], static_cast<double>(2 * size)}};
  Simulator sim;
  Routing routing(star.topo);
  AnalyticalNetwork net(sim, routing);
  FluidPlanSlot slot;
  for (int send = 0; send < 2; ++send) {
    const Time start = sim.now();
    Time end = Time::max();
    net.send_fluid(
        two, 1, Time{}, [&] { end = sim.now(); }, &slot);
    sim.run();
    EXPECT_EQ(end - start, transfer_time(3 * size, kBw));  // GPU 0's link carries both
    EXPECT_EQ(net.stats().messages, 2u * (send + 1));
    EXPECT_EQ(net.stats().bytes_by_class[static_cast<int>(kNet)], 3 * size * (send + 1));
  }
  EXPECT_NE(slot.network, 0u);
}

// With room for one plan, a transfer sent at the same instant as a kept one does not take its
// room (the kept plan is read when the instant settles): it goes unkept, and takes the room at a
// later instant. Each times as alone, kept or not.
TEST(AnalyticalNetwork, APlanInUseAtThisInstantKeepsItsRoom) {
  Star star(4, kBw, kLat);
  const double size = 64.0 * kMiB;
  const std::vector<FluidEdge> first{{star.gpus[0], star.gpus[1], size}};
  const std::vector<FluidEdge> second{{star.gpus[2], star.gpus[3], size}};
  Simulator sim;
  Routing routing(star.topo);
  AnalyticalNetwork net(sim, routing);
  net.set_fluid_plan_room(2);  // the two ports of one edge
  FluidPlanSlot a, b;
  Time end_a = Time::max(), end_b = Time::max();
  net.send_fluid(
      first, 1, Time{}, [&] { end_a = sim.now(); }, &a);
  net.send_fluid(
      second, 1, Time{}, [&] { end_b = sim.now(); }, &b);
  sim.run();
  const Time alone = transfer_time(static_cast<Bytes>(size), kBw);
  EXPECT_EQ(end_a, alone);
  EXPECT_EQ(end_b, alone);
  EXPECT_NE(a.network, 0u);
  EXPECT_EQ(b.network, 0u);
  const Time start = sim.now();
  net.send_fluid(
      second, 1, Time{}, [&] { end_b = sim.now(); }, &b);
  sim.run();
  EXPECT_EQ(end_b - start, alone);
  EXPECT_NE(b.network, 0u);
}

// The lanes of one list sent at two sizes, each edge alike (the network plans such a list once,
// per byte, and scales it): each size takes what a fresh network gives it, over its hashed core
// link too, and its traffic counts its own bytes.
TEST(AnalyticalNetwork, OneListOfEqualLanesAtSeveralSizesTimesEachAsAlone) {
  TwoPods pods(4, kBw, kBw);
  const auto lanes = [&](Bytes size) {
    std::vector<FluidEdge> edges;
    for (int i = 0; i < 4; ++i)
      edges.push_back({pods.pod[0][i], pods.pod[1][i], static_cast<double>(size)});
    return edges;
  };
  const auto time = [&](AnalyticalNetwork& net, Simulator& sim, Bytes size) {
    const Time start = sim.now();
    Time end = Time::max();
    net.send_fluid(
        lanes(size), 1, Time{}, [&] { end = sim.now(); }, nullptr);
    sim.run();
    return end - start;
  };
  Simulator sim;
  Routing routing(pods.topo);
  AnalyticalNetwork net(sim, routing);
  for (const Bytes size : {64 * kMiB, 3 * kMiB, 64 * kMiB}) {
    Simulator fresh_sim;
    Routing fresh_routing(pods.topo);
    AnalyticalNetwork fresh(fresh_sim, fresh_routing);
    const uint64_t before = net.stats().bytes_by_class[static_cast<int>(kNet)];
    const Time took = time(net, sim, size);
    EXPECT_EQ(took, time(fresh, fresh_sim, size)) << size;
    EXPECT_EQ(took, transfer_time(4 * size, kBw)) << size;  // all four on the one core link
    EXPECT_EQ(net.stats().bytes_by_class[static_cast<int>(kNet)] - before, 4 * size);
  }
}

TEST(FlowNetwork, LateJoinerFollowsTheMaxMinTimeline) {
  // A alone for T/2 (half done), then A and B at B/2 each: A finishes T/2 later, at 3T/2, with
  // B half done; B alone again finishes at 2T.
  Star star(3, kBw, kLat);
  Harness h(star.topo);
  const Bytes size = 100'000'000;
  const Time lone = transfer_time(size, kBw);
  const Time half = Time::ps(lone.count_ps() / 2);
  const int a = h.send_at(Time(), star.gpus[0], star.gpus[1], size);
  const int b = h.send_at(half, star.gpus[0], star.gpus[2], size);
  h.sim.run();
  EXPECT_NEAR_PS(h.t(a), kLat * 2 + half + lone);
  EXPECT_NEAR_PS(h.t(b), kLat * 2 + half + lone + half);
}

TEST(FlowNetwork, DisjointPathsDoNotSlowEachOther) {
  Star star(4, kBw, kLat);
  Harness h(star.topo);
  const Bytes size = 32 * kMiB;
  const int a = h.send_at(Time(), star.gpus[0], star.gpus[1], size);
  const int b = h.send_at(Time(), star.gpus[2], star.gpus[3], size);
  const int c = h.send_at(Time(), star.gpus[1], star.gpus[0], size);  // opposite direction
  h.sim.run();
  const Time lone = kLat * 2 + transfer_time(size, kBw);
  EXPECT_EQ(h.t(a), lone);
  EXPECT_EQ(h.t(b), lone);
  EXPECT_EQ(h.t(c), lone);
}

// The textbook example: A crosses link 1, B links 1 and 2, C link 2, with c1 = 10 and c2 = 30
// GB/s. Water-filling: link 1 is the bottleneck at 5 each for A and B; C gets the rest of
// link 2, 30 - 5 = 25 (not the naive 15).
struct ThreeFlows {
  Topology topo;
  VertexId a_src, a_dst, b_src, b_dst, c_src, c_dst;
  const Bandwidth c1 = Bandwidth::gigabytes_per_s(10);
  const Bandwidth c2 = Bandwidth::gigabytes_per_s(30);
  const Bandwidth access = Bandwidth::gigabytes_per_s(1000);
  ThreeFlows() {
    const VertexId x = add_switch(topo), y = add_switch(topo), z = add_switch(topo);
    topo.add_duplex_link(x, y, c1, kLat, kNet);
    topo.add_duplex_link(y, z, c2, kLat, kNet);
    auto at = [&](VertexId sw) {
      const VertexId g = add_gpu(topo);
      topo.add_duplex_link(g, sw, access, Time(), kNet);
      return g;
    };
    a_src = at(x), a_dst = at(y);
    b_src = at(x), b_dst = at(z);
    c_src = at(y), c_dst = b_dst;
  }
};

TEST(FlowNetwork, WaterFillingGivesMaxMinRatesWithUnequalCapacities) {
  ThreeFlows t;
  Simulator sim;
  Routing routing(t.topo);
  FlowNetwork net(sim, t.topo, routing);
  net.send(t.a_src, t.a_dst, kGiB, nullptr);
  net.send(t.b_src, t.b_dst, kGiB, nullptr);
  net.send(t.c_src, t.c_dst, kGiB, nullptr);
  sim.run_until(Time());
  const auto flows = net.active_flows();
  ASSERT_EQ(flows.size(), 3u);
  EXPECT_DOUBLE_EQ(flows[0].rate_bytes_per_s, 5e9);
  EXPECT_DOUBLE_EQ(flows[1].rate_bytes_per_s, 5e9);
  EXPECT_DOUBLE_EQ(flows[2].rate_bytes_per_s, 25e9);
}

TEST(FlowNetwork, WaterFillingRatesShowInCompletionTimes) {
  ThreeFlows t;
  Harness h(t.topo);
  const Bytes size = 1'000'000'000;
  const int a = h.send_at(Time(), t.a_src, t.a_dst, size);
  const int b = h.send_at(Time(), t.b_src, t.b_dst, size);
  const int c = h.send_at(Time(), t.c_src, t.c_dst, size);
  h.sim.run();
  // C at 25 GB/s ends first; A and B stay pinned at 5 GB/s by link 1 throughout.
  EXPECT_NEAR_PS(h.t(c), kLat + transfer_time(size, Bandwidth::gigabytes_per_s(25)));
  EXPECT_NEAR_PS(h.t(a), kLat + transfer_time(size, Bandwidth::gigabytes_per_s(5)));
  EXPECT_NEAR_PS(h.t(b), kLat * 2 + transfer_time(size, Bandwidth::gigabytes_per_s(5)));
}

TEST(FlowNetwork, OversubscribedUplinkSplitsFairlyAmongCrossPodFlows) {
  // 8 GPUs at 100 GB/s behind a leaf whose uplink is 1/7 of their total: 800/7 GB/s.
  const double down = 100e9;
  const double up = 8 * down / 7;
  TwoPods pods(8, Bandwidth::bytes_per_s(down), Bandwidth::bytes_per_s(up));
  Harness h(pods.topo);
  const Bytes size = 256 * kMiB;
  std::vector<int> ids;
  for (int i = 0; i < 8; ++i)
    ids.push_back(h.send_at(Time(), pods.pod[0][i], pods.pod[1][i], size));
  h.sim.run();
  // Route: GPU->leaf->spine->leaf->GPU, four hops; each flow gets up/8 throughout.
  const Time expected = pods.latency * 4 + transfer_time(size, Bandwidth::bytes_per_s(up / 8));
  for (int id : ids) EXPECT_NEAR_PS(h.t(id), expected);
}

TEST(FlowNetwork, IntraPodFlowsKeepFullRateBesideCongestedUplink) {
  const double down = 100e9;
  TwoPods pods(8, Bandwidth::bytes_per_s(down), Bandwidth::bytes_per_s(8 * down / 7));
  Harness h(pods.topo);
  const Bytes size = 64 * kMiB;
  std::vector<int> cross;
  for (int i = 0; i < 4; ++i)
    cross.push_back(h.send_at(Time(), pods.pod[0][i], pods.pod[1][i], size));
  const int local = h.send_at(Time(), pods.pod[0][4], pods.pod[0][5], size);
  h.sim.run();
  EXPECT_EQ(h.t(local), pods.latency * 2 + transfer_time(size, Bandwidth::bytes_per_s(down)));
  // Four cross-pod flows want 400 GB/s but the uplink carries 800/7 (~114), so each gets a
  // quarter of it; the local flow never touches the uplink.
  const Time expected =
      pods.latency * 4 + transfer_time(size, Bandwidth::bytes_per_s(8 * down / 7 / 4));
  for (int id : cross) EXPECT_NEAR_PS(h.t(id), expected);
}

// Two messages out of one GPU queue at its port: the second leaves when the first has; a later
// one that finds the port drained takes its lone time again.
TEST(AnalyticalNetwork, MessagesThroughOnePortLeaveInTheOrderSent) {
  Star star(3, kBw, kLat);
  Harness h(star.topo, NetworkMode::kAnalytical);
  const Bytes size = 64 * kMiB;
  const Time transfer = transfer_time(size, kBw);
  const int a = h.send_at(Time(), star.gpus[0], star.gpus[1], size);
  const int b = h.send_at(Time(), star.gpus[0], star.gpus[2], size);
  const int later = h.send_at(Time::ms(10), star.gpus[0], star.gpus[1], size);
  h.sim.run();
  EXPECT_EQ(h.t(a), kLat * 2 + transfer);
  EXPECT_EQ(h.t(b), kLat * 2 + transfer * 2);
  EXPECT_EQ(h.t(later) - Time::ms(10), kLat * 2 + transfer);
  EXPECT_EQ(h.net->name(), "analytical");
}

// Each port drains on its own: three GPUs sending to both others end when the busiest port has
// passed two messages, not later, whatever the order of the sends.
TEST(AnalyticalNetwork, AnAllToAllEndsWhenItsBusiestPortHasPassedItsBytes) {
  Star star(3, kBw, kLat);
  Harness h(star.topo, NetworkMode::kAnalytical);
  const Bytes size = 64 * kMiB;
  for (int src = 0; src < 3; ++src)
    for (int dst : {(src + 1) % 3, (src + 2) % 3})
      h.send_at(Time(), star.gpus[src], star.gpus[dst], size);
  h.sim.run();
  const Time end = *std::max_element(h.done_at.begin(), h.done_at.end());
  EXPECT_EQ(end, kLat * 2 + transfer_time(size, kBw) * 2);
}

// A sprayed core is not seen: under adaptive routing, flows between different GPUs of two pods
// share an uplink of a GPU's bandwidth and still each take their lone time.
TEST(AnalyticalNetwork, IgnoresContentionInASprayedCore) {
  TwoPods pods(4, kBw, kBw);
  pods.topo.load_balancing.mode = LoadBalancingMode::kAdaptive;
  Harness h(pods.topo, NetworkMode::kAnalytical);
  const Bytes size = 64 * kMiB;
  std::vector<int> ids;
  for (int i = 0; i < 4; ++i)
    ids.push_back(h.send_at(Time(), pods.pod[0][i], pods.pod[1][i], size));
  h.sim.run();
  for (int id : ids) EXPECT_EQ(h.t(id), pods.latency * 4 + transfer_time(size, kBw));
}

// Where paths are hashed (static ECMP, the default), the same flows queue at the one uplink
// they are all hashed onto: equal messages sent together leave one after another, the last
// after four lone times.
TEST(AnalyticalNetwork, HashedFlowsShareTheLinkTheyAreHashedOnto) {
  TwoPods pods(4, kBw, kBw);
  Harness h(pods.topo, NetworkMode::kAnalytical);
  const Bytes size = 64 * kMiB;
  for (int i = 0; i < 4; ++i) h.send_at(Time(), pods.pod[0][i], pods.pod[1][i], size);
  h.sim.run();
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(h.t(i), pods.latency * 4 + transfer_time(size, kBw) * (i + 1)) << i;
}

// Fluid transfers sent at one instant share a hashed link as the congestion-aware model does, at
// one rate: the same four, sent as fluid transfers (the phases of four groups' collectives), all
// end after four lone times.
TEST(AnalyticalNetwork, FluidTransfersSentTogetherEndTogetherOnTheLinkTheyAreHashedOnto) {
  TwoPods pods(4, kBw, kBw);
  Simulator sim;
  Routing routing(pods.topo);
  AnalyticalNetwork net(sim, routing);
  const double size = 64.0 * kMiB;
  std::vector<Time> end(4, Time::max());
  sim.schedule_at(Time{}, [&] {
    for (int i = 0; i < 4; ++i) {
      const std::vector<FluidEdge> edges{{pods.pod[0][i], pods.pod[1][i], size}};
      net.send_fluid(
          edges, 1, Time{}, [&end, &sim, i] { end[i] = sim.now(); }, nullptr);
    }
  });
  sim.run();
  const Time lone = transfer_time(static_cast<Bytes>(size), kBw);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(end[i], end[0]) << i;
  EXPECT_NEAR(end[0].as_seconds(), 4 * lone.as_seconds(), 1e-11);
}

// A port shares its rate fairly with what is still queued there: a small message sent behind a
// large one passes its bytes at half the port's rate beside it, not after all of it, and the
// large one ends as alone (its ending is not revised).
TEST(AnalyticalNetwork, ASmallMessageIsNotHeldForALargeOnesWholeTransfer) {
  TwoPods pods(2, kBw, kBw);
  Harness h(pods.topo, NetworkMode::kAnalytical);
  const Bytes large = 256 * kMiB;
  const Bytes small = 1 * kMiB;
  const int a = h.send_at(Time(), pods.pod[0][0], pods.pod[1][0], large);
  const int b = h.send_at(Time::ms(1), pods.pod[0][1], pods.pod[1][1], small);
  h.sim.run();
  EXPECT_EQ(h.t(a), pods.latency * 4 + transfer_time(large, kBw));
  const Time b_took = h.t(b) - Time::ms(1) - pods.latency * 4;
  EXPECT_NEAR(b_took.as_seconds(), 2 * transfer_time(small, kBw).as_seconds(), 1e-9);
}

// The other way round: a message far larger than the 10,000 tiny ones queued before it waits for
// them all (its k-fold share of them, 10,000 times its own 2,000 s, would be past 2^63 ps).
TEST(AnalyticalNetwork, AHugeMessageBehindManyTinyOnesWaitsForThemAll) {
  Star star(2, kBw, kLat);
  Harness h(star.topo, NetworkMode::kAnalytical);
  const Bytes tiny = 1 * kMiB;
  for (int i = 0; i < 10'000; ++i) h.send_at(Time(), star.gpus[0], star.gpus[1], tiny);
  const Bytes huge = Bytes{100} << 40;
  const int last = h.send_at(Time(), star.gpus[0], star.gpus[1], huge);
  h.sim.run();
  EXPECT_EQ(h.t(last), kLat * 2 + transfer_time(tiny, kBw) * 10'000 + transfer_time(huge, kBw));
}

// One fluid transfer's edges share the links at their ends (an incast into GPU 2, or GPU 0
// sending to two), while edges with disjoint ends each take their lone time; transfers sent at
// other instants are not seen.
TEST(AnalyticalNetwork, AFluidTransfersEdgesShareTheirEndpointLinks) {
  Star star(4, kBw, kLat);
  Simulator sim;
  Routing routing(star.topo);
  AnalyticalNetwork net(sim, routing);
  const double size = 64.0 * kMiB;
  auto took = [&](const std::vector<FluidEdge>& edges) {
    const Time start = sim.now();
    Time end = Time::max();
    net.send_fluid(
        edges, 1, Time{}, [&] { end = sim.now(); }, nullptr);
    sim.run();
    return end - start;
  };
  const auto& g = star.gpus;
  const Time lone = transfer_time(static_cast<Bytes>(size), kBw);
  EXPECT_EQ(took({{g[0], g[1], size}, {g[2], g[3], size}}), lone);
  EXPECT_EQ(took({{g[0], g[2], size}, {g[1], g[2], size}, {g[3], g[2], size}}),
            transfer_time(static_cast<Bytes>(3 * size), kBw));
  EXPECT_EQ(took({{g[0], g[1], size}, {g[0], g[2], size}}),
            transfer_time(static_cast<Bytes>(2 * size), kBw));
}

// Fluid transfers sent at one instant (the lanes of one phase of a fluid collective, or one phase
// of many groups' collectives) share each port fairly, whatever order they were sent in: two of
// equal bytes through one port both end once it has passed both; one whose ports are its own
// keeps its lone time; a small one beside a large one ends at its fair share (twice its own time
// with two), the large one once the port has passed both. A transfer paced past that (its waits)
// keeps its pace, and a transfer sent a moment later sees none of them.
TEST(AnalyticalNetwork, FluidTransfersSentAtOneInstantShareTheirPortsFairly) {
  Star star(5, kBw, kLat);
  const auto& g = star.gpus;
  const double size = 64.0 * kMiB;
  const Time lone = transfer_time(static_cast<Bytes>(size), kBw);
  struct Send {
    std::vector<FluidEdge> edges;
    Time waits;
  };
  const std::vector<Send> sends{
      {{{g[0], g[1], size}}, Time{}},
      {{{g[0], g[2], size}}, Time{}},    // GPU 0's port again
      {{{g[3], g[4], size}}, Time{}},    // ports of its own
      {{{g[2], g[1], size}}, lone * 5},  // into GPU 1 beside the first, but paced slower
      {{{g[4], g[3], size / 4}}, Time{}},
      {{{g[4], g[0], size}}, Time{}},  // GPU 4's port beside the quarter-size one
  };
  const auto ends_sent_in = [&](const std::vector<int>& order) {
    Simulator sim;
    Routing routing(star.topo);
    AnalyticalNetwork net(sim, routing);
    std::vector<Time> end(sends.size(), Time::max());
    sim.schedule_at(Time::us(1), [&] {
      for (const int i : order)
        net.send_fluid(
            sends[i].edges, 1, sends[i].waits,
            [&end, &sim, i] { end[i] = sim.now() - Time::us(1); }, nullptr);
    });
    sim.run();
    // Sent a moment later, a transfer through GPU 0's port sees none of them.
    Time later = Time::max();
    const std::vector<FluidEdge> again{{g[0], g[1], size}};
    const Time start = sim.now();
    net.send_fluid(
        again, 1, Time{}, [&] { later = sim.now(); }, nullptr);
    sim.run();
    EXPECT_EQ(later - start, lone);
    return end;
  };
  const std::vector<Time> end = ends_sent_in({0, 1, 2, 3, 4, 5});
  const Time quarter = transfer_time(static_cast<Bytes>(size / 4), kBw);
  EXPECT_EQ(end[0], lone * 2);
  EXPECT_EQ(end[1], lone * 2);
  EXPECT_EQ(end[2], lone);
  EXPECT_EQ(end[3], lone * 6);
  EXPECT_EQ(end[4], quarter * 2);
  EXPECT_EQ(end[5], lone + quarter);
  EXPECT_EQ(ends_sent_in({5, 4, 3, 2, 1, 0}), end);
}

TEST(IdealNetwork, CommunicationIsFreeButCounted) {
  Star star(3, kBw, kLat);
  Harness h(star.topo, NetworkMode::kIdeal);
  const int a = h.send_at(Time::us(5), star.gpus[0], star.gpus[1], kGiB);
  const int b = h.send_at(Time::us(5), star.gpus[0], star.gpus[2], kGiB);
  h.sim.run();
  EXPECT_EQ(h.t(a), Time::us(5));
  EXPECT_EQ(h.t(b), Time::us(5));
  EXPECT_EQ(h.net->stats().bytes_by_class[static_cast<int>(kNet)], 2 * kGiB);
}

TEST(NetworkFactory, ParsesModeNames) {
  for (NetworkMode m :
       {NetworkMode::kCongestionAware, NetworkMode::kAnalytical, NetworkMode::kIdeal}) {
    EXPECT_EQ(parse_network_mode(to_string(m)), m);
  }
  EXPECT_THROW(parse_network_mode("fast"), std::invalid_argument);
  Star star(2, kBw, kLat);
  Harness h(star.topo);
  EXPECT_EQ(h.net->name(), "congestion_aware");
}

// Random pairs on a two-level tree with random sizes and start times; checks that every flow
// completes no sooner than it could alone and that the stats add up. Returns (time, id) in
// completion order.
std::vector<std::pair<Time, int>> run_random(int flows, uint64_t seed, bool incremental = true) {
  const double down = 50e9;
  TwoPods pods(32, Bandwidth::bytes_per_s(down), Bandwidth::bytes_per_s(32 * down / 7));
  std::vector<VertexId> gpus = pods.pod[0];
  gpus.insert(gpus.end(), pods.pod[1].begin(), pods.pod[1].end());
  Harness h(pods.topo);
  static_cast<FlowNetwork&>(*h.net).set_incremental(incremental);
  std::mt19937_64 rng(seed);
  std::vector<Time> lone_bound;
  Bytes routed_bytes = 0;
  for (int i = 0; i < flows; ++i) {
    const VertexId src = gpus[rng() % gpus.size()];
    const VertexId dst = gpus[rng() % gpus.size()];
    const Bytes size = static_cast<Bytes>(rng() % (4 * kMiB));
    const Time start = Time::ns(static_cast<int64_t>(rng() % 20'000'000));
    h.send_at(start, src, dst, size);
    if (src == dst) {
      lone_bound.push_back(start);
      continue;
    }
    routed_bytes += size;
    const Route& r = h.routing.route(src, dst);
    lone_bound.push_back(start + r.latency +
                         (size > 0 ? transfer_time(size, r.bottleneck) : Time()));
  }
  h.sim.run();
  EXPECT_EQ(h.order.size(), static_cast<std::size_t>(flows));
  std::vector<std::pair<Time, int>> seq;
  for (int id : h.order) {
    // Physics: no flow beats its lone time (up to a picosecond of rounding).
    EXPECT_GE(h.t(id) + Time::ps(1), lone_bound[static_cast<std::size_t>(id)]) << "flow " << id;
    seq.emplace_back(h.t(id), id);
  }
  const TrafficStats& stats = h.net->stats();
  EXPECT_EQ(stats.messages, static_cast<uint64_t>(flows));
  EXPECT_EQ(stats.bytes_by_class[static_cast<int>(kNet)], routed_bytes);
  EXPECT_EQ(static_cast<const FlowNetwork&>(*h.net).num_active_flows(), 0u);
  return seq;
}

TEST(FlowNetwork, TenThousandRandomFlowsAllCompleteAndAreCounted) {
  EXPECT_EQ(run_random(10'000, 1).size(), 10'000u);
}

TEST(FlowNetwork, IdenticalRunsGiveIdenticalCompletionSequences) {
  const auto first = run_random(2'000, 7);
  const auto second = run_random(2'000, 7);
  EXPECT_EQ(first, second);
}

// The incremental recompute solves only the flows a change can move; it must reach the same
// max-min rates as re-solving the whole component. The rates agree to floating rounding, not
// bit for bit (one subtracts fixed rates, the other fills in order), and a rate an ulp apart can
// round a finish time to the next picosecond: completion times may differ by a few picoseconds
// (4 at most here) in flows of milliseconds, never by more than a nanosecond.
TEST(FlowNetwork, IncrementalRecomputesMatchWholeComponentSolves) {
  for (uint64_t seed : {3, 11}) {
    const auto incremental = run_random(4'000, seed, true);
    const auto whole = run_random(4'000, seed, false);
    ASSERT_EQ(incremental.size(), whole.size());
    std::vector<Time> a(whole.size()), b(whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
      a[static_cast<std::size_t>(incremental[i].second)] = incremental[i].first;
      b[static_cast<std::size_t>(whole[i].second)] = whole[i].first;
    }
    int64_t worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      worst = std::max(worst, std::abs((a[i] - b[i]).count_ps()));
    EXPECT_LE(worst, 1000) << "seed " << seed;
  }
}

}  // namespace
}  // namespace cs::net
