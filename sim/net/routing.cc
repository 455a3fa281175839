#include "sim/net/routing.h"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

namespace cs::net {

namespace {
constexpr VertexId kNoVertex = std::numeric_limits<VertexId>::max();
constexpr int32_t kNoSlot = -1;
// Deeper fabrics than this are not tiered in practice; they fall back to BFS.
constexpr std::size_t kMaxTiers = 16;

uint64_t hop_hash(VertexId src, VertexId dst, VertexId hop, uint64_t salt) {
  const uint64_t h =
      mix_hash(static_cast<uint64_t>(src) << 40 ^ static_cast<uint64_t>(dst) << 16 ^ hop);
  // Salt 0 keeps the static ECMP hash, so the default routes do not move.
  return salt == 0 ? h : mix_hash(h ^ mix_hash(salt));
}

// Index of the chosen one among `n` candidates: the hashed one, or with a load function the one
// whose `load_of` is least, scanning from the hashed one so that ties spread like the hash does.
template <typename LoadOf>
std::size_t choose(std::size_t n, uint64_t hash, const Routing::LinkLoad* load, LoadOf load_of) {
  const std::size_t start = hash % n;
  if (load == nullptr) return start;
  std::size_t best = start;
  uint32_t best_load = load_of(start);
  for (std::size_t i = 1; i < n && best_load > 0; ++i) {
    const std::size_t c = (start + i) % n;
    const uint32_t l = load_of(c);
    if (l < best_load) {
      best = c;
      best_load = l;
    }
  }
  return best;
}
}  // namespace

// The structure the tiered builder lays down, read back from the graph: each GPU's NVSwitch and
// NIC ports, each switch's up-links and down-links, and which group sits above which. Building it
// checks the structure (every switch of a group reaches every switch of its parent group), so a
// graph that merely looks tiered falls back to BFS rather than getting wrong routes.
namespace detail {

struct TieredIndex {
  struct Nic {
    VertexId leaf = kNoVertex;
    LinkId gpu_to_nic = 0, nic_to_leaf = 0, leaf_to_nic = 0, nic_to_gpu = 0;
  };
  struct Gpu {
    VertexId nvswitch = kNoVertex;
    LinkId to_nvswitch = 0, from_nvswitch = 0;
    std::vector<std::pair<VertexId, LinkId>> peers;  // direct NVLink links (a mesh node)
    std::vector<Nic> nics;
  };
  struct Switch {
    int32_t tier = 0;
    int32_t group = 0;
    std::vector<LinkId> up{};
    std::vector<std::pair<VertexId, LinkId>> down{};  // to switches only, sorted by vertex
    // The same sorted by the target's group, and where each group's run starts.
    std::vector<std::pair<VertexId, LinkId>> by_group{};
    std::vector<std::pair<int32_t, uint32_t>> group_begin{};
  };

  std::vector<int32_t> slot;  // vertex -> index into gpus or switches (by kind), or kNoSlot
  std::vector<Gpu> gpus;
  std::vector<Switch> switches;
  std::vector<std::vector<int32_t>> parent_group;  // [tier][group] -> group at tier + 1, or -1
  std::vector<std::vector<std::vector<VertexId>>> members;  // [tier][group] -> switches, sorted

