#include "sim/net/routing.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

namespace cs::net {

const Route& Routing::route(VertexId src, VertexId dst) {
  const uint64_t key = static_cast<uint64_t>(src) << 32 | dst;
  auto it = cache_.find(key);
  if (it == cache_.end()) it = cache_.emplace(key, compute(src, dst)).first;
  return it->second;
}

Route Routing::compute(VertexId src, VertexId dst) const {
  Route route;
  if (src == dst) return route;
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
  double bottleneck = std::numeric_limits<double>::infinity();
  std::vector<LinkId> candidates;
  for (VertexId v = src; v != dst;) {
    candidates.clear();
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
      const auto w = static_cast<VertexId>(boost::target(*e, g));
      if (dist[w] + 1 == dist[v] && (w == dst || g[w].kind != VertexKind::kGpu)) {
        candidates.push_back(g[*e].id);
      }
    }
    const uint64_t h = mix_hash(static_cast<uint64_t>(src) << 40 ^ static_cast<uint64_t>(dst) << 16 ^ v);
    const LinkId chosen = candidates[h % candidates.size()];
    const LinkInfo& link = topology_.link(chosen);
    route.links.push_back(chosen);
    route.latency += link.latency;
    bottleneck = std::min(bottleneck, link.bandwidth.in_bytes_per_s());
    route.link_class = std::max(route.link_class, link.link_class);
    v = topology_.link_target(chosen);
  }
  route.bottleneck = Bandwidth::bytes_per_s(bottleneck);
  return route;
}

}  // namespace cs::net
