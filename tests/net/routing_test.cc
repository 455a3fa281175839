// Tests of routing: tiered up/down routes are valid shortest paths that spread over the spine,
// generic BFS routes work on any graph, and routes are cached and deterministic.
#include "sim/net/routing.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <limits>
#include <random>
#include <set>
#include <string>

#include "sim/net/topology_builder.h"

namespace cs::net {
namespace {

// A small tiered description; `extra` is spliced into tiered { } (tiers, rail_optimized).
Topology build_small(int gpus_per_node, int nics_per_gpu, const std::string& extra,
                     int32_t num_gpus = 0) {
  const std::string text =
      "name: \"t\" gpu: \"h100\" tiered { node { gpus_per_node: " + std::to_string(gpus_per_node) +
      " nvlink_bandwidth_gbytes: 450 nvlink_latency_ns: 250 nics_per_gpu: " +
      std::to_string(nics_per_gpu) +
      " nic_bandwidth_gbits: 400 pcie_bandwidth_gbytes: 63 "
      "pcie_latency_ns: 300 } " +
      extra + " }";
  return build_topology(load_topology_text(text, "t.textproto"), num_gpus, "t.textproto");
}

struct Case {
  const char* label;
  int gpus_per_node;
  int nics_per_gpu;
  const char* tiers;
};

const Case kCases[] = {
    {"rail 2-tier", 4, 1,
     "rail_optimized: true tiers { group_size: 2 switches_per_group: 4 link_latency_ns: 100 } "
     "tiers { group_size: 3 switches_per_group: 3 link_latency_ns: 200 }"},
    {"tor 2-tier oversubscribed, 2 NICs per GPU", 2, 2,
     "tiers { group_size: 3 switches_per_group: 2 link_latency_ns: 100 oversubscription: 2 } "
     "tiers { group_size: 2 switches_per_group: 3 link_latency_ns: 200 }"},
    {"rail 3-tier", 2, 1,
     "rail_optimized: true tiers { group_size: 2 switches_per_group: 2 link_latency_ns: 100 } "
     "tiers { group_size: 2 switches_per_group: 2 link_latency_ns: 200 oversubscription: 3 } "
     "tiers { group_size: 3 switches_per_group: 4 link_latency_ns: 300 }"},
    {"tor 3-tier, partly filled", 4, 1,
     "tiers { group_size: 2 switches_per_group: 1 link_latency_ns: 100 } "
     "tiers { group_size: 3 switches_per_group: 2 link_latency_ns: 200 oversubscription: 7 } "
     "tiers { group_size: 2 switches_per_group: 2 link_latency_ns: 300 }"},
};

// Shortest hop count from src to dst where GPUs other than the endpoints do not relay.
int bfs_hops(const Topology& t, VertexId src, VertexId dst) {
  const Graph& g = t.graph();
  std::vector<int> dist(t.num_vertices(), -1);
  std::deque<VertexId> queue{src};
  dist[src] = 0;
  while (!queue.empty()) {
    const VertexId v = queue.front();
    queue.pop_front();
    if (v == dst) return dist[v];
    if (v != src && g[v].kind == VertexKind::kGpu) continue;
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
      const auto w = static_cast<VertexId>(boost::target(*e, g));
      if (dist[w] < 0) {
        dist[w] = dist[v] + 1;
        queue.push_back(w);
      }
    }
  }
  return -1;
}

// A route is a chain of existing links from src to dst that relays through no other GPU, and
// its latency, bottleneck and class summarize exactly those links.
void expect_valid(const Topology& t, const Route& r, VertexId src, VertexId dst) {
  ASSERT_FALSE(r.links.empty());
  VertexId at = src;
  Time latency;
  double bottleneck = std::numeric_limits<double>::infinity();
  LinkClass cls = LinkClass::kNvlink;
  for (std::size_t i = 0; i < r.links.size(); ++i) {
    const LinkId id = r.links[i];
    ASSERT_LT(id, t.num_links());
    ASSERT_EQ(t.link_source(id), at) << "hop " << i;
    at = t.link_target(id);
    if (i + 1 < r.links.size()) {
      ASSERT_NE(t.vertex(at).kind, VertexKind::kGpu) << "hop " << i;
    }
    latency += t.link(id).latency;
    bottleneck = std::min(bottleneck, t.link(id).bandwidth.in_bytes_per_s());
    cls = std::max(cls, t.link(id).link_class);
  }
  EXPECT_EQ(at, dst);
  EXPECT_EQ(r.latency, latency);
  EXPECT_DOUBLE_EQ(r.bottleneck.in_bytes_per_s(), bottleneck);
  EXPECT_EQ(r.link_class, cls);
}

TEST(TieredRouting, EveryRouteIsAValidShortestPath) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.label);
    const Topology t = build_small(c.gpus_per_node, c.nics_per_gpu, c.tiers);
    Routing routing(t);
    ASSERT_TRUE(routing.uses_tiered_routing());
    for (int32_t a = 0; a < static_cast<int32_t>(t.num_gpus()); ++a) {
      for (int32_t b = 0; b < static_cast<int32_t>(t.num_gpus()); ++b) {
        if (a == b) continue;
        const VertexId src = t.gpu(a), dst = t.gpu(b);
        const Route& r = routing.route(src, dst);
        expect_valid(t, r, src, dst);
        EXPECT_EQ(static_cast<int>(r.links.size()), bfs_hops(t, src, dst)) << a << "->" << b;
        if (t.vertex(src).node == t.vertex(dst).node) {
          EXPECT_EQ(r.link_class, LinkClass::kNvlink);
        } else {
          EXPECT_EQ(r.link_class, LinkClass::kNetwork);
        }
      }
    }
  }
}

