// Routes between vertices: shortest paths, ECMP over equal-cost next hops by deterministic hash.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "sim/core/units.h"
#include "sim/net/topology.h"

namespace cs::net {

namespace detail {
struct TieredIndex;  // defined in routing.cc
}  // namespace detail

struct Route {
  std::vector<LinkId> links;  // in order from source to destination; empty for src == dst
  Time latency;               // sum of the links' latencies
  Bandwidth bottleneck;       // slowest link's bandwidth (unset for an empty route)
  LinkClass link_class = LinkClass::kNvlink;  // kNetwork if any link is, else kPcie if any, ...
};

// Computes and caches one route per (source, destination) pair. Among equal-cost next hops the
// choice is a hash of (source, destination, hop), so the same pair always takes the same path
// and different pairs spread over the equal-cost links. GPUs never forward traffic.
//
// Graphs from the tiered builder (every vertex has VertexInfo::group set) route GPU pairs by
// up/down routing on their structure in O(path length): up from the leaf to the lowest tier that
// joins both ends, then down. Other graphs and other endpoints take a breadth-first search,
// O(graph) per new pair. Both give shortest paths.
class Routing {
 public:
  // Current load of a link (active flows on it), for adaptive choices.
  using LinkLoad = std::function<uint32_t(LinkId)>;

  // Indexes a tiered graph once, O(graph); `topology` must outlive `this`.
  explicit Routing(const Topology& topology);

  // Throws std::runtime_error if no path exists. The reference stays valid while `this` lives.
  const Route& route(VertexId src, VertexId dst);
  // One of the shortest paths, not cached. `salt` 0 gives route(src, dst)'s path; another salt
  // hashes every equal-cost choice afresh (one flow of a multi-flow connection). With `load`,
  // each choice takes the least-loaded candidate instead, ties broken by the salted hash.
  Route path(VertexId src, VertexId dst, uint64_t salt, const LinkLoad* load = nullptr) const;
  // The same into `out`, whose link list keeps its capacity: no allocation per message.
  void path(VertexId src, VertexId dst, uint64_t salt, const LinkLoad* load, Route& out) const;
  // Only the path's links into out.links (its latency, bottleneck and class left unset), for
  // callers that hash millions of paths and read the links alone.
  void path_links(VertexId src, VertexId dst, uint64_t salt, Route& out) const;
  std::size_t cached_routes() const { return routes_.size(); }
  const Topology& topology() const { return topology_; }
  // Whether GPU-to-GPU routes take the O(path length) tiered fast path.
  bool uses_tiered_routing() const { return tiered_ != nullptr; }

 private:
  // Salt and load of one path computation: how each equal-cost choice is made.
  struct Choice {
    uint64_t salt = 0;
    const LinkLoad* load = nullptr;
  };
  Route compute(VertexId src, VertexId dst, const Choice& choice) const;
  void compute(VertexId src, VertexId dst, const Choice& choice, Route& route) const;
  void compute_links(VertexId src, VertexId dst, const Choice& choice, Route& route) const;
  void compute_bfs(VertexId src, VertexId dst, const Choice& choice, Route& route) const;
  bool compute_tiered(VertexId src, VertexId dst, const Choice& choice, Route& route) const;

  // One slot of the route cache: an open-addressing table (linear probing, at most half full)
  // whose probe reads one cache line, where a node-based map chases three pointers; every
  // message looks its route up, so this lookup is on the simulator's hot path.
  struct Slot {
    uint64_t key = kEmptyKey;  // src << 32 | dst
    const Route* route = nullptr;
  };
  static constexpr uint64_t kEmptyKey = ~uint64_t{0};  // no vertex has id 2^32 - 1
  void grow_cache();

  const Topology& topology_;
  // Null when the graph has no tiered structure.
  std::shared_ptr<const detail::TieredIndex> tiered_;
  std::deque<Route> routes_;  // the cached routes; a deque, so references stay valid
  std::vector<Slot> slots_;   // size a power of two
};

// The links that a message split evenly over `flows` hashed paths loads (multi-flow ECMP), with
// the share of its bytes each carries, in link order, and the latency of its slowest path. Path 0
// is route(src, dst)'s; the others hash every equal-cost choice afresh (salts 1 to flows - 1).
struct SpreadPaths {
  std::vector<LinkId> links;
  std::vector<double> weights;
  Time latency;
};
SpreadPaths spread_paths(Routing& routing, VertexId src, VertexId dst, int32_t flows);

// Deterministic 64-bit mix (splitmix64 finalizer), used for ECMP hashing.
inline uint64_t mix_hash(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace cs::net