  const Switch& sw(VertexId v) const { return switches[static_cast<std::size_t>(slot[v])]; }
  // The down-links of `s` into the switches of `group` (one tier below), in vertex order.
  std::span<const std::pair<VertexId, LinkId>> down_into(const Switch& s, int32_t group) const {
    const auto it = std::lower_bound(s.group_begin.begin(), s.group_begin.end(),
                                     std::make_pair(group, uint32_t{0}));
    if (it == s.group_begin.end() || it->first != group) return {};
    const uint32_t end =
        it + 1 == s.group_begin.end() ? static_cast<uint32_t>(s.by_group.size()) : (it + 1)->second;
    return std::span(s.by_group).subspan(it->second, end - it->second);
  }
};

}  // namespace detail

namespace {

using Index = detail::TieredIndex;

VertexId edge_source(const Graph& g, Graph::edge_descriptor e) {
  return static_cast<VertexId>(boost::source(e, g));
}
VertexId edge_target(const Graph& g, Graph::edge_descriptor e) {
  return static_cast<VertexId>(boost::target(e, g));
}

// Gives every GPU and switch its slot and lists each switch in its (tier, group); false when a
// vertex has no group or a switch's tier is out of range.
bool index_vertices(const Graph& g, std::size_t n, Index& idx) {
  idx.slot.assign(n, kNoSlot);
  for (VertexId v = 0; v < n; ++v) {
    const VertexInfo& info = g[v];
    if (info.group < 0) return false;
    if (info.kind == VertexKind::kGpu) {
      idx.slot[v] = static_cast<int32_t>(idx.gpus.size());
      idx.gpus.emplace_back();
    } else if (info.kind == VertexKind::kSwitch) {
      if (info.tier < 0 || static_cast<std::size_t>(info.tier) >= kMaxTiers) return false;
      idx.slot[v] = static_cast<int32_t>(idx.switches.size());
      idx.switches.push_back({.tier = info.tier, .group = info.group});
      const auto t = static_cast<std::size_t>(info.tier);
      if (idx.members.size() <= t) idx.members.resize(t + 1);
      auto& groups = idx.members[t];
      if (groups.size() <= static_cast<std::size_t>(info.group)) groups.resize(info.group + 1);
      groups[info.group].push_back(v);  // v grows, so each list stays sorted
    }
  }
  return true;
}

// The NIC `to_nic` leads to from GPU `gpu`: its links back to the GPU and to and from its leaf;
// false unless it serves that one GPU and one leaf, both ways.
bool index_nic(const Graph& g, VertexId gpu, Graph::edge_descriptor to_nic, Index::Nic& nic) {
  const VertexId w = edge_target(g, to_nic);
  nic.gpu_to_nic = g[to_nic].id;
  bool back = false;
  for (auto [f, fend] = boost::out_edges(w, g); f != fend; ++f) {
    const VertexId x = edge_target(g, *f);
    if (x == gpu) {
      nic.nic_to_gpu = g[*f].id;
      back = true;
    } else if (g[x].kind == VertexKind::kSwitch && g[x].tier == 0 && nic.leaf == kNoVertex) {
      nic.leaf = x;
      nic.nic_to_leaf = g[*f].id;
    } else {
      return false;  // a NIC serves one GPU and one leaf
    }
  }
  bool down = false;
  for (auto [f, fend] = boost::in_edges(w, g); f != fend; ++f) {
    if (edge_source(g, *f) == nic.leaf) {
      nic.leaf_to_nic = g[*f].id;
      down = true;
    }
  }
  return back && nic.leaf != kNoVertex && down;
}

// GPU v's ports: at most one NVSwitch, reached both ways, or direct links to the GPUs of its
// server (an NVLink mesh), and its NICs; nothing else.
bool index_gpu(const Graph& g, VertexId v, Index::Gpu& gpu) {
  for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
    const VertexId w = edge_target(g, *e);
    if (g[w].kind == VertexKind::kGpu && g[w].node == g[v].node) {
      gpu.peers.emplace_back(w, g[*e].id);
    } else if (g[w].kind == VertexKind::kNvSwitch) {
      if (gpu.nvswitch != kNoVertex) return false;
      gpu.nvswitch = w;
      gpu.to_nvswitch = g[*e].id;
    } else if (g[w].kind == VertexKind::kNic) {
      Index::Nic nic;
      if (!index_nic(g, v, *e, nic)) return false;
      gpu.nics.push_back(nic);
    } else {
      return false;
    }
  }
  bool from_nvswitch = gpu.nvswitch == kNoVertex;
  for (auto [e, end] = boost::in_edges(v, g); e != end; ++e) {
    if (edge_source(g, *e) == gpu.nvswitch) {
      gpu.from_nvswitch = g[*e].id;
      from_nvswitch = true;
    }
  }
  return from_nvswitch;
}

// Switch v's up-links (all into one parent group) and its down-links to switches, sorted by
// vertex and by group; false when a link skips a tier or climbs into two groups.
bool index_switch(const Graph& g, VertexId v, Index& idx) {
  Index::Switch& s = idx.switches[static_cast<std::size_t>(idx.slot[v])];
  for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
    const VertexId w = edge_target(g, *e);
    if (g[w].kind == VertexKind::kNic && s.tier == 0) continue;
    if (g[w].kind != VertexKind::kSwitch) return false;
    if (g[w].tier == s.tier + 1) {
      s.up.push_back(g[*e].id);
      int32_t& parent = idx.parent_group[s.tier][s.group];
      if (parent != -1 && parent != g[w].group) return false;
      parent = g[w].group;
    } else if (g[w].tier == s.tier - 1) {
      s.down.emplace_back(w, g[*e].id);
    } else {
      return false;
    }
  }
  std::sort(s.down.begin(), s.down.end());
  s.by_group = s.down;
  const auto group_of = [&](const std::pair<VertexId, LinkId>& e) { return g[e.first].group; };
  std::stable_sort(s.by_group.begin(), s.by_group.end(),
                   [&](const auto& a, const auto& b) { return group_of(a) < group_of(b); });
  for (uint32_t i = 0; i < s.by_group.size(); ++i) {
    if (i == 0 || group_of(s.by_group[i]) != group_of(s.by_group[i - 1]))
      s.group_begin.emplace_back(group_of(s.by_group[i]), i);
  }
  return true;
}