TEST(TieredRouting, PartialClusterRoutesToo) {
  // 5 of 12 servers: the last leaf group and the last tier-1 group are partly filled.
  const Topology t = build_small(4, 1, kCases[3].tiers, 20);
  Routing routing(t);
  ASSERT_TRUE(routing.uses_tiered_routing());
  for (int32_t a = 0; a < static_cast<int32_t>(t.num_gpus()); ++a) {
    for (int32_t b = 0; b < static_cast<int32_t>(t.num_gpus()); ++b) {
      if (a == b) continue;
      const Route& r = routing.route(t.gpu(a), t.gpu(b));
      expect_valid(t, r, t.gpu(a), t.gpu(b));
      EXPECT_EQ(static_cast<int>(r.links.size()), bfs_hops(t, t.gpu(a), t.gpu(b)));
    }
  }
}

TEST(TieredRouting, EcmpSpreadsPairsOverEveryTopSwitch) {
  const Case& c = kCases[2];  // 3 tiers, 4 top switches
  const Topology t = build_small(c.gpus_per_node, c.nics_per_gpu, c.tiers);
  Routing routing(t);
  std::set<VertexId> top_used;
  std::set<VertexId> middle_used;
  std::size_t top_switches = 0;
  for (VertexId v = 0; v < t.num_vertices(); ++v) top_switches += t.vertex(v).tier == 2;
  for (int32_t a = 0; a < static_cast<int32_t>(t.num_gpus()); ++a) {
    for (int32_t b = 0; b < static_cast<int32_t>(t.num_gpus()); ++b) {
      if (a == b) continue;
      for (LinkId id : routing.route(t.gpu(a), t.gpu(b)).links) {
        const VertexId to = t.link_target(id);
        if (t.vertex(to).tier == 2) top_used.insert(to);
        if (t.vertex(to).tier == 1 && t.vertex(t.link_source(id)).tier == 0) {
          middle_used.insert(to);
        }
      }
    }
  }
  EXPECT_EQ(top_used.size(), top_switches);
  EXPECT_GT(middle_used.size(), 2u);
}

