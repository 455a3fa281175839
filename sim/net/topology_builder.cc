#include "sim/net/topology_builder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "sim/config/embedded_presets.h"
#include "sim/config/field_checks.h"
#include "sim/config/text_proto.h"
#include "sim/net/topology_growth.h"

namespace cs::net {

namespace {

using cs::config_fail;

constexpr int32_t kMaxMeshGpus = 4;
// NCCL's MAXCHANNELS (src/include/device.h).
constexpr int32_t kMaxNcclChannels = 64;

// What a link may be: the simulator's clock counts picoseconds in 64 bits (106 days), which a
// gigabyte over a link slower than these, or past this latency, would overrun; no interconnect is
// faster than the upper bounds (NVLink 5: 900 GB/s per GPU; NICs: 800 Gb/s).
constexpr double kMinLinkGbytes = 0.1, kMaxLinkGbytes = 1e5;  // GB/s
constexpr double kMaxLatencyNs = 1e9;                         // one second
const std::string kLinkBoundsWhy = "the range the simulator's clock holds";

void check_gbytes(double v, const std::string& src, const std::string& field) {
  require_range(v, kMinLinkGbytes, kMaxLinkGbytes, src, field, kLinkBoundsWhy);
}
void check_gbits(double v, const std::string& src, const std::string& field) {
  require_range(v, 8 * kMinLinkGbytes, 8 * kMaxLinkGbytes, src, field, kLinkBoundsWhy);
}
void check_latency(double v, const std::string& src, const std::string& field) {
  require_range(v, 0, kMaxLatencyNs, src, field, kLinkBoundsWhy);
}

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  config_fail(source, what);
}

Time from_ns(double ns) {
  return Time::ps(std::llround(ns * 1e3));
}

std::string stem_of(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

int64_t tier_capacity_servers(const clustersim::TieredTopology& t) {
  return described_capacity_servers(t);
}

// GPUs of a node a run uses: the first gpus_used_per_node, or all of them.
int32_t used_per_node(const clustersim::NodeFabric& n) {
  return n.gpus_used_per_node() > 0 ? n.gpus_used_per_node() : n.gpus_per_node();
}

bool grows(const clustersim::TieredTopology& t) {
  return t.growth().mode() != clustersim::Growth::NONE && t.tiers_size() > 0;
}

// A growing fabric is bounded only by max_nodes and by what this simulator builds.
int64_t capacity_servers(const clustersim::TieredTopology& t) {
  if (t.max_nodes() > 0) return t.max_nodes();
  if (grows(t)) return kMaxBuildGpus / std::max(used_per_node(t.node()), 1);
  return tier_capacity_servers(t);
}

// The server: its GPUs, NVLink, and where there are network tiers, its NICs and PCIe.
void validate_node(const clustersim::NodeFabric& n, bool networked, const std::string& src) {
  if (n.gpus_per_node() <= 0) {
    fail(src,
         "tiered.node.gpus_per_node must be > 0 (is " + std::to_string(n.gpus_per_node()) + ")");
  }
  if (n.gpus_used_per_node() < 0 || n.gpus_used_per_node() > n.gpus_per_node()) {
    fail(src, "tiered.node.gpus_used_per_node must be in [0, gpus_per_node = " +
                  std::to_string(n.gpus_per_node()) + "] (is " +
                  std::to_string(n.gpus_used_per_node()) + ")");
  }
  // NCCL's rings over a mesh are modelled as every ordering of its GPUs (coll::mesh_ring): 6 for
  // a quad-GH200 node, a number that grows factorially past it.
  if (n.nvlink_mesh() && n.gpus_per_node() > kMaxMeshGpus) {
    fail(src, "tiered.node.nvlink_mesh takes at most " + std::to_string(kMaxMeshGpus) +
                  " GPUs per node (gpus_per_node is " + std::to_string(n.gpus_per_node()) +
                  "): NCCL's rings over larger meshes are not modelled");
  }
  if (n.gpus_per_node() > 1) {
    check_gbytes(n.nvlink_bandwidth_gbytes(), src, "tiered.node.nvlink_bandwidth_gbytes");
    check_latency(n.nvlink_latency_ns(), src, "tiered.node.nvlink_latency_ns");
  }
  if (networked) {
    if (n.nics_per_gpu() <= 0) {
      fail(src, "tiered.node.nics_per_gpu must be > 0 when there are network tiers (is " +
                    std::to_string(n.nics_per_gpu()) + ")");
    }
    check_gbits(n.nic_bandwidth_gbits(), src, "tiered.node.nic_bandwidth_gbits");
    if (n.nic_transport_efficiency() < 0 || n.nic_transport_efficiency() > 1 ||
        !std::isfinite(n.nic_transport_efficiency())) {
      fail(src,
           "tiered.node.nic_transport_efficiency must be in (0, 1], or 0 for NCCL over "
           "InfiniBand's (is " +
               std::to_string(n.nic_transport_efficiency()) + ")");
    }
    const int32_t pair_nics = 2 * n.gpus_per_node() * n.nics_per_gpu();
    if (n.nccl_channels() < 0 || n.nccl_channels() > kMaxNcclChannels ||
        n.nccl_channels() % pair_nics != 0) {
      fail(src,
           "tiered.node.nccl_channels must be 0 (the model's rule) or a multiple of 2 x the "
           "node's " +
               std::to_string(pair_nics / 2) + " NICs up to NCCL's " +
               std::to_string(kMaxNcclChannels) + " (is " + std::to_string(n.nccl_channels()) +
               "): NCCL pairs its channels and spreads them evenly over the NICs");
    }
    check_gbytes(n.pcie_bandwidth_gbytes(), src, "tiered.node.pcie_bandwidth_gbytes");
    check_latency(n.pcie_latency_ns(), src, "tiered.node.pcie_latency_ns");
  }
}

// The switch tiers, each on its own and as a fabric over the node's NICs.
void validate_tiers(const clustersim::TieredTopology& t, const std::string& src) {
  const auto& n = t.node();
  for (int i = 0; i < t.tiers_size(); ++i) {
    const auto& tier = t.tiers(i);
    const std::string field = "tiered.tiers[" + std::to_string(i) + "]";
    if (tier.group_size() <= 0) {
      fail(src, field + ".group_size must be > 0 (is " + std::to_string(tier.group_size()) + ")");
    }
    if (tier.switches_per_group() <= 0) {
      fail(src, field + ".switches_per_group must be > 0 (is " +
                    std::to_string(tier.switches_per_group()) + ")");
    }
    check_latency(tier.link_latency_ns(), src, field + ".link_latency_ns");
    if (tier.oversubscription() != 0) {
      require_range(tier.oversubscription(), 1e-3, 1e3, src, field + ".oversubscription",
                    kLinkBoundsWhy);
    }
  }
  if (t.tiers_size() == 1 && t.tiers(0).switches_per_group() > 1) {
    // GPUs do not relay traffic, so leaves of one group must be joined by a tier above them.
    fail(src, "tiered.tiers[0].switches_per_group is " +
                  std::to_string(t.tiers(0).switches_per_group()) +
                  " but no tier above joins these leaves; add a spine tier");
  }
  if (t.rail_optimized() && t.tiers_size() > 0) {
    const int64_t nics = int64_t{n.gpus_per_node()} * n.nics_per_gpu();
    if (t.tiers(0).switches_per_group() > nics) {
      fail(src, "tiered.tiers[0].switches_per_group (" +
                    std::to_string(t.tiers(0).switches_per_group()) +
                    ") exceeds the NICs per server (" + std::to_string(nics) +
                    "): in a rail-optimized fabric the extra leaves would be idle");
    }
  }
}

void validate_tiered(const clustersim::TieredTopology& t, const std::string& src) {
  if (!t.has_node()) fail(src, "tiered.node must be set");
  validate_node(t.node(), t.tiers_size() > 0, src);
  validate_tiers(t, src);
  if (t.max_nodes() < 0) {
    fail(src, "tiered.max_nodes must be >= 0 (is " + std::to_string(t.max_nodes()) + ")");
  }
  validate_growth(t, src);
  if (!grows(t) && t.max_nodes() > tier_capacity_servers(t)) {
    fail(src, "tiered.max_nodes (" + std::to_string(t.max_nodes()) +
                  ") exceeds the tiers' capacity of " + std::to_string(tier_capacity_servers(t)) +
                  " servers");
  }
}

VertexKind to_kind(clustersim::Vertex::Kind kind) {
  switch (kind) {
    case clustersim::Vertex::NVSWITCH:
      return VertexKind::kNvSwitch;
    case clustersim::Vertex::NIC:
      return VertexKind::kNic;
    case clustersim::Vertex::SWITCH:
      return VertexKind::kSwitch;
    default:
      return VertexKind::kGpu;
  }
}

LinkClass link_class(clustersim::Link::Class cls, VertexKind a, VertexKind b) {
  switch (cls) {
    case clustersim::Link::NVLINK:
      return LinkClass::kNvlink;
    case clustersim::Link::PCIE:
      return LinkClass::kPcie;
    case clustersim::Link::NETWORK:
      return LinkClass::kNetwork;
    default:
      break;
  }
  const auto either = [&](VertexKind k) { return a == k || b == k; };
  if (either(VertexKind::kGpu) && (either(VertexKind::kNvSwitch) || a == b)) {
    return LinkClass::kNvlink;
  }
  if (either(VertexKind::kGpu) && either(VertexKind::kNic)) return LinkClass::kPcie;
  return LinkClass::kNetwork;
}

// Largest flows_per_message accepted: NCCL_IB_QPS_PER_CONNECTION is a small count (Llama 3 uses
// 16); a typo should not multiply every message into thousands of flows.
constexpr int32_t kMaxFlowsPerMessage = 256;

void validate_load_balancing(const clustersim::LoadBalancing& lb, const std::string& src,
                             const std::string& field) {
  const int32_t n = lb.flows_per_message();
  if (lb.mode() == clustersim::LoadBalancing::MULTI_FLOW_ECMP &&
      (n < 1 || n > kMaxFlowsPerMessage)) {
    fail(src, field + ".flows_per_message must be in [1, " + std::to_string(kMaxFlowsPerMessage) +
                  "] for MULTI_FLOW_ECMP (is " + std::to_string(n) + ")");
  }
  if (lb.mode() != clustersim::LoadBalancing::MULTI_FLOW_ECMP && n != 0) {
    fail(src, field + ".flows_per_message is only read by MULTI_FLOW_ECMP; remove it or set mode");
  }
}

LoadBalancing to_load_balancing(const clustersim::LoadBalancing& lb) {
  switch (lb.mode()) {
    case clustersim::LoadBalancing::MULTI_FLOW_ECMP:
      return {LoadBalancingMode::kMultiFlowEcmp, lb.flows_per_message()};
    case clustersim::LoadBalancing::ADAPTIVE:
      return {LoadBalancingMode::kAdaptive, 1};
    default:
      return {};
  }
}

void validate_explicit(const clustersim::ExplicitTopology& e, const std::string& src) {
  std::unordered_map<std::string, int> names;
  int gpus = 0;
  for (int i = 0; i < e.vertices_size(); ++i) {
    const std::string field = "explicit.vertices[" + std::to_string(i) + "]";
    const std::string& name = e.vertices(i).name();
    if (name.empty()) fail(src, field + ".name must not be empty");
    if (!names.emplace(name, i).second) {
      fail(src, field + ".name '" + name + "' repeats explicit.vertices[" +
                    std::to_string(names[name]) + "]");
    }
    if (e.vertices(i).kind() == clustersim::Vertex::GPU) ++gpus;
  }
  if (gpus == 0) fail(src, "explicit.vertices must include at least one GPU");
  for (int i = 0; i < e.links_size(); ++i) {
    const auto& link = e.links(i);
    const std::string field = "explicit.links[" + std::to_string(i) + "]";
    if (!names.contains(link.from())) {
      fail(src, field + ".from '" + link.from() + "' names no vertex");
    }
    if (!names.contains(link.to())) fail(src, field + ".to '" + link.to() + "' names no vertex");
    if (link.from() == link.to()) fail(src, field + " joins '" + link.from() + "' to itself");
    check_gbytes(link.bandwidth_gbytes(), src, field + ".bandwidth_gbytes");
    check_latency(link.latency_ns(), src, field + ".latency_ns");
  }
}

// How many switches of its parent group each child switch cables to. A cable carries one port
// of the NIC's speed, so a switch with `child_up` of uplink bandwidth has that many uplink ports
// (at least one). With as many parent switches as ports or fewer, every child switch reaches
// every parent switch over a bundle of ports. With more, as in the core tier of a grown fat tree
// (DGX SuperPOD H100 RA, 16+ SUs: each spine's 32 uplinks spread over 64-256 core switches),
// each child switch cables one port to each of `ports` parent switches (a plane), not a sliver
// of a port to all of them: a link no flow could fill at its NIC's rate is not a cable anywhere.
// The group's switches take consecutive planes, so together they reach every parent switch.
// Only above the spines: leaves cable to every switch of their parent group (build_tiered).
int32_t uplink_fan_out(double child_up, double port, int32_t child_switches, int32_t per_group) {
  const auto ports = static_cast<int64_t>(std::floor(child_up / port * (1 + 1e-9)));
  const int64_t cover = (per_group + child_switches - 1) / child_switches;
  return static_cast<int32_t>(std::clamp<int64_t>(std::max(ports, cover), 1, per_group));
}

// Adds `servers` servers of `gpn` GPUs each, as build_tiered orders them: per server its GPUs,
// its NVSwitch (or the links of its NVLink mesh), their NICs. Returns the NICs, by server, then
// local NIC index (GPU-major).
std::vector<VertexId> build_servers(const clustersim::NodeFabric& n, int32_t servers, int32_t gpn,
                                    int32_t nics_per_gpu, Topology& topo) {
  const Bandwidth nvlink = Bandwidth::gigabytes_per_s(n.nvlink_bandwidth_gbytes());
  const Bandwidth pcie = Bandwidth::gigabytes_per_s(n.pcie_bandwidth_gbytes());
  int32_t nvswitches = 0;
  int32_t nic_count = 0;
  std::vector<VertexId> nics;
  nics.reserve(static_cast<std::size_t>(servers) * gpn * nics_per_gpu);
  std::vector<VertexId> gpu_vertices(static_cast<std::size_t>(gpn));
  for (int32_t s = 0; s < servers; ++s) {
    for (int32_t i = 0; i < gpn; ++i) {
      gpu_vertices[i] = topo.add_vertex({.kind = VertexKind::kGpu, .node = s, .group = s});
    }
    if (n.nvlink_mesh()) {
      for (int32_t i = 0; i < gpn; ++i)
        for (int32_t j = i + 1; j < gpn; ++j)
          topo.add_duplex_link(gpu_vertices[i], gpu_vertices[j], nvlink,
                               from_ns(n.nvlink_latency_ns()), LinkClass::kNvlink);
    } else if (gpn > 1) {  // a one-GPU server has no NVLink peer, hence no NVSwitch
      const VertexId nvs = topo.add_vertex(
          {.kind = VertexKind::kNvSwitch, .node = s, .index = nvswitches++, .group = s});
      for (VertexId g : gpu_vertices) {
        topo.add_duplex_link(g, nvs, nvlink, from_ns(n.nvlink_latency_ns()), LinkClass::kNvlink);
      }
    }
    for (int32_t i = 0; i < gpn; ++i) {
      for (int32_t j = 0; j < nics_per_gpu; ++j) {
        const VertexId v = topo.add_vertex(
            {.kind = VertexKind::kNic, .node = s, .index = nic_count++, .group = s});
        topo.add_duplex_link(gpu_vertices[i], v, pcie, from_ns(n.pcie_latency_ns()),
                             LinkClass::kPcie);
        nics.push_back(v);
      }
    }
  }
  return nics;
}

// The switch tiers as build_tiered lays them, one on top of the last: the tier below's switch
// groups, its switches (group g's are [g * per_group, (g + 1) * per_group)) and each one's
// downlink bandwidth, sized for full groups (nominal), so a run on part of the cluster sees the
// same cables as the whole cluster has.
struct TierBelow {
  int64_t groups = 0;
  std::vector<VertexId> switches;
};

std::vector<VertexId> add_switch_groups(Topology& topo, int32_t& switch_count, int32_t tier,
                                        int64_t groups, int32_t per_group) {
  std::vector<VertexId> made;
  made.reserve(static_cast<std::size_t>(groups * per_group));
  for (int64_t g = 0; g < groups; ++g) {
    for (int32_t k = 0; k < per_group; ++k) {
      made.push_back(topo.add_vertex({.kind = VertexKind::kSwitch,
                                      .tier = tier,
                                      .index = switch_count++,
                                      .group = static_cast<int32_t>(g)}));
    }
  }
  return made;
}

// Tier 0: leaves, and every used NIC's cable to its leaf. The last group may be partly filled;
// its leaves are all built all the same. Every GPU's NICs, idle ones too (`nics_per_node`), are
// what the rails and the leaf cables are laid for.
TierBelow build_leaves(const clustersim::TieredTopology& t, const std::vector<VertexId>& nics,
                       int32_t servers, int32_t nics_used, int32_t nics_per_node, Bandwidth nic,
                       Topology& topo, int32_t& switch_count) {
  const auto& leaf = t.tiers(0);
  const int32_t leaf_size = leaf.group_size();
  const int32_t leaves_per_group = leaf.switches_per_group();
  TierBelow below;
  below.groups = (servers + leaf_size - 1) / leaf_size;
  below.switches = add_switch_groups(topo, switch_count, 0, below.groups, leaves_per_group);
  // Non-rail: consecutive blocks of the group's NICs, in server order, share a leaf.
  const int64_t block =
      (int64_t{leaf_size} * nics_per_node + leaves_per_group - 1) / leaves_per_group;
  for (int32_t s = 0; s < servers; ++s) {
    for (int32_t k = 0; k < nics_used; ++k) {
      const int64_t in_group = t.rail_optimized()
                                   ? k % leaves_per_group
                                   : (int64_t{s % leaf_size} * nics_per_node + k) / block;
      const VertexId sw =
          below.switches[static_cast<std::size_t>((s / leaf_size) * leaves_per_group + in_group)];
      topo.add_duplex_link(nics[static_cast<std::size_t>(s) * nics_used + k], sw, nic,
                           from_ns(leaf.link_latency_ns()), LinkClass::kNetwork);
    }
  }
  return below;
}

// Tier k (>= 1): switch groups joining the tier below's groups, and their cables (`up`, from
// tier_uplinks); `below` becomes tier k.
void build_upper_tier(const clustersim::TieredTopology& t, int k, const TierUplinks& up,
                      Topology& topo, int32_t& switch_count, TierBelow& below) {
  const auto& child = t.tiers(k - 1);
  const auto& tier = t.tiers(k);
  const int64_t child_groups = below.groups;
  const int64_t groups = (child_groups + tier.group_size() - 1) / tier.group_size();
  const int32_t per_group = tier.switches_per_group();
  std::vector<VertexId> above = add_switch_groups(topo, switch_count, k, groups, per_group);
  const Bandwidth rate = Bandwidth::bytes_per_s(up.bytes_per_s);
  for (int64_t c = 0; c < child_groups; ++c) {
    const int64_t parent = c / tier.group_size();
    for (int32_t i = 0; i < child.switches_per_group(); ++i) {
      const VertexId from =
          below.switches[static_cast<std::size_t>(c * child.switches_per_group() + i)];
      for (int32_t j = 0; j < up.per_switch; ++j) {
        const int64_t to = (int64_t{i} * up.per_switch + j) % per_group;
        topo.add_duplex_link(from, above[static_cast<std::size_t>(parent * per_group + to)], rate,
                             from_ns(tier.link_latency_ns()), LinkClass::kNetwork);
      }
    }
  }
  below.groups = groups;
  below.switches = std::move(above);
}

// Expands the parametric description. Vertex order: per server its GPUs in use (so GPU index =
// rank), its NVSwitch, their NICs; then the switches tier by tier, group by group. A server's
// idle GPUs (gpus_used_per_node) are not built, but its NICs keep their rails and the leaves
// their size, as the cables are laid for every GPU.
Topology build_tiered(const clustersim::TieredTopology& t, int64_t gpus) {
  const auto& n = t.node();
  const int32_t gpn = used_per_node(n);
  const auto servers = static_cast<int32_t>((gpus + gpn - 1) / gpn);
  const bool network = t.tiers_size() > 0;
  const int32_t nics_per_gpu = network ? n.nics_per_gpu() : 0;
  Topology topo;
  const std::vector<VertexId> nics = build_servers(n, servers, gpn, nics_per_gpu, topo);
  if (!network) return topo;

  const Bandwidth nic = Bandwidth::gigabits_per_s(n.nic_bandwidth_gbits());
  topo.nic_gbits = n.nic_bandwidth_gbits();
  topo.nvlink_gbytes = n.nvlink_bandwidth_gbytes();
  topo.nccl_pairs_per_nic = n.nccl_channels() / (2 * n.gpus_per_node() * nics_per_gpu);
  topo.nic_behind_cpu = n.nic_behind_cpu();
  topo.nic_transport_efficiency = n.nic_transport_efficiency();
  int32_t switch_count = 0;
  TierBelow below = build_leaves(t, nics, servers, gpn * nics_per_gpu,
                                 n.gpus_per_node() * nics_per_gpu, nic, topo, switch_count);
  // Tier k joins tier k-1 groups; it is built only while there is more than one switch group
  // below to join (or, above the leaves, more than one leaf in the single leaf group).
  const bool several_leaves = t.tiers(0).switches_per_group() > 1;
  const std::vector<TierUplinks> uplinks = tier_uplinks(t);
  for (int k = 1; k < t.tiers_size(); ++k) {
    if (below.groups == 1 && !(k == 1 && several_leaves)) break;
    build_upper_tier(t, k, uplinks[static_cast<std::size_t>(k - 1)], topo, switch_count, below);
  }
  return topo;
}

// Servers of an explicit graph are its NVLink islands: GPUs and NVSwitches joined by NVLink
// links, numbered in order of their first GPU; a NIC belongs to the server of its PCIe GPU.
std::vector<int32_t> explicit_nodes(const clustersim::ExplicitTopology& e,
                                    const std::unordered_map<std::string, int>& index) {
  const int n = e.vertices_size();
  std::vector<int> root(static_cast<std::size_t>(n));
  std::iota(root.begin(), root.end(), 0);
  const auto find = [&](int v) {
    while (root[v] != v) v = root[v] = root[root[v]];
    return v;
  };
  std::vector<std::pair<int, int>> pcie;
  for (const auto& link : e.links()) {
    const int a = index.at(link.from());
    const int b = index.at(link.to());
    const VertexKind ka = to_kind(e.vertices(a).kind());
    const VertexKind kb = to_kind(e.vertices(b).kind());
    const LinkClass cls = link_class(link.class_(), ka, kb);
    const auto on_node = [](VertexKind k) {
      return k == VertexKind::kGpu || k == VertexKind::kNvSwitch;
    };
    if (cls == LinkClass::kNvlink && on_node(ka) && on_node(kb)) root[find(a)] = find(b);
    if (cls == LinkClass::kPcie) pcie.emplace_back(a, b);
  }
  std::vector<int32_t> node(static_cast<std::size_t>(n), -1);
  std::unordered_map<int, int32_t> island;
  for (int v = 0; v < n; ++v) {
    if (e.vertices(v).kind() != clustersim::Vertex::GPU) continue;
    const auto [it, added] = island.emplace(find(v), static_cast<int32_t>(island.size()));
    node[v] = it->second;
  }
  for (int v = 0; v < n; ++v) {
    if (e.vertices(v).kind() == clustersim::Vertex::NVSWITCH && island.contains(find(v))) {
      node[v] = island[find(v)];
    }
  }
  for (auto [a, b] : pcie) {
    if (e.vertices(a).kind() == clustersim::Vertex::NIC && node[a] < 0) node[a] = node[b];
    if (e.vertices(b).kind() == clustersim::Vertex::NIC && node[b] < 0) node[b] = node[a];
  }
  return node;
}

Topology build_explicit(const clustersim::ExplicitTopology& e) {
  std::unordered_map<std::string, int> index;
  for (int i = 0; i < e.vertices_size(); ++i) index.emplace(e.vertices(i).name(), i);
  const std::vector<int32_t> node = explicit_nodes(e, index);
  Topology topo;
  std::vector<VertexId> vertex(static_cast<std::size_t>(e.vertices_size()));
  std::array<int32_t, 4> per_kind{};
  for (int i = 0; i < e.vertices_size(); ++i) {
    const VertexKind kind = to_kind(e.vertices(i).kind());
    // group stays -1: an arbitrary graph has no tiers for routing to exploit.
    vertex[i] = topo.add_vertex(
        {.kind = kind, .node = node[i], .index = per_kind[static_cast<std::size_t>(kind)]++});
  }
  for (const auto& link : e.links()) {
    const int a = index.at(link.from());
    const int b = index.at(link.to());
    const LinkClass cls =
        link_class(link.class_(), to_kind(e.vertices(a).kind()), to_kind(e.vertices(b).kind()));
    const Bandwidth bw = Bandwidth::gigabytes_per_s(link.bandwidth_gbytes());
    if (link.duplex()) {
      topo.add_duplex_link(vertex[a], vertex[b], bw, from_ns(link.latency_ns()), cls);
    } else {
      topo.add_link(vertex[a], vertex[b], bw, from_ns(link.latency_ns()), cls);
    }
  }
  return topo;
}

}  // namespace

std::vector<TierUplinks> tier_uplinks(const clustersim::TieredTopology& t) {
  std::vector<TierUplinks> uplinks;
  if (t.tiers_size() == 0) return uplinks;
  const auto& n = t.node();
  const double nic = Bandwidth::gigabits_per_s(n.nic_bandwidth_gbits()).in_bytes_per_s();
  // Every GPU's NICs, idle ones too, are what the leaf cables are laid for.
  const double nics_per_node = static_cast<double>(n.gpus_per_node()) * n.nics_per_gpu();
  // Each switch's bandwidth down, tier by tier.
  double down = t.tiers(0).group_size() * nics_per_node * nic / t.tiers(0).switches_per_group();
  for (int k = 1; k < t.tiers_size(); ++k) {
    const auto& child = t.tiers(k - 1);
    const auto& tier = t.tiers(k);
    const int32_t per_group = tier.switches_per_group();
    const double over = child.oversubscription() > 0 ? child.oversubscription() : 1.0;
    const double child_up = down / over;  // each child switch's uplink bandwidth
    // Leaves cable to every switch above them: two leaves of a group meet only through a switch
    // both reach.
    const int32_t fan =
        k == 1 ? per_group : uplink_fan_out(child_up, nic, child.switches_per_group(), per_group);
    uplinks.push_back({fan, child_up / fan});
    down =
        static_cast<double>(tier.group_size()) * child.switches_per_group() * child_up / per_group;
  }
  return uplinks;
}

clustersim::Topology load_topology_text(std::string_view text, const std::string& source_name) {
  clustersim::Topology desc;
  parse_text_proto(text, source_name, &desc);
  validate_topology(desc, source_name);
  return desc;
}

clustersim::Topology resolve_topology(const std::string& preset_or_path) {
  if (const auto found = find_preset_or_file("topologies", preset_or_path))
    return load_topology_text(found->text, found->label);
  throw ConfigError("unknown topology '" + preset_or_path + "': neither a preset (" +
                    preset_list("topologies") + ") nor a readable file");
}

void validate_topology(const clustersim::Topology& desc, const std::string& source_name) {
  if (desc.gpu().empty()) fail(source_name, "gpu must name the GPU type, e.g. gpu: \"h100\"");
  validate_load_balancing(desc.load_balancing(), source_name, "load_balancing");
  switch (desc.form_case()) {
    case clustersim::Topology::kTiered:
      validate_tiered(desc.tiered(), source_name);
      break;
    case clustersim::Topology::kExplicit:
      validate_explicit(desc.explicit_(), source_name);
      break;
    default:
      fail(source_name, "one of tiered { ... } or explicit { ... } must be given");
  }
}

int64_t topology_capacity_gpus(const clustersim::Topology& desc) {
  if (desc.has_tiered()) {
    return capacity_servers(desc.tiered()) * std::max(used_per_node(desc.tiered().node()), 1);
  }
  int64_t gpus = 0;
  for (const auto& v : desc.explicit_().vertices()) gpus += v.kind() == clustersim::Vertex::GPU;
  return gpus;
}

int32_t cluster_build_gpus(int64_t job_gpus, int64_t cluster_gpus, const std::string& source) {
  if (cluster_gpus < 0) {
    fail(source, "cluster.num_gpus must be >= 0 (is " + std::to_string(cluster_gpus) + ")");
  }
  if (cluster_gpus > 0 && cluster_gpus < job_gpus) {
    fail(source, "cluster.num_gpus (" + std::to_string(cluster_gpus) +
                     ") is smaller than the layout's " + std::to_string(job_gpus) + " GPUs");
  }
  if (cluster_gpus > kMaxBuildGpus) {
    fail(source, "cluster.num_gpus (" + std::to_string(cluster_gpus) + ") exceeds the " +
                     std::to_string(kMaxBuildGpus) + " GPUs this simulator builds");
  }
  return static_cast<int32_t>(std::max(job_gpus, cluster_gpus));
}

void override_load_balancing(clustersim::Topology& desc,
                             const clustersim::LoadBalancing& override_lb,
                             const std::string& source) {
  if (override_lb.mode() == clustersim::LoadBalancing::MODE_UNSET) return;
  validate_load_balancing(override_lb, source, "cluster.load_balancing");
  *desc.mutable_load_balancing() = override_lb;
}

int32_t gpus_per_node_in_use(const clustersim::Topology& desc) {
  return desc.has_tiered() ? used_per_node(desc.tiered().node()) : 0;
}

void override_gpus_per_node(clustersim::Topology& desc, int32_t gpus_per_node,
                            const std::string& source) {
  if (gpus_per_node == 0) return;
  if (!desc.has_tiered()) {
    fail(source, "cluster.gpus_per_node applies to tiered topologies only; '" + desc.name() +
                     "' is explicit (its GPUs are all used)");
  }
  const int32_t all = desc.tiered().node().gpus_per_node();
  if (gpus_per_node < 0 || gpus_per_node > all) {
    fail(source, "cluster.gpus_per_node must be in [0, " + std::to_string(all) +
                     "], the GPUs of a node of '" + desc.name() + "' (is " +
                     std::to_string(gpus_per_node) + ")");
  }
  desc.mutable_tiered()->mutable_node()->set_gpus_used_per_node(gpus_per_node);
}

Topology build_topology(const clustersim::Topology& desc, int32_t num_gpus,
                        const std::string& source_name, int64_t fabric_gpus) {
  validate_topology(desc, source_name);
  const std::string name = desc.name().empty() ? stem_of(source_name) : desc.name();
  const int64_t capacity = topology_capacity_gpus(desc);
  if (num_gpus > capacity) {
    throw ConfigError("topology " + name + " holds at most " + std::to_string(capacity) +
                      " GPUs, asked for " + std::to_string(num_gpus));
  }
  // "The whole cluster" of a growing fabric is the one its tiers describe.
  const int64_t whole =
      desc.has_tiered() && grows(desc.tiered()) && desc.tiered().max_nodes() == 0
          ? tier_capacity_servers(desc.tiered()) * used_per_node(desc.tiered().node())
          : capacity;
  const int64_t gpus = num_gpus > 0 ? num_gpus : whole;
  if (gpus > kMaxBuildGpus) {
    throw ConfigError("topology " + name + " would have " + std::to_string(gpus) +
                      " GPUs, more than the " + std::to_string(kMaxBuildGpus) +
                      " this simulator builds; ask for fewer GPUs");
  }
  // Built in place: the graph must not be copied, as the link index holds its edge descriptors.
  const int64_t gpn = std::max(used_per_node(desc.tiered().node()), 1);
  const int64_t fabric = std::max(gpus, std::min(fabric_gpus, capacity));
  Topology topo =
      desc.has_tiered()
          ? build_tiered(grow_for_servers(desc.tiered(), (fabric + gpn - 1) / gpn, name), gpus)
          : build_explicit(desc.explicit_());
  topo.name = name;
  topo.gpu_type = desc.gpu();
  topo.load_balancing = to_load_balancing(desc.load_balancing());
  return topo;
}

}  // namespace cs::net
