// Routes between vertices: shortest paths, ECMP over equal-cost next hops by deterministic hash.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/core/units.h"
#include "sim/net/topology.h"

namespace cs::net {

struct Route {
  std::vector<LinkId> links;  // in order from source to destination; empty for src == dst
  Time latency;               // sum of the links' latencies
  Bandwidth bottleneck;       // slowest link's bandwidth (unset for an empty route)
  LinkClass link_class = LinkClass::kNvlink;  // kNetwork if any link is, else kPcie if any, ...
};

// Computes and caches one route per (source, destination) pair. Among equal-cost next hops the
// choice is a hash of (source, destination, hop), so the same pair always takes the same path
// and different pairs spread over the equal-cost links. GPUs never forward traffic.
class Routing {
 public:
  explicit Routing(const Topology& topology) : topology_(topology) {}

  // Throws std::runtime_error if no path exists. The reference stays valid while `this` lives.
  const Route& route(VertexId src, VertexId dst);
  std::size_t cached_routes() const { return cache_.size(); }

 private:
  Route compute(VertexId src, VertexId dst) const;

  const Topology& topology_;
  std::unordered_map<uint64_t, Route> cache_;  // key: src << 32 | dst; node-based, so stable
};

// Deterministic 64-bit mix (splitmix64 finalizer), used for ECMP hashing.
inline uint64_t mix_hash(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace cs::net