// Up/down routing is only shortest and complete if every up-link has its down-link back, every
// leaf reaches every switch of its parent group and every switch above reaches each child group
// below its own group: then any switch a path climbs to can descend to the destination. Above
// the leaves a switch may reach only some switches of its parent group (a plane of a grown fat
// tree's core).
bool up_down_complete(const Topology& topology, const Index& idx) {
  const Graph& g = topology.graph();
  std::vector<std::vector<int32_t>> children(idx.members.size());  // [tier][group] -> count
  for (std::size_t t = 0; t + 1 < idx.members.size(); ++t) {
    children[t + 1].assign(idx.members[t + 1].size(), 0);
    for (const int32_t parent : idx.parent_group[t])
      if (parent >= 0) ++children[t + 1][static_cast<std::size_t>(parent)];
  }
  std::vector<int32_t> reached;
  for (VertexId v = 0; v < topology.num_vertices(); ++v) {
    if (g[v].kind != VertexKind::kSwitch) continue;
    const Index::Switch& s = idx.sw(v);
    for (LinkId up : s.up) {
      const auto& down = idx.sw(topology.link_target(up)).down;
      const auto it = std::lower_bound(down.begin(), down.end(), std::make_pair(v, LinkId{0}));
      if (it == down.end() || it->first != v) return false;
    }
    if (s.tier == 0) {
      const auto parent = idx.parent_group[0][static_cast<std::size_t>(s.group)];
      if (!s.up.empty() && s.up.size() != idx.members[1][static_cast<std::size_t>(parent)].size())
        return false;
      continue;
    }
    reached.clear();
    for (const auto& [w, link] : s.down) reached.push_back(g[w].group);
    std::sort(reached.begin(), reached.end());
    const auto distinct = std::unique(reached.begin(), reached.end()) - reached.begin();
    if (distinct != children[static_cast<std::size_t>(s.tier)][static_cast<std::size_t>(s.group)])
      return false;
  }
  return true;
}

