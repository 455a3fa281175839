#include "sim/net/link_degradation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include "sim/core/draws.h"

namespace cs::net {

namespace {

constexpr std::array<std::pair<VertexKind, std::string_view>, 4> kKindNames = {{
    {VertexKind::kNvSwitch, "nvswitch"},  // before "switch": the longer prefix wins
    {VertexKind::kSwitch, "switch"},
    {VertexKind::kGpu, "gpu"},
    {VertexKind::kNic, "nic"},
}};

std::string_view kind_name(VertexKind kind) {
  for (const auto& [k, name] : kKindNames)
    if (k == kind) return name;
  return "?";
}

VertexId vertex_named(const Topology& topology, std::string_view name) {
  for (const auto& [kind, prefix] : kKindNames) {
    if (name.substr(0, prefix.size()) != prefix) continue;
    const std::string_view digits = name.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw std::invalid_argument("\"" + std::string(name) + "\" is not " + std::string(prefix) +
                                  " followed by an index");
    const int32_t index = std::stoi(std::string(digits));
    int32_t count = 0;
    for (VertexId v = 0; v < topology.num_vertices(); ++v) {
      if (topology.vertex(v).kind != kind) continue;
      if (topology.vertex(v).index == index) return v;
      ++count;
    }
    throw std::invalid_argument("there is no " + std::string(name) + " (the topology has " +
                                std::to_string(count) + " " + std::string(prefix) + " vertices)");
  }
  throw std::invalid_argument("\"" + std::string(name) +
                              "\" names no vertex: use gpu<i>, nic<i>, nvswitch<i> or switch<i>");
}

// The links from `a` to `b`, appended to `out`.
void links_between(const Topology& topology, VertexId a, VertexId b, std::vector<LinkId>& out) {
  const Graph& g = topology.graph();
  for (const auto e : boost::make_iterator_range(boost::out_edges(a, g)))
    if (boost::target(e, g) == b) out.push_back(g[e].id);
}

}  // namespace

std::string vertex_name(const Topology& topology, VertexId v) {
  const VertexInfo& info = topology.vertex(v);
  return std::string(kind_name(info.kind)) + std::to_string(info.index);
}

std::vector<LinkId> links_named(const Topology& topology, std::string_view name) {
  const auto dash = name.find('-');
  if (dash == std::string_view::npos || name.find('-', dash + 1) != std::string_view::npos)
    throw std::invalid_argument("\"" + std::string(name) + "\" is not of the form A-B");
  const VertexId a = vertex_named(topology, name.substr(0, dash));
  const VertexId b = vertex_named(topology, name.substr(dash + 1));
  std::vector<LinkId> links;
  links_between(topology, a, b, links);
  links_between(topology, b, a, links);
  if (links.empty())
    throw std::invalid_argument("no link joins " + vertex_name(topology, a) + " and " +
                                vertex_name(topology, b));
  std::sort(links.begin(), links.end());
  return links;
}

std::vector<LinkId> random_cables(const Topology& topology, double fraction, uint64_t seed) {
  // (hash, low end, high end) of every network cable, once per pair of ends.
  using Cable = std::tuple<uint64_t, VertexId, VertexId>;
  std::vector<Cable> cables;
  for (LinkId l = 0; l < topology.num_links(); ++l) {
    if (topology.link(l).link_class != LinkClass::kNetwork) continue;
    const VertexId lo = std::min(topology.link_source(l), topology.link_target(l));
    const VertexId hi = std::max(topology.link_source(l), topology.link_target(l));
    cables.emplace_back(draw_bits(seed, DrawStream::kLinks, uint64_t{lo} << 32 | hi), lo, hi);
  }
  std::sort(cables.begin(), cables.end());
  cables.erase(std::unique(cables.begin(), cables.end()), cables.end());
  const auto chosen = static_cast<std::size_t>(
      std::llround(std::clamp(fraction, 0.0, 1.0) * static_cast<double>(cables.size())));
  std::vector<std::pair<VertexId, VertexId>> ends;
  for (std::size_t i = 0; i < chosen; ++i)
    ends.emplace_back(std::get<1>(cables[i]), std::get<2>(cables[i]));
  std::sort(ends.begin(), ends.end());
  std::vector<LinkId> links;
  for (LinkId l = 0; l < topology.num_links(); ++l) {
    if (topology.link(l).link_class != LinkClass::kNetwork) continue;
    const VertexId lo = std::min(topology.link_source(l), topology.link_target(l));
    const VertexId hi = std::max(topology.link_source(l), topology.link_target(l));
    if (std::binary_search(ends.begin(), ends.end(), std::pair{lo, hi})) links.push_back(l);
  }
  return links;
}

std::vector<LinkId> nic_links(const Topology& topology, int32_t gpu) {
  if (gpu < 0 || static_cast<std::size_t>(gpu) >= topology.num_gpus())
    throw std::invalid_argument("there is no gpu" + std::to_string(gpu) + " (the topology has " +
                                std::to_string(topology.num_gpus()) + " GPUs)");
  const Graph& g = topology.graph();
  std::vector<LinkId> links;
  for (const auto e : boost::make_iterator_range(boost::out_edges(topology.gpu(gpu), g))) {
    const auto nic = static_cast<VertexId>(boost::target(e, g));
    if (topology.vertex(nic).kind != VertexKind::kNic) continue;
    for (const auto out : boost::make_iterator_range(boost::out_edges(nic, g))) {
      const auto sw = static_cast<VertexId>(boost::target(out, g));
      if (topology.vertex(sw).kind != VertexKind::kSwitch) continue;
      links.push_back(g[out].id);
      links_between(topology, sw, nic, links);
    }
  }
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  return links;
}

}  // namespace cs::net
