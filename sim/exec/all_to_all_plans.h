// All-to-all transfers built once and reused: a group sends the same edges every microbatch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/core/units.h"
#include "sim/net/network.h"

namespace cs::exec {

// One all-to-all's transfers, ready to send as a fluid transfer.
struct AllToAllPlan {
  std::shared_ptr<std::vector<net::FluidEdge>> edges =
      std::make_shared<std::vector<net::FluidEdge>>();
  Time latency;  // of the slowest path
  Bytes sent = 0;
  // Busiest endpoint's time at line rate over its time with the wire costs (all_to_all_v.h).
  double line_rate_share = 1;
  // The library's cost for the tokens it routes (ExecutorOptions::deepep_tokens), paid before
  // the transfers.
  Time token_cost;
  // The network's solved rates for these edges, reused while the links carry the same load;
  // null for a plan sent once.
  std::shared_ptr<net::FluidPlanSlot> slot = std::make_shared<net::FluidPlanSlot>();
};

// Plans by (first member, routing row, bytes), kept while they hold at most `max_edges` edges in
// all (about 24 bytes an edge): larger runs rebuild what no longer fits.
class AllToAllPlans {
 public:
  using Key = std::tuple<int32_t, uint32_t, Bytes>;
  static constexpr std::size_t kDefaultMaxEdges = std::size_t{1} << 22;

  explicit AllToAllPlans(std::size_t max_edges = kDefaultMaxEdges) : max_edges_(max_edges) {}

  // The plan kept for `key`, or null.
  const AllToAllPlan* find(const Key& key) const;
  // Keeps `plan` for `key` if it fits; else holds it only until the next store or one_off.
  const AllToAllPlan& store(const Key& key, AllToAllPlan plan);
  // Holds a plan that is sent once, until the next store or one_off.
  const AllToAllPlan& one_off(AllToAllPlan plan);
  std::size_t edges_kept() const { return edges_; }

 private:
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  std::size_t max_edges_;
  std::size_t edges_ = 0;
  std::unordered_map<Key, AllToAllPlan, KeyHash> kept_;
  AllToAllPlan scratch_;
};

}  // namespace cs::exec