// Returns null when `topology` is not a well-formed tiered graph.
std::shared_ptr<const Index> build_index(const Topology& topology) {
  const Graph& g = topology.graph();
  const std::size_t n = topology.num_vertices();
  if (n == 0) return nullptr;
  auto idx = std::make_shared<Index>();
  if (!index_vertices(g, n, *idx)) return nullptr;
  for (VertexId v = 0; v < n; ++v) {
    if (g[v].kind != VertexKind::kGpu) continue;
    if (!index_gpu(g, v, idx->gpus[static_cast<std::size_t>(idx->slot[v])])) return nullptr;
  }
  idx->parent_group.resize(idx->members.size());
  for (std::size_t t = 0; t < idx->members.size(); ++t) {
    idx->parent_group[t].assign(idx->members[t].size(), -1);
  }
  for (VertexId v = 0; v < n; ++v) {
    if (g[v].kind == VertexKind::kSwitch && !index_switch(g, v, *idx)) return nullptr;
  }
  if (!up_down_complete(topology, *idx)) return nullptr;
  return idx;
}

// Lowest tier holding a switch above both leaves (0: the same leaf), or -1 if none; fills
// `dst_groups[t]` with the tier-t group above `dst_leaf` for 1 <= t < the returned tier.
int common_tier(const Index& idx, VertexId src_leaf, VertexId dst_leaf,
                std::array<int32_t, kMaxTiers>& dst_groups) {
  if (src_leaf == dst_leaf) return 0;
  int32_t a = idx.sw(src_leaf).group;
  int32_t b = idx.sw(dst_leaf).group;
  for (std::size_t t = 0; t + 1 < idx.parent_group.size(); ++t) {
    a = idx.parent_group[t][a];
    b = idx.parent_group[t][b];
    if (a < 0 || b < 0) return -1;
    dst_groups[t + 1] = b;
    if (a == b) return static_cast<int>(t + 1);
  }
  return -1;
}

// The path from `src_leaf` up `top` tiers and down to `dst_leaf`: at each switch the candidate
// the hash picks or, with a load function, the least-loaded one (choose).
template <typename Hash>
void tiered_path(const Index& idx, const Topology& topology, VertexId src_leaf, VertexId dst_leaf,
                 const std::array<int32_t, kMaxTiers>& groups, int top, Hash hash,
                 const Routing::LinkLoad* load, Route& route) {
  VertexId v = src_leaf;
  for (int t = 0; t < top; ++t) {
    const auto& up = idx.sw(v).up;
    const LinkId chosen =
        up[choose(up.size(), hash(v), load, [&](std::size_t c) { return (*load)(up[c]); })];
    route.links.push_back(chosen);
    v = topology.link_target(chosen);
  }
  for (int t = top - 1; t >= 0; --t) {
    const auto& down = idx.sw(v).down;
    if (t == 0) {
      const auto it =
          std::lower_bound(down.begin(), down.end(), std::make_pair(dst_leaf, LinkId{0}));
      route.links.push_back(it->second);
      v = dst_leaf;
      continue;
    }
    // The switches of the destination's tier-t group that this one has a cable to; with every
    // switch of a group cabled to every one of its parent group, as many as the group holds.
    const auto candidates = idx.down_into(idx.sw(v), groups[t]);
    const auto& [next, link] =
        candidates[choose(candidates.size(), hash(v), load,
                          [&](std::size_t c) { return (*load)(candidates[c].second); })];
    route.links.push_back(link);
    v = next;
  }
}

}  // namespace

Routing::Routing(const Topology& topology) : topology_(topology), tiered_(build_index(topology)) {}

const Route& Routing::route(VertexId src, VertexId dst) {
  const uint64_t key = static_cast<uint64_t>(src) << 32 | dst;
  if (slots_.empty()) grow_cache();
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = mix_hash(key) & mask;; i = (i + 1) & mask) {
    Slot& slot = slots_[i];
    if (slot.key == key) return *slot.route;
    if (slot.key != kEmptyKey) continue;
    const Route& fresh = routes_.emplace_back(compute(src, dst, Choice{}));
    slot = {key, &fresh};
    if (2 * routes_.size() > slots_.size()) grow_cache();
    return fresh;
  }
}

