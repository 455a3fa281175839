// Tests of tiered fabrics that grow past their described tiers: switch counts per tier against
// the DGX SuperPOD reference architecture's component tables, full bisection of the grown tiers,
// clusters bigger than the job, and clear errors for sizes that cannot be built.
#include "sim/net/topology_growth.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"
#include "tests/support/test_helpers.h"
#include "tests/support/topology_counts.h"

namespace cs::net {
namespace {

using testing_support::error_of;
using testing_support::uplink_bytes_per_s;

std::size_t switches_in_tier(const Topology& t, int32_t tier) {
  return testing_support::count_vertices(t, VertexKind::kSwitch, tier);
}

struct RaRow {
  int scalable_units;
  std::size_t leaf, spine, core;
};

// DGX SuperPOD (DGX H100, 32 nodes per SU, 64-port NDR switches): the RA's component tables,
// as cited in topologies/dgx-h100.textproto. 0 cores: two tiers.
TEST(TopologyGrowth, DgxH100MatchesTheReferenceArchitectureTables) {
  const clustersim::Topology desc = resolve_topology("dgx-h100");
  for (const RaRow& row : {RaRow{8, 64, 32, 0}, RaRow{16, 128, 128, 64}, RaRow{32, 256, 256, 128},
                           RaRow{64, 512, 512, 256}}) {
    SCOPED_TRACE(row.scalable_units);
    const int32_t gpus = row.scalable_units * 32 * 8;
    const Topology t = build_topology(desc, gpus, "dgx-h100");
    EXPECT_EQ(t.num_gpus(), static_cast<std::size_t>(gpus));
    EXPECT_EQ(switches_in_tier(t, 0), row.leaf);
    EXPECT_EQ(switches_in_tier(t, 1), row.spine);
    EXPECT_EQ(switches_in_tier(t, 2), row.core);
    EXPECT_EQ(switches_in_tier(t, 3), 0u);
    // Full bisection: every tier of cables carries what the GPUs inject (one cable per GPU in
    // the RA's cable counts).
    const double inject = gpus * 400e9 / 8;
    EXPECT_NEAR(uplink_bytes_per_s(t, -1), inject, inject * 1e-9);
    EXPECT_NEAR(uplink_bytes_per_s(t, 0), inject, inject * 1e-9);
    if (row.core > 0) {
      EXPECT_NEAR(uplink_bytes_per_s(t, 1), inject, inject * 1e-9);
    }
  }
}

TEST(TopologyGrowth, GrownFabricsRouteUpAndDownThroughTheCore) {
  const Topology t = build_topology(resolve_topology("dgx-h100"), 10752, "dgx-h100");
  EXPECT_EQ(t.num_gpus(), 10752u);
  EXPECT_EQ(switches_in_tier(t, 0), 42u * 8);   // 1,344 servers = 42 SUs
  EXPECT_EQ(switches_in_tier(t, 1), 11u * 32);  // spine groups of 4 SUs
  EXPECT_GE(switches_in_tier(t, 2), 11u * 32 * 32 / 64);
  Routing routing(t);
  ASSERT_TRUE(routing.uses_tiered_routing());
  // Same rail, other spine group: GPU, NIC, leaf, spine, core, spine, leaf, NIC, GPU.
  const Route& far = routing.route(t.gpu(0), t.gpu(10752 - 8));
  EXPECT_EQ(far.links.size(), 8u);
  EXPECT_EQ(t.vertex(t.link_target(far.links[3])).tier, 2);
  // Same spine group: no core.
  EXPECT_EQ(routing.route(t.gpu(0), t.gpu(8 * 32 * 3)).links.size(), 6u);
}

// A cable carries one NDR port: past 8 SUs each spine's 32 uplinks go to 32 core switches at
// 50 GB/s each, not a sliver of 1,600 GB/s to each of 64-256 core switches, which capped one flow
// through the core at 25 GB/s (16 SUs) or 6.25 GB/s (64 SUs).
TEST(TopologyGrowth, GrownCoreIsCabledInWholePorts) {
  for (const int32_t gpus : {4096, 16384}) {
    SCOPED_TRACE(gpus);
    const Topology t = build_topology(resolve_topology("dgx-h100"), gpus, "dgx-h100");
    for (LinkId id = 0; id < t.num_links(); ++id) {
      if (t.link(id).link_class != LinkClass::kNetwork) continue;
      EXPECT_GE(t.link(id).bandwidth.in_bytes_per_s(), 400e9 / 8 * (1 - 1e-12)) << id;
    }
    Routing routing(t);
    ASSERT_TRUE(routing.uses_tiered_routing());
    // Same rail, farthest server: up through a core and down again, at the NIC's bandwidth.
    const Route& far = routing.route(t.gpu(0), t.gpu(gpus - 8));
    EXPECT_EQ(far.links.size(), 8u);
    EXPECT_NEAR(far.bottleneck.in_bytes_per_s(), 400e9 / 8, 1);
  }
}

TEST(TopologyGrowth, DgxA100GrowsTo3072GpusWithFullBisection) {
  const Topology t = build_topology(resolve_topology("dgx-a100"), 3072, "dgx-a100");
  EXPECT_EQ(t.num_gpus(), 3072u);
  EXPECT_EQ(switches_in_tier(t, 0), 20u * 8);  // 384 servers in 20-server SUs
  // 40-port spines with 20 ports down reach 2 SUs (16 leaves) per spine group of 20.
  EXPECT_EQ(switches_in_tier(t, 1), 10u * 20);
  EXPECT_EQ(switches_in_tier(t, 2), 10u * 20 * 20 / 40);
  // Cabled for 20 full SUs: 400 servers' worth of bandwidth in every tier.
  const double cabled = 400 * 8 * 200e9 / 8;
  EXPECT_NEAR(uplink_bytes_per_s(t, 0), cabled, cabled * 1e-9);
  EXPECT_NEAR(uplink_bytes_per_s(t, 1), cabled, cabled * 1e-9);
}

// Meta's design extrapolated: more 3,072-GPU pods under the aggregation switches.
TEST(TopologyGrowth, Llama3ClusterAddsPodsUnderTheAggregationTier) {
  const clustersim::Topology desc = resolve_topology("llama3-24k");
  const Topology t = build_topology(desc, 98304, "llama3-24k");
  EXPECT_EQ(t.num_gpus(), 98304u);
  EXPECT_EQ(switches_in_tier(t, 0), 98304u / 16);
  EXPECT_EQ(switches_in_tier(t, 1), 32u * 16);
  EXPECT_EQ(switches_in_tier(t, 2), 16u);
  // Pods keep their 1:7 uplinks: what leaves the pods is 1/7 of what the GPUs inject.
  const double inject = 98304 * 400e9 / 8;
  EXPECT_NEAR(uplink_bytes_per_s(t, 1) * 7, inject, inject * 1e-9);
  // Memory grows with links, not GPU pairs: links per GPU stay put from 24K to 98K GPUs.
  const Topology small = build_topology(desc, 24576, "llama3-24k");
  const double per_gpu_small = static_cast<double>(small.num_links()) / 24576;
  const double per_gpu_big = static_cast<double>(t.num_links()) / 98304;
  EXPECT_NEAR(per_gpu_big, per_gpu_small, 0.01 * per_gpu_small);
}

TEST(TopologyGrowth, ClusterBiggerThanTheJob) {
  EXPECT_EQ(cluster_build_gpus(3072, 0, "run.textproto"), 3072);
  EXPECT_EQ(cluster_build_gpus(3072, 4096, "run.textproto"), 4096);
  EXPECT_EQ(error_of([] { cluster_build_gpus(3072, 2048, "run.textproto"); }),
            "run.textproto: cluster.num_gpus (2048) is smaller than the layout's 3072 GPUs");
  EXPECT_NE(error_of([] {
              cluster_build_gpus(8, -1, "run.textproto");
            }).find("cluster.num_gpus must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              cluster_build_gpus(8, kMaxBuildGpus + 1, "run.textproto");
            }).find("exceeds the"),
            std::string::npos);
  const Topology t =
      build_topology(resolve_topology("dgx-h100"), cluster_build_gpus(3072, 4096, "r"), "x");
  EXPECT_EQ(t.num_gpus(), 4096u);
  EXPECT_EQ(switches_in_tier(t, 2), 64u);  // 16 SUs: the core tier is there
}

// A job on part of a grown cluster: only its servers and the switches joining them are built,
// and its routes are those of the whole cluster (hops, latency and bottleneck).
TEST(TopologyGrowth, AJobBuildsOnlyItsPartOfTheClustersFabric) {
  const clustersim::Topology desc = resolve_topology("dgx-h100");
  const Topology whole = build_topology(desc, 16384, "dgx-h100");
  const Topology part = build_topology(desc, 2048, "dgx-h100", 16384);
  EXPECT_EQ(part.num_gpus(), 2048u);
  EXPECT_LT(part.num_links() * 4, whole.num_links());
  // The job's 8 SUs reach each other through the core of the 64-SU fabric, not a 2-tier one.
  EXPECT_GT(switches_in_tier(part, 2), 0u);
  EXPECT_EQ(switches_in_tier(build_topology(desc, 2048, "dgx-h100"), 2), 0u);
  Routing whole_routes(whole), part_routes(part);
  for (const int32_t far : {8, 8 * 32 * 3, 2048 - 8}) {
    SCOPED_TRACE(far);
    const Route& a = whole_routes.route(whole.gpu(0), whole.gpu(far));
    const Route& b = part_routes.route(part.gpu(0), part.gpu(far));
    EXPECT_EQ(a.links.size(), b.links.size());
    EXPECT_EQ(a.latency, b.latency);
    EXPECT_EQ(a.bottleneck.in_bytes_per_s(), b.bottleneck.in_bytes_per_s());
  }
}

TEST(TopologyGrowth, ImpossibleSizesAndBadGrowthFieldsFailClearly) {
  clustersim::Topology fixed = resolve_topology("dgx-h100");
  fixed.mutable_tiered()->clear_growth();
  EXPECT_EQ(error_of([&] { build_topology(fixed, 4096, "dgx-h100"); }),
            "topology dgx-h100 holds at most 2048 GPUs, asked for 4096");
  EXPECT_NE(error_of([&] {
              grow_for_servers(fixed.tiered(), 512, "dgx-h100");
            }).find("topology dgx-h100 cannot grow to 512 servers"),
            std::string::npos);

  clustersim::Topology no_radix = resolve_topology("dgx-h100");
  no_radix.mutable_tiered()->mutable_tiers(1)->clear_radix();
  EXPECT_EQ(error_of([&] { validate_topology(no_radix, "h.textproto"); }),
            "h.textproto: tiered.tiers[1].radix must be > 0 for tiered.growth FAT_TREE");

  clustersim::Topology small_radix = resolve_topology("dgx-h100");
  small_radix.mutable_tiered()->mutable_tiers(0)->set_radix(48);
  EXPECT_EQ(error_of([&] { validate_topology(small_radix, "h.textproto"); }),
            "h.textproto: tiered.tiers[0] needs 64 ports per switch, more than its radix of 48");

  clustersim::Topology no_top = resolve_topology("dgx-h100");
  no_top.mutable_tiered()->mutable_growth()->clear_top();
  EXPECT_EQ(error_of([&] { validate_topology(no_top, "h.textproto"); }),
            "h.textproto: tiered.growth.top.radix must be >= 2 (is 0)");

  EXPECT_NE(error_of([] {
              build_topology(resolve_topology("dgx-h100"), kMaxBuildGpus + 8, "h");
            }).find("holds at most"),
            std::string::npos);
}

}  // namespace
}  // namespace cs::net
