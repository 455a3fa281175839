// Where a mixture-of-experts layer's tokens go: expert shares from the routing distribution,
// capacity dropping, and each expert-parallel rank's load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/config.pb.h"

namespace cs::workload {

// Whether layer `layer` (model order, 0-based) has routed experts: every layer of a MoE model
// after its first_k_dense dense ones.
bool is_moe_layer(const clustersim::ModelConfig& model, int32_t layer);

// One MoE layer's routing, as shares of its token-expert assignments (tokens x top_k).
struct ExpertLoad {
  std::vector<double> routed;  // per expert, before capacity; sums to 1
  std::vector<double> kept;    // per expert, after capacity (dropless: = routed)
  double dropped = 0;          // 1 - sum(kept)
  // Per expert-parallel rank (experts split in contiguous blocks, as Megatron-Core places
  // them): the kept share of its experts.
  std::vector<double> rank_share;
  // Expert tokens max / mean (kept), over experts.
  double max_over_mean() const;
};

// The routing distribution of every MoE layer of a model, read once (a histogram file is read
// here). Throws ConfigError naming the file and line for an unreadable or malformed histogram.
class RoutingTable {
 public:
  RoutingTable(const clustersim::RunConfig& config);
  // Layer `layer` (model order); its shares are drawn from the distribution with a generator
  // seeded by (seed, layer), so every run gives the same loads.
  ExpertLoad load(int32_t layer) const;

 private:
  std::vector<double> shares(int32_t layer) const;

  clustersim::MoeConfig moe_;
  int32_t ep_ = 1;
  int32_t num_layers_ = 0;
  std::vector<std::vector<double>> histogram_;  // rows of the histogram file
};

}  // namespace cs::workload