void Routing::grow_cache() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(std::max<std::size_t>(64, 2 * old.size()), Slot{});
  const std::size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.key == kEmptyKey) continue;
    std::size_t i = mix_hash(slot.key) & mask;
    while (slots_[i].key != kEmptyKey) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

Route Routing::path(VertexId src, VertexId dst, uint64_t salt, const LinkLoad* load) const {
  return compute(src, dst, Choice{salt, load});
}

void Routing::path(VertexId src, VertexId dst, uint64_t salt, const LinkLoad* load,
                   Route& out) const {
  compute(src, dst, Choice{salt, load}, out);
}

Route Routing::compute(VertexId src, VertexId dst, const Choice& choice) const {
  Route route;
  compute(src, dst, choice, route);
  return route;
}

void Routing::path_links(VertexId src, VertexId dst, uint64_t salt, Route& out) const {
  compute_links(src, dst, Choice{salt, nullptr}, out);
}

void Routing::compute_links(VertexId src, VertexId dst, const Choice& choice, Route& route) const {
  route.links.clear();
  route.latency = Time{};
  route.bottleneck = Bandwidth{};
  route.link_class = LinkClass::kNvlink;
  if (src == dst) return;
  if (!compute_tiered(src, dst, choice, route)) compute_bfs(src, dst, choice, route);
}

void Routing::compute(VertexId src, VertexId dst, const Choice& choice, Route& route) const {
  compute_links(src, dst, choice, route);
  double bottleneck = std::numeric_limits<double>::infinity();
  for (LinkId id : route.links) {
    const LinkInfo& link = topology_.link(id);
    route.latency += link.latency;
    bottleneck = std::min(bottleneck, link.bandwidth.in_bytes_per_s());
    route.link_class = std::max(route.link_class, link.link_class);
  }
  route.bottleneck = Bandwidth::bytes_per_s(bottleneck);
}

bool Routing::compute_tiered(VertexId src, VertexId dst, const Choice& choice, Route& route) const {
  if (!tiered_) return false;
  const Index& idx = *tiered_;
  const Graph& g = topology_.graph();
  if (g[src].kind != VertexKind::kGpu || g[dst].kind != VertexKind::kGpu) return false;
  const Index::Gpu& a = idx.gpus[static_cast<std::size_t>(idx.slot[src])];
  const Index::Gpu& b = idx.gpus[static_cast<std::size_t>(idx.slot[dst])];
  if (a.nvswitch != kNoVertex && a.nvswitch == b.nvswitch) {
    route.links = {a.to_nvswitch, b.from_nvswitch};
    return true;
  }
  for (const auto& [peer, link] : a.peers) {
    if (peer != dst) continue;
    route.links = {link};
    return true;
  }
  // With several NICs per GPU, only the NIC pairs that meet lowest are shortest; hash among them.
  // Counted, then found again in a second pass, so that this per-message path needs no list.
  std::array<int32_t, kMaxTiers> groups{};
  int best = std::numeric_limits<int>::max();
  std::size_t num_ties = 0;
  for (std::size_t i = 0; i < a.nics.size(); ++i) {
    for (std::size_t j = 0; j < b.nics.size(); ++j) {
      const int k = common_tier(idx, a.nics[i].leaf, b.nics[j].leaf, groups);
      if (k < 0 || k > best) continue;
      if (k < best) {
        best = k;
        num_ties = 0;
      }
      ++num_ties;
    }
  }
  if (num_ties == 0) return false;
  std::size_t pick = hop_hash(src, dst, src, choice.salt) % num_ties;
  const Index::Nic* out_nic = nullptr;
  const Index::Nic* in_nic = nullptr;
  for (std::size_t i = 0; i < a.nics.size() && out_nic == nullptr; ++i) {
    for (std::size_t j = 0; j < b.nics.size(); ++j) {
      if (common_tier(idx, a.nics[i].leaf, b.nics[j].leaf, groups) != best || pick-- > 0) continue;
      out_nic = &a.nics[i];
      in_nic = &b.nics[j];
      break;
    }
  }
  const Index::Nic& out = *out_nic;
  const Index::Nic& in = *in_nic;
  common_tier(idx, out.leaf, in.leaf, groups);  // the groups on the way down to this pair's leaf
  route.links.reserve(4 + 2 * static_cast<std::size_t>(best));
  route.links.push_back(out.gpu_to_nic);
  route.links.push_back(out.nic_to_leaf);
  tiered_path(
      idx, topology_, out.leaf, in.leaf, groups, best,
      [&](VertexId v) { return hop_hash(src, dst, v, choice.salt); }, choice.load, route);
  route.links.push_back(in.leaf_to_nic);
  route.links.push_back(in.nic_to_gpu);
  return true;
}

