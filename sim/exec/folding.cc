#include "sim/exec/folding.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

namespace cs::exec {

using workload::Dim;

namespace {

// Whether every expert-parallel rank runs alike: each EP-varying compute row holds one duration
// and each all-to-all routes an equal share to every member.
bool expert_ranks_alike(const std::vector<workload::Program>& programs) {
  auto flat = [](const auto& row) {
    return std::adjacent_find(row.begin(), row.end(), std::not_equal_to<>()) == row.end();
  };
  for (const auto& program : programs) {
    for (const auto& row : program.rank_times)
      if (!flat(row)) return false;
    for (const auto& v : program.all_to_alls)
      if (!flat(v.share)) return false;
  }
  return true;
}

}  // namespace

Folding::Folding(const workload::Layout& layout, bool fold_tp, bool fold_dp,
                 const std::vector<workload::Program>& programs)
    : layout_(&layout) {
  fold_.fill(1);
  for (int d = 0; d < workload::kNumDims; ++d) fold_step_[d] = layout.stride(static_cast<Dim>(d));
  if (fold_tp && layout.size(Dim::kTp) > 1 && layout.stride(Dim::kTp) == 1)
    fold_[static_cast<int>(Dim::kTp)] = layout.size(Dim::kTp);
  if (fold_dp) fold_data_parallel(programs);
  derive_offsets();
}

void Folding::fold_data_parallel(const std::vector<workload::Program>& programs) {
  if (layout_->size(Dim::kEp) == 1 || expert_ranks_alike(programs)) {
    // Under balanced routing every EP rank computes alike and every server's NICs carry the
    // same all-to-all load, so an EP group's all-to-all is sent whole by its one simulated
    // member (the executor builds every member's edges from one routing row).
    fold_[static_cast<int>(Dim::kDp)] = layout_->size(Dim::kDp);
    return;
  }
  // Expert-parallel groups span data-parallel replicas, so only whole expert-data-parallel
  // replicas fold: every one runs the same programs with the same routing. Replica c is every
  // rank's image c x (ETP x EP) places further in its stage, a constant rank offset when those
  // places are whole data-parallel coordinates.
  const int32_t places = layout_->expert_tp() * layout_->size(Dim::kEp);
  const int32_t per_dp = layout_->size(Dim::kTp) * layout_->size(Dim::kCp);
  const int edp = static_cast<int>(Dim::kEdp);
  if (places % per_dp == 0 && layout_->size(Dim::kEdp) > 1) {
    fold_[edp] = layout_->size(Dim::kEdp);
    fold_step_[edp] = places / per_dp * layout_->stride(Dim::kDp);
  }
}

void Folding::derive_offsets() {
  // Every combination of the folded dimensions' coordinates, as a rank offset.
  for (int d = 0; d < workload::kNumDims; ++d) {
    std::vector<int32_t> grown;
    for (int32_t c = 0; c < fold_[d]; ++c)
      for (const int32_t offset : represented_) grown.push_back(offset + c * fold_step_[d]);
    represented_ = std::move(grown);
  }
  // A collective of dimension d is sent once per distinct group among the represented ranks (its
  // own group spans the rest); a group waits for its simulated members.
  for (int d = 0; d < workload::kNumDims; ++d) {
    const auto dim = static_cast<Dim>(d);
    std::unordered_set<int32_t> seen;
    for (const int32_t offset : represented_)
      if (seen.insert(layout_->group_id(offset, dim)).second) copies_[d].push_back(offset);
    if (!layout_->uses(dim)) continue;
    for (const int32_t m : layout_->group_members(0, dim)) posting_[d] += is_simulated(m) ? 1 : 0;
  }
}

bool Folding::is_simulated(int32_t rank) const {
  for (int d = 0; d < workload::kNumDims; ++d)
    if (fold_[d] > 1 && layout_->coord(rank, static_cast<Dim>(d)) != 0) return false;
  return true;
}

int32_t Folding::simulated_rank_of(int32_t rank) const {
  int32_t simulated = rank;
  for (int d = 0; d < workload::kNumDims; ++d)
    if (fold_[d] > 1) simulated -= layout_->coord(rank, static_cast<Dim>(d)) * fold_step_[d];
  return simulated;
}

}  // namespace cs::exec
