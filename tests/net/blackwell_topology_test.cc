// Tests of the Blackwell topology presets: DGX B200 and DGX B300 against their SuperPOD RAs'
// tables, GB200 / GB300 NVL72 racks as 72-GPU NVLink domains with per-GPU rails between racks, and
// jobs that use only some GPUs of each rack (gpus_used_per_node).
#include <gtest/gtest.h>

#include <string>

#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"
#include "tests/support/test_helpers.h"
#include "tests/support/topology_counts.h"

namespace cs::net {
// Named, not anonymous: the test binaries are unity builds, where other files' helpers share an
// anonymous namespace with these.
namespace blackwell_topology_test {

using testing_support::count_vertices;
using testing_support::error_of;
using testing_support::uplink_bytes_per_s;

std::size_t count_links(const Topology& t, LinkClass cls) {
  std::size_t n = 0;
  for (LinkId id = 0; id < t.num_links(); ++id) n += t.link(id).link_class == cls;
  return n;
}

// The leaf a GPU's (only) NIC is cabled to.
VertexId leaf_of(const Topology& t, Routing& routing, int32_t gpu, int32_t other) {
  const Route& r = routing.route(t.gpu(gpu), t.gpu(other));
  return t.link_target(r.links[1]);
}

struct Counts {
  int32_t gpus;
  std::size_t leaf, spine, core;
};

void expect_counts(const std::string& preset, const Counts& c, double nic_gbits) {
  SCOPED_TRACE(preset + " at " + std::to_string(c.gpus) + " GPUs");
  const Topology t = build_topology(resolve_topology(preset), c.gpus, preset);
  EXPECT_EQ(t.num_gpus(), static_cast<std::size_t>(c.gpus));
  EXPECT_EQ(count_vertices(t, VertexKind::kSwitch, 0), c.leaf);
  EXPECT_EQ(count_vertices(t, VertexKind::kSwitch, 1), c.spine);
  EXPECT_EQ(count_vertices(t, VertexKind::kSwitch, 2), c.core);
  EXPECT_EQ(count_vertices(t, VertexKind::kSwitch, 3), 0u);
  // Full bisection: every tier of cables carries what the GPUs inject.
  const double inject = c.gpus * nic_gbits * 1e9 / 8;
  EXPECT_NEAR(uplink_bytes_per_s(t, -1), inject, inject * 1e-9);
  EXPECT_NEAR(uplink_bytes_per_s(t, 0), inject, inject * 1e-9);
  if (c.core > 0) {
    EXPECT_NEAR(uplink_bytes_per_s(t, 1), inject, inject * 1e-9);
  }
}

// DGX SuperPOD B200 RA, table of larger SuperPOD component counts (topologies/dgx-b200.textproto):
// 8 SU two tiers of 64 / 32; 16, 32, 64 SU: 128/128/64, 256/256/128, 512/512/256.
TEST(BlackwellTopology, DgxB200MatchesTheReferenceArchitectureTable) {
  for (const Counts& c : {Counts{2048, 64, 32, 0}, Counts{4096, 128, 128, 64},
                          Counts{8192, 256, 256, 128}, Counts{16384, 512, 512, 256}}) {
    expect_counts("dgx-b200", c, 400);
  }
  const Topology t = build_topology(resolve_topology("dgx-b200"), 16, "dgx-b200");
  EXPECT_EQ(count_vertices(t, VertexKind::kNvSwitch), 2u);      // one per server
  EXPECT_NEAR(t.link(0).bandwidth.in_bytes_per_s(), 900e9, 1);  // NVLink 5, per direction
}

// An NVL72 rack is one node: 72 GPUs on one NVLink switch, 72 NICs, 18 leaves per 8-rack SU; a
// full 16-SU SuperPOD (9,216 GPUs) grows a core: 288 leaves, 288 spines, 144 cores.
TEST(BlackwellTopology, Gb200Nvl72RackIsOneNvlinkDomain) {
  const Topology rack = build_topology(resolve_topology("gb200-nvl72"), 72, "gb200-nvl72");
  EXPECT_EQ(rack.num_gpus(), 72u);
  EXPECT_EQ(count_vertices(rack, VertexKind::kNvSwitch), 1u);
  EXPECT_EQ(count_vertices(rack, VertexKind::kNic), 72u);
  EXPECT_EQ(count_links(rack, LinkClass::kNvlink), 2u * 72);
  for (int32_t g = 0; g < 72; ++g) EXPECT_EQ(rack.vertex(rack.gpu(g)).node, 0);
  Routing routing(rack);
  const Route& across = routing.route(rack.gpu(0), rack.gpu(71));
  ASSERT_EQ(across.links.size(), 2u);  // GPU, switch tray, GPU: NVLink all the way
  EXPECT_EQ(rack.link(across.links[0]).link_class, LinkClass::kNvlink);
  EXPECT_NEAR(across.bottleneck.in_bytes_per_s(), 900e9, 1);

  expect_counts("gb200-nvl72", {576, 18, 18, 0}, 400);
  expect_counts("gb200-nvl72", {1152, 36, 18, 0}, 400);
  expect_counts("gb200-nvl72", {9216, 288, 288, 144}, 400);
}

// Rails: the same GPU of every rack meets on one leaf (GPU, NIC, leaf, NIC, GPU); GPUs k and
// k + 18 of a rack share a leaf too (18 leaves, NIC k on leaf k % 18); other GPUs cross a spine.
TEST(BlackwellTopology, Nvl72RailsJoinTheSameGpuOfEveryRack) {
  const Topology t = build_topology(resolve_topology("gb200-nvl72"), 576, "gb200-nvl72");
  Routing routing(t);
  for (int32_t k : {0, 5, 40, 71}) {
    SCOPED_TRACE(k);
    const Route& rail = routing.route(t.gpu(k), t.gpu(7 * 72 + k));
    EXPECT_EQ(rail.links.size(), 4u);
    EXPECT_NEAR(rail.bottleneck.in_bytes_per_s(), 400e9 / 8, 1);
    EXPECT_EQ(leaf_of(t, routing, k, 72 + k), leaf_of(t, routing, k + 72, k));
  }
  EXPECT_EQ(leaf_of(t, routing, 3, 72), leaf_of(t, routing, 21, 72));
  EXPECT_NE(leaf_of(t, routing, 3, 72), leaf_of(t, routing, 4, 72));
  EXPECT_EQ(routing.route(t.gpu(3), t.gpu(72 + 4)).links.size(), 6u);  // through a spine
}

// GB300 NVL72 on XDR: 8 leaves per 576-GPU SU, two tiers to 18 SU (10,368 GPUs: 144 leaves,
// 72 spines, as the B300 XDR RA's table), a core past that; 800 Gb/s per GPU.
TEST(BlackwellTopology, Gb300Nvl72FollowsTheXdrTable) {
  expect_counts("gb300-nvl72", {576, 8, 72, 0}, 800);
  expect_counts("gb300-nvl72", {10368, 144, 72, 0}, 800);
  const Topology big = build_topology(resolve_topology("gb300-nvl72"), 20736, "gb300-nvl72");
  EXPECT_GT(count_vertices(big, VertexKind::kSwitch, 2), 0u);
  EXPECT_NEAR(uplink_bytes_per_s(big, 1), 20736 * 800e9 / 8, 20736 * 800e9 / 8 * 1e-9);
}

// DGX B300 on XDR: the B300 RA's 72-server SU (576 GPUs) on 8 rail leaves, two tiers to 18 SU
// (144 leaves, 72 spines), a core past that; one 800 Gb/s ConnectX-8 per GPU, 8 GPUs a server,
// and the same GPU of every server of an SU on one leaf.
TEST(BlackwellTopology, DgxB300FollowsTheXdrTable) {
  expect_counts("dgx-b300", {576, 8, 72, 0}, 800);
  expect_counts("dgx-b300", {10368, 144, 72, 0}, 800);
  const Topology big = build_topology(resolve_topology("dgx-b300"), 20736, "dgx-b300");
  EXPECT_GT(count_vertices(big, VertexKind::kSwitch, 2), 0u);
  const Topology t = build_topology(resolve_topology("dgx-b300"), 576, "dgx-b300");
  EXPECT_EQ(count_vertices(t, VertexKind::kNvSwitch), 72u);  // one per server
  Routing routing(t);
  const Route& rail = routing.route(t.gpu(3), t.gpu(71 * 8 + 3));
  EXPECT_EQ(rail.links.size(), 4u);  // GPU, NIC, leaf, NIC, GPU
  EXPECT_NEAR(rail.bottleneck.in_bytes_per_s(), 800e9 / 8, 1);
  EXPECT_EQ(routing.route(t.gpu(3), t.gpu(8 + 4)).links.size(), 6u);  // through a spine
}

// 64 of 72 GPUs per rack: ranks 64-127 are the second rack's first 64 GPUs, on the same rails
// (GPU k of each rack on leaf k % 18), and the leaves keep the cables of all 72 GPUs.
TEST(BlackwellTopology, JobOnSomeGpusOfEachRackKeepsTheRails) {
  clustersim::Topology desc = resolve_topology("gb200-nvl72");
  override_gpus_per_node(desc, 64, "run.textproto");
  EXPECT_EQ(gpus_per_node_in_use(desc), 64);
  const Topology t = build_topology(desc, 128, "gb200-nvl72");
  EXPECT_EQ(t.num_gpus(), 128u);
  EXPECT_EQ(t.vertex(t.gpu(63)).node, 0);
  EXPECT_EQ(t.vertex(t.gpu(64)).node, 1);
  EXPECT_EQ(count_vertices(t, VertexKind::kNic), 128u);
  EXPECT_EQ(count_links(t, LinkClass::kNvlink), 2u * 128);
  Routing routing(t);
  EXPECT_EQ(routing.route(t.gpu(5), t.gpu(64 + 5)).links.size(), 4u);
  EXPECT_EQ(leaf_of(t, routing, 64 + 5, 0), leaf_of(t, routing, 23, 64));
  // Spine uplinks are sized for 8 full racks of 72 NICs.
  const double cabled = 8 * 72 * 400e9 / 8;
  EXPECT_NEAR(uplink_bytes_per_s(t, 0), cabled, cabled * 1e-9);
  EXPECT_EQ(topology_capacity_gpus(desc) % 64, 0);
}

TEST(BlackwellTopology, GpusPerNodeOutOfRangeIsRefused) {
  clustersim::Topology desc = resolve_topology("gb200-nvl72");
  const std::string msg = error_of([&] { override_gpus_per_node(desc, 73, "run.textproto"); });
  EXPECT_NE(msg.find("run.textproto"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cluster.gpus_per_node must be in [0, 72]"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { override_gpus_per_node(desc, -1, "run.textproto"); }), "");
  desc.mutable_tiered()->mutable_node()->set_gpus_used_per_node(80);
  const std::string bad = error_of([&] { validate_topology(desc, "t.textproto"); });
  EXPECT_NE(bad.find("t.textproto: tiered.node.gpus_used_per_node must be in [0, "
                     "gpus_per_node = 72] (is 80)"),
            std::string::npos)
      << bad;
  override_gpus_per_node(desc, 0, "run.textproto");  // 0 keeps the topology's own
  EXPECT_EQ(desc.tiered().node().gpus_used_per_node(), 80);
}

}  // namespace blackwell_topology_test
}  // namespace cs::net