void Routing::compute_bfs(VertexId src, VertexId dst, const Choice& choice, Route& route) const {
  const Graph& g = topology_.graph();
  constexpr uint32_t kUnreached = std::numeric_limits<uint32_t>::max();
  // Hop distance of every vertex to dst, over reversed links; GPUs other than the endpoints
  // do not relay.
  std::vector<uint32_t> dist(boost::num_vertices(g), kUnreached);
  std::deque<VertexId> frontier{dst};
  dist[dst] = 0;
  while (!frontier.empty() && dist[src] == kUnreached) {
    const VertexId v = frontier.front();
    frontier.pop_front();
    if (v != dst && g[v].kind == VertexKind::kGpu) continue;
    for (auto [e, end] = boost::in_edges(v, g); e != end; ++e) {
      const auto u = static_cast<VertexId>(boost::source(*e, g));
      if (dist[u] != kUnreached) continue;
      dist[u] = dist[v] + 1;
      frontier.push_back(u);
    }
  }
  if (dist[src] == kUnreached) {
    throw std::runtime_error("no route from vertex " + std::to_string(src) + " to vertex " +
                             std::to_string(dst));
  }
  std::vector<LinkId> candidates;
  for (VertexId v = src; v != dst;) {
    candidates.clear();
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
      const auto w = static_cast<VertexId>(boost::target(*e, g));
      if (dist[w] + 1 == dist[v] && (w == dst || g[w].kind != VertexKind::kGpu)) {
        candidates.push_back(g[*e].id);
      }
    }
    const LinkId chosen =
        candidates[choose(candidates.size(), hop_hash(src, dst, v, choice.salt), choice.load,
                          [&](std::size_t c) { return (*choice.load)(candidates[c]); })];
    route.links.push_back(chosen);
    v = topology_.link_target(chosen);
  }
}

SpreadPaths spread_paths(Routing& routing, VertexId src, VertexId dst, int32_t flows) {
  SpreadPaths out;
  const Route& route = routing.route(src, dst);
  out.latency = route.latency;
  std::vector<LinkId> through(route.links);
  Route other;
  for (int32_t k = 1; k < flows; ++k) {
    routing.path(src, dst, static_cast<uint64_t>(k), nullptr, other);
    out.latency = std::max(out.latency, other.latency);  // the last byte takes the slowest path
    through.insert(through.end(), other.links.begin(), other.links.end());
  }
  // Count the paths through each link; sorted by link id, so the order is deterministic.
  std::sort(through.begin(), through.end());
  for (std::size_t i = 0; i < through.size();) {
    std::size_t j = i;
    while (j < through.size() && through[j] == through[i]) ++j;
    out.links.push_back(through[i]);
    out.weights.push_back(static_cast<double>(j - i) / std::max(flows, 1));
    i = j;
  }
  return out;
}

}  // namespace cs::net
