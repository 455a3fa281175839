// Degraded links: found by name, by a seeded fraction or by a GPU's NICs; they slow what crosses.
#include "sim/net/link_degradation.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "sim/coll/algorithms.h"
#include "sim/coll/runner.h"
#include "sim/net/analytical_network.h"
#include "sim/net/flow_network.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"

namespace cs::net {
namespace {

// Two servers of the Llama 3 cluster: 16 GPUs, their NICs, and the switches above.
Topology two_servers() {
  return build_topology(resolve_topology("llama3-24k"), 16, "test");
}

// n GPUs, each on its own duplex network link to one switch.
Topology star(int n, Bandwidth bw, Time latency) {
  Topology t;
  const VertexId sw = t.add_vertex(VertexInfo{VertexKind::kSwitch, 0, -1, 0});
  for (int i = 0; i < n; ++i)
    t.add_duplex_link(t.add_vertex(VertexInfo{VertexKind::kGpu, -1, i, i}), sw, bw, latency,
                      LinkClass::kNetwork);
  return t;
}

std::string error_of(const Topology& t, const std::string& name) {
  try {
    links_named(t, name);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::size_t network_links(const Topology& t) {
  std::size_t n = 0;
  for (LinkId l = 0; l < t.num_links(); ++l) n += t.link(l).link_class == LinkClass::kNetwork;
  return n;
}

TEST(LinksNamed, FindsBothDirectionsBetweenTwoVertices) {
  const Topology t = two_servers();
  const auto links = links_named(t, "gpu3-nic3");
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(vertex_name(t, t.link_source(links[0])), "gpu3");
  EXPECT_EQ(vertex_name(t, t.link_target(links[0])), "nic3");
  EXPECT_EQ(vertex_name(t, t.link_source(links[1])), "nic3");
  EXPECT_EQ(links_named(t, "nic3-gpu3"), links);
  EXPECT_EQ(links_named(t, "gpu0-nvswitch0").size(), 2u);
}

TEST(LinksNamed, RefusesNamesThatMatchNoLinkSayingWhy) {
  const Topology t = two_servers();
  EXPECT_NE(error_of(t, "gpu3").find("not of the form A-B"), std::string::npos);
  EXPECT_NE(error_of(t, "gpu0-gpu1-gpu2").find("not of the form A-B"), std::string::npos);
  EXPECT_NE(error_of(t, "gpu3-nic4").find("no link joins gpu3 and nic4"), std::string::npos);
  EXPECT_NE(error_of(t, "gpu99-nic3").find("there is no gpu99"), std::string::npos);
  EXPECT_NE(error_of(t, "router1-nic3").find("names no vertex"), std::string::npos);
  EXPECT_NE(error_of(t, "gpux-nic3").find("not gpu followed by an index"), std::string::npos);
}

TEST(RandomCables, DegradesExactlyTheFractionBySeed) {
  const Topology t = two_servers();
  const std::size_t all = network_links(t);  // every cable is duplex: two links
  EXPECT_TRUE(random_cables(t, 0, 1).empty());
  EXPECT_EQ(random_cables(t, 1, 1).size(), all);
  const auto quarter = random_cables(t, 0.25, 1);
  EXPECT_EQ(quarter.size(), 2 * static_cast<std::size_t>(std::llround(0.25 * (all / 2))));
  EXPECT_EQ(random_cables(t, 0.25, 1), quarter);
  EXPECT_NE(random_cables(t, 0.25, 2), quarter);
  const auto half = random_cables(t, 0.5, 1);
  const std::set<LinkId> more(half.begin(), half.end());
  for (const LinkId l : quarter) EXPECT_TRUE(more.count(l)) << "a larger share keeps the smaller";
}

TEST(NicLinks, AreTheGpusNicToSwitchLinksBothWays) {
  const Topology t = two_servers();
  const auto links = nic_links(t, 9);
  ASSERT_FALSE(links.empty());
  EXPECT_EQ(links.size() % 2, 0u);
  for (const LinkId l : links) {
    EXPECT_EQ(t.link(l).link_class, LinkClass::kNetwork);
    const std::string a = vertex_name(t, t.link_source(l)), b = vertex_name(t, t.link_target(l));
    EXPECT_TRUE(a == "nic9" || b == "nic9") << a << "-" << b;
  }
  EXPECT_THROW(nic_links(t, 16), std::invalid_argument);
}

TEST(DegradedLink, HalvingOneLinkDoublesAMessagesTransferTime) {
  const Bandwidth bw = Bandwidth::gigabytes_per_s(50);
  const Bytes size = Bytes{1} << 30;
  auto time_send = [&](double factor) {
    Topology t = star(2, bw, Time::us(1));
    for (const LinkId l : links_named(t, "gpu1-switch0")) t.scale_link_bandwidth(l, factor);
    Simulator sim;
    Routing routing(t);
    AnalyticalNetwork net(sim, routing);
    net.send(t.gpu(0), t.gpu(1), size, [] {});
    sim.run();
    return sim.now() - net.path_latency(t.gpu(0), t.gpu(1));
  };
  const double transfer = static_cast<double>(size) / bw.in_bytes_per_s();
  EXPECT_NEAR(time_send(1).as_seconds(), transfer, 1e-9);
  EXPECT_NEAR(time_send(0.5).as_seconds(), 2 * transfer, 1e-9);
}

TEST(DegradedLink, SlowsARingAllReduceCrossingItByItsFactor) {
  // A ring moves at the pace of its slowest link: one GPU's uplink at half speed halves the
  // bandwidth term 2 (n - 1) / n S / B of every rank.
  const int n = 4;
  const Bandwidth bw = Bandwidth::gigabytes_per_s(100);
  const Bytes size = Bytes{1} << 30;
  auto ring_time = [&](double factor) {
    Topology t = star(n, bw, Time::us(1));
    for (const LinkId l : links_named(t, "gpu2-switch0")) t.scale_link_bandwidth(l, factor);
    Simulator sim;
    Routing routing(t);
    FlowNetwork net(sim, t, routing);
    coll::ScheduleKey key{coll::Op::kAllReduce, coll::Algorithm::kRing, n};
    key.window = 1;  // one message per connection at a time: no sharing between steps
    const auto schedule = coll::build_schedule(key);
    std::vector<VertexId> gpus;
    for (int i = 0; i < n; ++i) gpus.push_back(t.gpu(i));
    std::optional<coll::RunStats> run;
    coll::run_collective(sim, net, *schedule, gpus, size,
                         [&](const coll::RunStats& s) { run = s; });
    sim.run();
    return (run->end - run->start).as_seconds();
  };
  const double latency = 2.0 * (n - 1) * 2e-6;  // 2(n-1) steps of two 1 us hops
  const double bw_term = 2.0 * (n - 1) / n * static_cast<double>(size) / bw.in_bytes_per_s();
  EXPECT_NEAR(ring_time(1), latency + bw_term, 0.01 * bw_term);
  EXPECT_NEAR(ring_time(0.5), latency + 2 * bw_term, 0.01 * bw_term);
}

}  // namespace
}  // namespace cs::net