TEST(TieredRouting, CachedAndDeterministic) {
  const Topology t = build_small(4, 1, kCases[0].tiers);
  Routing first(t), second(t);
  const Route& r = first.route(t.gpu(0), t.gpu(21));
  EXPECT_EQ(first.cached_routes(), 1u);
  EXPECT_EQ(&first.route(t.gpu(0), t.gpu(21)), &r);
  EXPECT_EQ(first.cached_routes(), 1u);
  first.route(t.gpu(21), t.gpu(0));
  EXPECT_EQ(first.cached_routes(), 2u);
  for (int32_t b = 1; b < static_cast<int32_t>(t.num_gpus()); ++b) {
    EXPECT_EQ(first.route(t.gpu(0), t.gpu(b)).links, second.route(t.gpu(0), t.gpu(b)).links);
  }
  EXPECT_TRUE(first.route(t.gpu(3), t.gpu(3)).links.empty());
}

TEST(GenericRouting, ExplicitGraphsUseShortestPaths) {
  const std::string text = R"pb(
    name: "ring"
    gpu: "a100"
    explicit {
      vertices { name: "g0" kind: GPU }
      vertices { name: "g1" kind: GPU }
      vertices { name: "g2" kind: GPU }
      vertices { name: "sw" kind: SWITCH }
      links { from: "g0" to: "g1" bandwidth_gbytes: 300 latency_ns: 500 duplex: true }
      links { from: "g1" to: "g2" bandwidth_gbytes: 300 latency_ns: 500 duplex: true }
      links { from: "g0" to: "sw" bandwidth_gbytes: 25 latency_ns: 1000 duplex: true }
      links { from: "g2" to: "sw" bandwidth_gbytes: 25 latency_ns: 1000 duplex: true }
    }
  )pb";
  const Topology t = build_topology(load_topology_text(text, "r.textproto"), 0, "r.textproto");
  Routing routing(t);
  EXPECT_FALSE(routing.uses_tiered_routing());
  // g0 -> g2 may not relay through g1, so it goes over the switch.
  const Route& r = routing.route(t.gpu(0), t.gpu(2));
  expect_valid(t, r, t.gpu(0), t.gpu(2));
  EXPECT_EQ(r.links.size(), 2u);
  EXPECT_EQ(r.link_class, LinkClass::kNetwork);
  EXPECT_EQ(routing.route(t.gpu(0), t.gpu(1)).links.size(), 1u);
}

// Not a timed assertion: prints how long a Llama 3 sized build and 20,000 routes take.
TEST(TieredRouting, Llama3At16kScale) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const Topology t = build_topology(resolve_topology("llama3-24k"), 16384, "llama3-24k");
  const auto t1 = Clock::now();
  Routing routing(t);
  const auto t2 = Clock::now();
  ASSERT_TRUE(routing.uses_tiered_routing());
  std::mt19937 rng(42);
  std::uniform_int_distribution<int32_t> pick(0, 16383);
  std::size_t hops = 0;
  for (int i = 0; i < 20000; ++i)
    hops += routing.route(t.gpu(pick(rng)), t.gpu(pick(rng))).links.size();
  const auto t3 = Clock::now();
  const auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf(
      "llama3-24k @16384 GPUs: %zu vertices, %zu links; build %.1f ms, index %.1f ms, "
      "20000 routes %.1f ms (%zu cached, %.2f hops avg)\n",
      t.num_vertices(), t.num_links(), ms(t1 - t0), ms(t2 - t1), ms(t3 - t2),
      routing.cached_routes(), static_cast<double>(hops) / 20000);
  // Spot-check a few long routes against BFS.
  for (int i = 0; i < 5; ++i) {
    const VertexId a = t.gpu(pick(rng)), b = t.gpu(pick(rng));
    if (a == b) continue;
    const Route& r = routing.route(a, b);
    expect_valid(t, r, a, b);
    EXPECT_EQ(static_cast<int>(r.links.size()), bfs_hops(t, a, b));
  }
}

}  // namespace
}  // namespace cs::net
