// Load balancing over equal-cost paths: a static ECMP hash collision halves a flow's rate;
// multi-flow ECMP and adaptive routing restore it, in the congestion-aware and the analytical
// network alike; every mode is deterministic.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/simulator.h"
#include "sim/net/analytical_network.h"
#include "sim/net/flow_network.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"

namespace cs::net {
namespace {

// One GPU per server, two servers per leaf, four leaves under two spines: each leaf has one
// NIC's worth of uplink to each spine (full bisection), so two flows leaving a leaf fit only if
// they take different spines.
constexpr const char* kTwoSpines = R"pb(
  name: "two-spines"
  gpu: "h100"
  tiered {
    node {
      gpus_per_node: 1
      nics_per_gpu: 1
      nic_bandwidth_gbits: 400
      pcie_bandwidth_gbytes: 63
      pcie_latency_ns: 300
    }
    tiers { name: "leaf" group_size: 2 switches_per_group: 1 link_latency_ns: 100 }
    tiers { name: "spine" group_size: 4 switches_per_group: 2 link_latency_ns: 200 }
  }
)pb";

constexpr Bytes kSize = 256 * kMiB;

Topology build_with(clustersim::LoadBalancing::Mode mode, int32_t flows = 0) {
  clustersim::Topology desc = load_topology_text(kTwoSpines, "two-spines.textproto");
  clustersim::LoadBalancing lb;
  lb.set_mode(mode);
  lb.set_flows_per_message(flows);
  override_load_balancing(desc, lb, "run.textproto");
  return build_topology(desc, 0, "two-spines.textproto");
}

// The first spine a static route from `src` to `dst` climbs to.
VertexId spine_of(const Topology& t, Routing& routing, int32_t src, int32_t dst) {
  return t.link_target(routing.route(t.gpu(src), t.gpu(dst)).links[2]);
}

// Two flows out of leaf 0 (GPUs 0 and 1) to two other leaves whose static routes share a spine.
std::pair<int32_t, int32_t> colliding_destinations() {
  const Topology t = build_with(clustersim::LoadBalancing::STATIC_ECMP);
  Routing routing(t);
  for (int32_t a = 2; a < 8; ++a) {
    for (int32_t b = 2; b < 8; ++b) {
      if (a / 2 != b / 2 && spine_of(t, routing, 0, a) == spine_of(t, routing, 1, b)) {
        return {a, b};
      }
    }
  }
  ADD_FAILURE() << "no static ECMP collision among these pairs";
  return {2, 4};
}

// Completion times of the two flows 0 -> a and 1 -> b, sent together.
std::vector<Time> run_pair(const Topology& t, std::pair<int32_t, int32_t> dst) {
  Simulator sim;
  Routing routing(t);
  FlowNetwork net(sim, t, routing);
  std::vector<Time> done(2, Time::max());
  net.send(t.gpu(0), t.gpu(dst.first), kSize, [&] { done[0] = sim.now(); });
  net.send(t.gpu(1), t.gpu(dst.second), kSize, [&] { done[1] = sim.now(); });
  sim.run();
  return done;
}

double seconds_alone(const Topology& t, std::pair<int32_t, int32_t> dst) {
  Routing routing(t);
  const Route& r = routing.route(t.gpu(0), t.gpu(dst.first));
  return (r.latency + transfer_time(kSize, r.bottleneck)).as_seconds();
}

TEST(LoadBalancing, StaticEcmpCollisionHalvesTheRate) {
  const auto dst = colliding_destinations();
  const Topology t = build_with(clustersim::LoadBalancing::STATIC_ECMP);
  const double alone = seconds_alone(t, dst);
  for (Time done : run_pair(t, dst)) EXPECT_NEAR(done.as_seconds(), 2 * alone, 0.01 * alone);
}

TEST(LoadBalancing, AdaptiveRoutingTakesTheFreeSpine) {
  const auto dst = colliding_destinations();
  const Topology t = build_with(clustersim::LoadBalancing::ADAPTIVE);
  const double alone = seconds_alone(t, dst);
  for (Time done : run_pair(t, dst)) EXPECT_NEAR(done.as_seconds(), alone, 1e-6 * alone);
}

// Two flows from two leaves into one leaf whose hashed routes come down through the same spine:
// each source leaf's uplinks are idle, so a choice that looks only at the next hop keeps the
// collision on that spine's one link down to the destination leaf.
std::pair<int32_t, int32_t> colliding_sources() {
  const Topology t = build_with(clustersim::LoadBalancing::STATIC_ECMP);
  Routing routing(t);
  for (int32_t a = 2; a < 8; ++a) {
    for (int32_t b = 2; b < 8; ++b) {
      if (a / 2 != b / 2 && spine_of(t, routing, a, 0) == spine_of(t, routing, b, 1)) {
        return {a, b};
      }
    }
  }
  ADD_FAILURE() << "no static ECMP collision into leaf 0 among these pairs";
  return {2, 4};
}

TEST(LoadBalancing, AdaptiveRoutingLooksDownToTheDestinationLeaf) {
  const auto [a, b] = colliding_sources();
  for (const auto mode :
       {clustersim::LoadBalancing::STATIC_ECMP, clustersim::LoadBalancing::ADAPTIVE}) {
    const Topology t = build_with(mode);
    Simulator sim;
    Routing routing(t);
    FlowNetwork net(sim, t, routing);
    std::vector<Time> done(2, Time::max());
    net.send(t.gpu(a), t.gpu(0), kSize, [&] { done[0] = sim.now(); });
    net.send(t.gpu(b), t.gpu(1), kSize, [&] { done[1] = sim.now(); });
    sim.run();
    const Route& r = routing.route(t.gpu(a), t.gpu(0));
    const double alone = (r.latency + transfer_time(kSize, r.bottleneck)).as_seconds();
    const double factor = mode == clustersim::LoadBalancing::ADAPTIVE ? 1 : 2;
    for (Time d : done) EXPECT_NEAR(d.as_seconds(), factor * alone, 0.01 * alone) << mode;
  }
}

// A fluid transfer's own connections avoid each other too: the two colliding flows of leaf 0 as
// the coupled edges of one fluid transfer move at the NIC's rate under adaptive routing.
TEST(LoadBalancing, AdaptiveFluidEdgesAvoidEachOther) {
  const auto [a, b] = colliding_destinations();
  const Topology t = build_with(clustersim::LoadBalancing::ADAPTIVE);
  Simulator sim;
  Routing routing(t);
  FlowNetwork net(sim, t, routing);
  const std::vector<FluidEdge> edges{{t.gpu(0), t.gpu(a), static_cast<double>(kSize)},
                                     {t.gpu(1), t.gpu(b), static_cast<double>(kSize)}};
  Time done = Time::max();
  net.send_fluid(
      edges, 1, Time{}, [&] { done = sim.now(); }, nullptr);
  sim.run();
  const double alone =
      transfer_time(kSize, routing.route(t.gpu(0), t.gpu(a)).bottleneck).as_seconds();
  EXPECT_NEAR(done.as_seconds(), alone, 1e-6 * alone);
}

TEST(LoadBalancing, SixteenFlowsSpreadTheCollisionOverBothSpines) {
  const auto dst = colliding_destinations();
  const Topology t = build_with(clustersim::LoadBalancing::MULTI_FLOW_ECMP, 16);
  const double alone = seconds_alone(t, dst);
  // 32 flows hashed over two spines: the busier spine carries k of them, so the last byte
  // arrives after about max(k, 32 - k) / 16 lone times, far below the static collision's 2.
  const std::vector<Time> done = run_pair(t, dst);
  for (Time d : done) {
    EXPECT_GE(d.as_seconds(), alone * (1 - 1e-6));
    EXPECT_LT(d.as_seconds(), 1.5 * alone);
  }
  // A single 16-flow message alone still takes the lone time: splitting costs nothing.
  Simulator sim;
  Routing routing(t);
  FlowNetwork net(sim, t, routing);
  Time lone = Time::max();
  net.send(t.gpu(0), t.gpu(dst.first), kSize, [&] { lone = sim.now(); });
  sim.run();
  EXPECT_NEAR(lone.as_seconds(), alone, 1e-6 * alone);
  EXPECT_EQ(net.stats().messages, 1u);
}

// The analytical network loads the same hashed paths: the static collision's two equal messages
// leave the shared link one after the other (the second after two lone times), 16 flows a
// message spread it (under 1.5), a lone message takes its lone time, and adaptive routing's
// spraying leaves each its lone time.
TEST(LoadBalancing, TheAnalyticalNetworkSeesTheSameCollisions) {
  const auto dst = colliding_destinations();
  const auto arrivals = [&](const Topology& t) {
    Simulator sim;
    Routing routing(t);
    AnalyticalNetwork net(sim, routing);
    std::vector<Time> done(2, Time::max());
    net.send(t.gpu(0), t.gpu(dst.first), kSize, [&] { done[0] = sim.now(); });
    net.send(t.gpu(1), t.gpu(dst.second), kSize, [&] { done[1] = sim.now(); });
    sim.run();
    return std::max(done[0], done[1]).as_seconds();
  };
  const Topology statically = build_with(clustersim::LoadBalancing::STATIC_ECMP);
  const double alone = seconds_alone(statically, dst);
  EXPECT_NEAR(arrivals(statically), 2 * alone, 0.01 * alone);
  const Topology sixteen = build_with(clustersim::LoadBalancing::MULTI_FLOW_ECMP, 16);
  EXPECT_GE(arrivals(sixteen), alone * (1 - 1e-6));
  EXPECT_LT(arrivals(sixteen), 1.5 * alone);
  EXPECT_NEAR(arrivals(build_with(clustersim::LoadBalancing::ADAPTIVE)), alone, 1e-6 * alone);
  Simulator sim;
  Routing routing(sixteen);
  AnalyticalNetwork net(sim, routing);
  Time lone = Time::max();
  net.send(sixteen.gpu(0), sixteen.gpu(dst.first), kSize, [&] { lone = sim.now(); });
  sim.run();
  EXPECT_NEAR(lone.as_seconds(), alone, 1e-6 * alone);
}

TEST(LoadBalancing, EveryModeIsDeterministic) {
  const auto dst = colliding_destinations();
  for (const auto mode :
       {clustersim::LoadBalancing::STATIC_ECMP, clustersim::LoadBalancing::MULTI_FLOW_ECMP,
        clustersim::LoadBalancing::ADAPTIVE}) {
    const int32_t flows = mode == clustersim::LoadBalancing::MULTI_FLOW_ECMP ? 16 : 0;
    const Topology t = build_with(mode, flows);
    EXPECT_EQ(run_pair(t, dst), run_pair(build_with(mode, flows), dst)) << mode;
  }
}

TEST(LoadBalancing, PresetsDefaultToTheirRealFabricsAndRunConfigsOverride) {
  EXPECT_EQ(build_topology(resolve_topology("llama3-24k"), 8, "l").load_balancing.mode,
            LoadBalancingMode::kMultiFlowEcmp);
  EXPECT_EQ(build_topology(resolve_topology("llama3-24k"), 8, "l").load_balancing.flows_per_message,
            16);
  EXPECT_EQ(build_topology(resolve_topology("dgx-h100"), 8, "h").load_balancing.mode,
            LoadBalancingMode::kAdaptive);
  EXPECT_EQ(build_topology(resolve_topology("dgx-a100"), 8, "a").load_balancing.mode,
            LoadBalancingMode::kAdaptive);
  EXPECT_EQ(build_with(clustersim::LoadBalancing::STATIC_ECMP).load_balancing.mode,
            LoadBalancingMode::kStaticEcmp);

  clustersim::Topology desc = resolve_topology("llama3-24k");
  clustersim::LoadBalancing bad;
  bad.set_mode(clustersim::LoadBalancing::MULTI_FLOW_ECMP);
  try {
    override_load_balancing(desc, bad, "run.textproto");
    ADD_FAILURE() << "flows_per_message 0 accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "run.textproto: cluster.load_balancing.flows_per_message must be in [1, 256] for "
              "MULTI_FLOW_ECMP (is 0)");
  }
  // MODE_UNSET keeps the topology's own.
  override_load_balancing(desc, clustersim::LoadBalancing(), "run.textproto");
  EXPECT_EQ(desc.load_balancing().flows_per_message(), 16);
}

}  // namespace
}  // namespace cs::net
