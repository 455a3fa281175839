// Tests of reading cluster descriptions and expanding them into graphs: error messages, sizing,
// and that the built links follow the description.
#include "sim/net/topology_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "sim/config/embedded_presets.h"
#include "sim/net/routing.h"
#include "tests/support/test_helpers.h"

namespace cs::net {
namespace {

using testing_support::error_of;

constexpr const char* kSmallTiered = R"pb(
  name: "small"
  gpu: "h100"
  tiered {
    node {
      gpus_per_node: 4
      nvlink_bandwidth_gbytes: 450
      nvlink_latency_ns: 250
      nics_per_gpu: 1
      nic_bandwidth_gbits: 400
      pcie_bandwidth_gbytes: 63
      pcie_latency_ns: 300
    }
    rail_optimized: true
    tiers { name: "leaf" group_size: 2 switches_per_group: 4 link_latency_ns: 100 }
    tiers { name: "spine" group_size: 3 switches_per_group: 2 link_latency_ns: 200 }
  }
)pb";

std::size_t count_kind(const Topology& t, VertexKind kind, int32_t tier = -2) {
  std::size_t n = 0;
  for (VertexId v = 0; v < t.num_vertices(); ++v) {
    if (t.vertex(v).kind == kind && (tier == -2 || t.vertex(v).tier == tier)) ++n;
  }
  return n;
}

// Sum of the bandwidths of links from a vertex satisfying `from` to one satisfying `to`.
template <typename From, typename To>
double sum_bandwidth(const Topology& t, From from, To to) {
  double sum = 0;
  for (LinkId id = 0; id < t.num_links(); ++id) {
    if (from(t.link_source(id)) && to(t.link_target(id))) {
      sum += t.link(id).bandwidth.in_bytes_per_s();
    }
  }
  return sum;
}

TEST(TopologyText, SyntaxErrorNamesFileLineAndColumn) {
  // A stray '}' in column 11 of line 2.
  const std::string text = "gpu: \"h100\"\nname: \"x\" }\n";
  const std::string msg = error_of([&] { load_topology_text(text, "bad.textproto"); });
  EXPECT_EQ(msg.rfind("bad.textproto:2:11: ", 0), 0u) << msg;
}

TEST(TopologyText, UnknownFieldIsLocatedOnItsLine) {
  const std::string text = "name: \"x\"\ngpu: \"h100\"\n  bogus_field: 3\n";
  const std::string msg = error_of([&] { load_topology_text(text, "bad.textproto"); });
  std::smatch m;
  ASSERT_TRUE(std::regex_search(msg, m, std::regex("^bad\\.textproto:3:([0-9]+): "))) << msg;
  // Protobuf points at or just after the name; either way within the field's text.
  EXPECT_GE(std::stoi(m[1]), 3);
  EXPECT_LE(std::stoi(m[1]), 15);
  EXPECT_NE(msg.find("bogus_field"), std::string::npos) << msg;
}

TEST(TopologyText, MalformedValueIsLocated) {
  const std::string text = "gpu: \"h100\"\ntiered {\n  node { gpus_per_node: eight }\n}\n";
  const std::string msg = error_of([&] { load_topology_text(text, "t.textproto"); });
  EXPECT_TRUE(std::regex_search(msg, std::regex("^t\\.textproto:3:[0-9]+: "))) << msg;
}

TEST(TopologyText, SemanticErrorsNameTheField) {
  auto message_for = [](const std::string& from, const std::string& to) {
    std::string text = kSmallTiered;
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    return error_of([&] { load_topology_text(text, "dgx.textproto"); });
  };
  EXPECT_EQ(message_for("gpus_per_node: 4", "gpus_per_node: 0"),
            "dgx.textproto: tiered.node.gpus_per_node must be > 0 (is 0)");
  EXPECT_NE(message_for("group_size: 3", "group_size: -1").find("tiered.tiers[1].group_size"),
            std::string::npos);
  EXPECT_NE(message_for("nic_bandwidth_gbits: 400", "nic_bandwidth_gbits: 0")
                .find("dgx.textproto: tiered.node.nic_bandwidth_gbits"),
            std::string::npos);
  // NCCL's channels pair up and spread evenly over the node's 4 NICs; a transport carries at most
  // its line rate.
  EXPECT_NE(message_for("pcie_latency_ns: 300", "pcie_latency_ns: 300 nccl_channels: 12")
                .find("dgx.textproto: tiered.node.nccl_channels must be 0 (the model's rule) or a "
                      "multiple of 2 x the node's 4 NICs up to NCCL's 64 (is 12)"),
            std::string::npos);
  EXPECT_NE(message_for("pcie_latency_ns: 300", "pcie_latency_ns: 300 nccl_channels: -8")
                .find("tiered.node.nccl_channels"),
            std::string::npos);
  EXPECT_NE(
      message_for("pcie_latency_ns: 300", "pcie_latency_ns: 300 nic_transport_efficiency: 1.5")
          .find("dgx.textproto: tiered.node.nic_transport_efficiency must be in (0, 1]"),
      std::string::npos);
  EXPECT_NE(
      message_for("pcie_latency_ns: 300", "pcie_latency_ns: 300 nic_transport_efficiency: nan")
          .find("tiered.node.nic_transport_efficiency"),
      std::string::npos);
  EXPECT_EQ(load_topology_text(kSmallTiered, "ok.textproto").tiered().node().nccl_channels(), 0);
  // Links no clock can time are refused by field, not met later as an overflow.
  EXPECT_NE(message_for("nic_bandwidth_gbits: 400", "nic_bandwidth_gbits: 1e-9")
                .find("tiered.node.nic_bandwidth_gbits must be in [0.8, 800000] (is 1e-09)"),
            std::string::npos);
  EXPECT_NE(message_for("gpu: \"h100\"", "").find("gpu must name"), std::string::npos);
  EXPECT_NE(message_for("rail_optimized: true", "rail_optimized: true max_nodes: 7")
                .find("tiered.max_nodes (7) exceeds the tiers' capacity of 6 servers"),
            std::string::npos);
  // Rail-optimized with more leaves than NICs per server: the extra leaves would never be used.
  EXPECT_NE(message_for("switches_per_group: 4", "switches_per_group: 5")
                .find("tiered.tiers[0].switches_per_group (5)"),
            std::string::npos);
}

TEST(TopologyText, UnknownTopologyListsPresets) {
  const std::string msg = error_of([] { resolve_topology("no-such-cluster"); });
  EXPECT_NE(msg.find("no-such-cluster"), std::string::npos);
  for (const auto& name : preset_names("topologies")) {
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
  }
}

TEST(TopologyPresets, EachLoadsAndBuildsOneServer) {
  ASSERT_FALSE(preset_names("topologies").empty());
  for (const auto& name : preset_names("topologies")) {
    SCOPED_TRACE(name);
    const clustersim::Topology desc = resolve_topology(name);
    // One server: 8 GPUs of a DGX, 72 of an NVL72 rack.
    const int32_t one = desc.has_tiered() ? desc.tiered().node().gpus_per_node() : 8;
    const Topology t = build_topology(desc, one, name);
    EXPECT_EQ(t.name, desc.name());
    EXPECT_EQ(t.gpu_type, desc.gpu());
    EXPECT_EQ(t.num_gpus(), static_cast<std::size_t>(one));
    // An NVSwitch server has one (modelled) switch; an NVLink mesh a link for each GPU pair.
    const bool mesh = desc.has_tiered() && desc.tiered().node().nvlink_mesh();
    EXPECT_EQ(count_kind(t, VertexKind::kNvSwitch), mesh ? 0u : 1u);
    EXPECT_EQ(t.has_nvswitch(), !mesh);
    EXPECT_LE(one, topology_capacity_gpus(desc));
  }
}

// A node of directly linked GPUs (HPE's quad GH200): each pair joined by one duplex NVLink link
// of the pair's bandwidth, every GPU-to-GPU route that one link, no NVSwitch; more than 4 GPUs
// a node is refused with the field.
TEST(TopologyPresets, NvlinkMeshJoinsEachGpuPairByOneLink) {
  const clustersim::Topology desc = resolve_topology("alps-gh200");
  const Topology t = build_topology(desc, 8, "alps-gh200");
  std::size_t nvlinks = 0;
  for (LinkId id = 0; id < t.num_links(); ++id) {
    if (t.link(id).link_class != LinkClass::kNvlink) continue;
    ++nvlinks;
    EXPECT_DOUBLE_EQ(t.link(id).bandwidth.in_bytes_per_s(), 150e9);
  }
  EXPECT_EQ(nvlinks, 2u * 2u * 6u);  // two nodes of 6 pairs, both directions
  Routing routing(t);
  EXPECT_TRUE(routing.uses_tiered_routing());
  for (int32_t a = 0; a < 4; ++a) {
    for (int32_t b = 0; b < 4; ++b) {
      if (a == b) continue;
      const Route& r = routing.route(t.gpu(a), t.gpu(b));
      ASSERT_EQ(r.links.size(), 1u);
      EXPECT_EQ(t.link_source(r.links[0]), t.gpu(a));
      EXPECT_EQ(t.link_target(r.links[0]), t.gpu(b));
    }
  }
  // Between nodes the route leaves on the GPU's own NIC.
  EXPECT_GT(routing.route(t.gpu(0), t.gpu(4)).links.size(), 1u);
  clustersim::Topology eight = desc;
  eight.mutable_tiered()->mutable_node()->set_gpus_per_node(8);
  const std::string msg = error_of([&] { build_topology(eight, 8, "mesh.textproto"); });
  EXPECT_NE(msg.find("tiered.node.nvlink_mesh"), std::string::npos) << msg;
}

// Every preset: each switch below the top has down:up bandwidth equal to its tier's
// oversubscription, and in rail-optimized presets each leaf serves a single rail.
TEST(TopologyPresets, SwitchesHaveTheirTiersOversubscription) {
  for (const auto& name : preset_names("topologies")) {
    const clustersim::Topology desc = resolve_topology(name);
    if (!desc.has_tiered() || desc.tiered().tiers_size() == 0) continue;
    SCOPED_TRACE(name);
    const auto& tiered = desc.tiered();
    const int32_t gpn = tiered.node().gpus_per_node();
    const int32_t nics_per_node = gpn * tiered.node().nics_per_gpu();
    // Two full groups of the tier just below the top, so every tier is built and full.
    int64_t servers = 2;
    for (int i = 0; i + 1 < tiered.tiers_size(); ++i) servers *= tiered.tiers(i).group_size();
    const int64_t gpus = std::min(servers * gpn, topology_capacity_gpus(desc));
    const Topology t = build_topology(desc, static_cast<int32_t>(gpus), name);
    int32_t top = 0;
    for (VertexId v = 0; v < t.num_vertices(); ++v) top = std::max(top, t.vertex(v).tier);
    for (VertexId sw = 0; sw < t.num_vertices(); ++sw) {
      const int32_t tier = t.vertex(sw).tier;
      if (t.vertex(sw).kind != VertexKind::kSwitch || tier == top) continue;
      const auto self = [sw](VertexId v) { return v == sw; };
      const auto below = [&](VertexId v) {
        return tier == 0 ? t.vertex(v).kind == VertexKind::kNic : t.vertex(v).tier == tier - 1;
      };
      const auto above = [&](VertexId v) { return t.vertex(v).tier == tier + 1; };
      const double down = sum_bandwidth(t, self, below);
      const double up = sum_bandwidth(t, self, above);
      const double over = tiered.tiers(tier).oversubscription();
      ASSERT_GT(up, 0);
      EXPECT_NEAR(down / up, over > 0 ? over : 1.0, 1e-9) << "switch " << sw << " tier " << tier;
    }
    if (!tiered.rail_optimized()) continue;
    const int32_t leaves = tiered.tiers(0).switches_per_group();
    std::map<VertexId, std::set<int32_t>> rails;
    for (LinkId id = 0; id < t.num_links(); ++id) {
      const VertexId nic = t.link_source(id);
      if (t.vertex(nic).kind == VertexKind::kNic && t.vertex(t.link_target(id)).tier == 0) {
        rails[t.link_target(id)].insert(t.vertex(nic).index % nics_per_node % leaves);
      }
    }
    for (const auto& [leaf, on_leaf] : rails) EXPECT_EQ(on_leaf.size(), 1u) << "leaf " << leaf;
  }
}

TEST(TopologySizing, BuildsOnlyTheServersNeeded) {
  // Without growth, so that the described capacity is a hard limit.
  clustersim::Topology desc = resolve_topology("llama3-24k");
  desc.mutable_tiered()->clear_growth();
  const int32_t gpn = desc.tiered().node().gpus_per_node();
  const int64_t capacity = topology_capacity_gpus(desc);
  EXPECT_EQ(capacity, 8 * 192 * 2 * gpn);

  const Topology pod = build_topology(desc, 3072, "llama3-24k");
  EXPECT_EQ(pod.num_gpus(), 3072u);
  EXPECT_EQ(count_kind(pod, VertexKind::kNvSwitch), 3072u / gpn);
  EXPECT_EQ(count_kind(pod, VertexKind::kNic), 3072u);
  EXPECT_EQ(count_kind(pod, VertexKind::kSwitch, 0), 3072u / 16);  // one ToR per 16 GPUs
  // One pod needs no aggregation tier.
  EXPECT_EQ(count_kind(pod, VertexKind::kSwitch, 1), 16u);
  EXPECT_EQ(count_kind(pod, VertexKind::kSwitch, 2), 0u);

  const Topology big = build_topology(desc, 16384, "llama3-24k");
  EXPECT_EQ(count_kind(big, VertexKind::kNvSwitch), 2048u);
  EXPECT_EQ(count_kind(big, VertexKind::kSwitch, 1), 6u * 16);  // ceil(1024 racks / 192) pods
  EXPECT_EQ(count_kind(big, VertexKind::kSwitch, 2), 16u);

  // A partial server is built whole.
  EXPECT_EQ(build_topology(desc, 12, "llama3-24k").num_gpus(), 16u);

  EXPECT_EQ(error_of([&] { build_topology(desc, capacity + 1, "llama3-24k"); }),
            "topology llama3-24k holds at most " + std::to_string(capacity) + " GPUs, asked for " +
                std::to_string(capacity + 1));
  EXPECT_EQ(build_topology(desc, 0, "llama3-24k").num_gpus(), static_cast<std::size_t>(capacity));
}

TEST(TopologySizing, AbsurdCapacityIsRefusedWhenAskedForAll) {
  std::string text = kSmallTiered;
  text.replace(text.find("group_size: 3"), 13, "group_size: 3000000");
  const clustersim::Topology desc = load_topology_text(text, "huge.textproto");
  EXPECT_NE(error_of([&] { build_topology(desc, 0, "huge.textproto"); }).find("ask for fewer"),
            std::string::npos);
  EXPECT_EQ(build_topology(desc, 64, "huge.textproto").num_gpus(), 64u);
}

TEST(TopologyBandwidth, Llama3PodUplinksAreOneSeventhOfDownlinks) {
  const clustersim::Topology desc = resolve_topology("llama3-24k");
  const Topology t = build_topology(desc, 2 * 3072, "llama3-24k");  // two full pods
  const auto tier_is = [&](int32_t tier) {
    return [&t, tier](VertexId v) {
      return t.vertex(v).kind == VertexKind::kSwitch && t.vertex(v).tier == tier;
    };
  };
  for (VertexId v = 0; v < t.num_vertices(); ++v) {
    if (!tier_is(1)(v)) continue;
    const auto self = [v](VertexId w) { return w == v; };
    const double down = sum_bandwidth(t, self, tier_is(0));
    const double up = sum_bandwidth(t, self, tier_is(2));
    EXPECT_NEAR(down / up, desc.tiered().tiers(1).oversubscription(), 1e-9);
  }
  // Pod 0 as a whole: what its GPUs can inject versus what leaves the pod.
  const auto in_pod0 = [&](VertexId v) { return tier_is(1)(v) && t.vertex(v).group == 0; };
  const double gpus_in = 3072 * desc.tiered().node().nic_bandwidth_gbits() * 1e9 / 8;
  EXPECT_NEAR(sum_bandwidth(t, in_pod0, tier_is(2)) * 7, gpus_in, gpus_in * 1e-9);
}

TEST(TopologyBandwidth, ServerLinksFollowTheDescription) {
  const clustersim::Topology desc = load_topology_text(kSmallTiered, "small.textproto");
  const Topology t = build_topology(desc, 0, "small.textproto");
  const auto& node = desc.tiered().node();
  EXPECT_EQ(t.num_gpus(), 4u * 2 * 3);
  for (LinkId id = 0; id < t.num_links(); ++id) {
    const LinkInfo& link = t.link(id);
    const VertexKind a = t.vertex(t.link_source(id)).kind;
    const VertexKind b = t.vertex(t.link_target(id)).kind;
    if (a == VertexKind::kGpu && b == VertexKind::kNvSwitch) {
      EXPECT_EQ(link.link_class, LinkClass::kNvlink);
      EXPECT_DOUBLE_EQ(link.bandwidth.in_gigabytes_per_s(), node.nvlink_bandwidth_gbytes());
      EXPECT_EQ(link.latency, Time::ns(static_cast<int64_t>(node.nvlink_latency_ns())));
    } else if (a == VertexKind::kGpu && b == VertexKind::kNic) {
      EXPECT_EQ(link.link_class, LinkClass::kPcie);
      EXPECT_DOUBLE_EQ(link.bandwidth.in_gigabytes_per_s(), node.pcie_bandwidth_gbytes());
    } else if (a == VertexKind::kNic && b == VertexKind::kSwitch) {
      EXPECT_EQ(link.link_class, LinkClass::kNetwork);
      EXPECT_DOUBLE_EQ(link.bandwidth.in_bytes_per_s() * 8 / 1e9, node.nic_bandwidth_gbits());
    }
  }
  // Links come in duplex pairs: every link has a reverse twin of equal bandwidth.
  for (LinkId id = 0; id + 1 < t.num_links(); id += 2) {
    EXPECT_EQ(t.link_source(id), t.link_target(id + 1));
    EXPECT_EQ(t.link(id).bandwidth, t.link(id + 1).bandwidth);
  }
}

TEST(TopologyExplicit, BuildsACustomRing) {
  const std::string text = R"pb(
    name: "ring"
    gpu: "a100"
    explicit {
      vertices { name: "g0" kind: GPU }
      vertices { name: "g1" kind: GPU }
      vertices { name: "sw" kind: SWITCH }
      links { from: "g0" to: "g1" bandwidth_gbytes: 300 latency_ns: 500 duplex: true }
      links { from: "g1" to: "sw" bandwidth_gbytes: 25 latency_ns: 1000 duplex: true }
      links { from: "sw" to: "g0" bandwidth_gbytes: 25 latency_ns: 1000 }
    }
  )pb";
  const clustersim::Topology desc = load_topology_text(text, "ring.textproto");
  const Topology t = build_topology(desc, 2, "ring.textproto");
  EXPECT_EQ(t.num_gpus(), 2u);
  EXPECT_EQ(t.num_vertices(), 3u);
  EXPECT_EQ(t.num_links(), 5u);
  EXPECT_EQ(t.link(0).link_class, LinkClass::kNvlink);   // AUTO between two GPUs
  EXPECT_EQ(t.link(2).link_class, LinkClass::kNetwork);  // AUTO between GPU and switch
  // The NVLink pair is one server; nothing ties the switch to a server.
  EXPECT_EQ(t.vertex(t.gpu(0)).node, t.vertex(t.gpu(1)).node);
  EXPECT_EQ(t.vertex(2).node, -1);
  EXPECT_EQ(error_of([&] { build_topology(desc, 3, "ring.textproto"); }),
            "topology ring holds at most 2 GPUs, asked for 3");

  std::string broken = text;
  broken.replace(broken.find("to: \"sw\""), 8, "to: \"sx\"");
  EXPECT_EQ(error_of([&] { load_topology_text(broken, "ring.textproto"); }),
            "ring.textproto: explicit.links[1].to 'sx' names no vertex");
}

}  // namespace
}  // namespace cs::net
