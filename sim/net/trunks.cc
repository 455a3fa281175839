#include "sim/net/trunks.h"

#include <map>
#include <utility>

#include "sim/net/topology_builder.h"

namespace cs::net {

namespace {

// One switch group's links: those up out of it, those down into it from above, and the
// bandwidth up and down (to the tier below, or to the NICs of a leaf).
struct GroupLinks {
  std::vector<LinkId> up, in_from_above;
  double up_bytes_per_s = 0, down_bytes_per_s = 0;
};

bool is_switch_at(const Graph& g, Graph::vertex_descriptor v, int32_t tier) {
  return g[v].kind == VertexKind::kSwitch && g[v].tier == tier;
}

std::map<std::pair<int32_t, int32_t>, GroupLinks> group_links(const Topology& topology) {
  const Graph& g = topology.graph();
  std::map<std::pair<int32_t, int32_t>, GroupLinks> groups;
  for (auto [v, end] = boost::vertices(g); v != end; ++v) {
    const VertexInfo& info = g[*v];
    if (info.kind != VertexKind::kSwitch || info.tier < 0 || info.group < 0) continue;
    GroupLinks& links = groups[{info.tier, info.group}];
    for (auto [e, e_end] = boost::out_edges(*v, g); e != e_end; ++e) {
      const double bw = g[*e].bandwidth.in_bytes_per_s();
      if (is_switch_at(g, boost::target(*e, g), info.tier + 1)) {
        links.up.push_back(g[*e].id);
        links.up_bytes_per_s += bw;
      } else {
        links.down_bytes_per_s += bw;
      }
    }
    for (auto [e, e_end] = boost::in_edges(*v, g); e != e_end; ++e)
      if (is_switch_at(g, boost::source(*e, g), info.tier + 1))
        links.in_from_above.push_back(g[*e].id);
  }
  return groups;
}

}  // namespace

Trunks oversubscribed_trunks(const Topology& topology) {
  Trunks trunks;
  for (const auto& [key, links] : group_links(topology)) {
    // A top tier has nothing above it; a group with as much up as down has no bottleneck.
    if (links.up.empty() || links.up_bytes_per_s >= links.down_bytes_per_s * (1 - 1e-9)) continue;
    if (trunks.of_link.empty()) trunks.of_link.assign(topology.num_links(), -1);
    for (const auto* side : {&links.up, &links.in_from_above}) {
      double sum = 0;
      for (const LinkId l : *side) {
        trunks.of_link[l] = static_cast<int32_t>(trunks.bandwidth.size());
        sum += topology.link(l).bandwidth.in_bytes_per_s();
      }
      trunks.bandwidth.push_back(Bandwidth::bytes_per_s(sum));
    }
  }
  return trunks;
}

std::vector<OversubscribedDomain> oversubscribed_domains(const clustersim::Topology& description) {
  std::vector<OversubscribedDomain> domains;
  if (!description.has_tiered()) return domains;
  // A tier's group holds group_size groups of the tier below; tier 0's, group_size servers.
  int64_t gpus = gpus_per_node_in_use(description);
  for (const auto& tier : description.tiered().tiers()) {
    gpus *= tier.group_size();
    if (tier.oversubscription() > 1) domains.push_back({gpus, tier.oversubscription()});
  }
  return domains;
}

std::vector<HashedTier> hashed_tiers(const clustersim::Topology& description) {
  std::vector<HashedTier> tiers;
  if (!description.has_tiered() ||
      description.load_balancing().mode() == clustersim::LoadBalancing::ADAPTIVE)
    return tiers;
  const auto& t = description.tiered();
  const std::vector<TierUplinks> uplinks = tier_uplinks(t);
  int64_t gpus = gpus_per_node_in_use(description);
  double ratio = 1;  // each tier's links up carry its links down over its oversubscription
  for (std::size_t k = 0; k < uplinks.size(); ++k) {
    const auto& tier = t.tiers(static_cast<int>(k));
    gpus *= tier.group_size();
    ratio *= tier.oversubscription() > 0 ? tier.oversubscription() : 1.0;
    tiers.push_back({gpus, int64_t{tier.switches_per_group()} * uplinks[k].per_switch, ratio});
  }
  return tiers;
}

std::vector<TierSpan> tier_spans(const clustersim::Topology& description) {
  std::vector<TierSpan> spans;
  if (!description.has_tiered()) return spans;
  int64_t gpus = gpus_per_node_in_use(description);
  // One way: the GPU's PCIe link to its NIC, then a link of each tier up to the shared one.
  double one_way_ns = description.tiered().node().pcie_latency_ns();
  for (const auto& tier : description.tiered().tiers()) {
    gpus *= tier.group_size();
    one_way_ns += tier.link_latency_ns();
    spans.push_back({gpus, 2 * one_way_ns * 1e-9});
  }
  return spans;
}

}  // namespace cs::net
