#include "sim/workload/layout.h"

#include <array>
#include <stdexcept>

namespace cs::workload {

Layout::Layout(const DimSizes& sizes, int32_t expert_tp, bool pipeline_outermost)
    : size_(sizes), expert_tp_(expert_tp) {
  for (const int32_t s : size_)
    if (s < 1) throw std::invalid_argument("parallel sizes must be >= 1");
  const std::array<Dim, 4> order = pipeline_outermost
                                       ? std::array{Dim::kTp, Dim::kCp, Dim::kDp, Dim::kPp}
                                       : std::array{Dim::kTp, Dim::kCp, Dim::kPp, Dim::kDp};
  int64_t stride = 1;
  for (const Dim d : order) {
    const auto i = static_cast<std::size_t>(d);
    stride_[i] = static_cast<int32_t>(stride);
    stride *= size_[i];
    if (stride > (int64_t{1} << 30)) throw std::invalid_argument("layout is too large");
  }
  world_ = static_cast<int32_t>(stride);
  const int64_t stage = int64_t{size(Dim::kTp)} * size(Dim::kCp) * size(Dim::kDp);
  if (expert_tp_ < 1 || int64_t{expert_tp_} * size(Dim::kEp) * size(Dim::kEdp) != stage)
    throw std::invalid_argument("expert TP x EP x EDP must equal TP x CP x DP");
  stride_[static_cast<int>(Dim::kEp)] = expert_tp_;
  stride_[static_cast<int>(Dim::kEdp)] = expert_tp_ * size(Dim::kEp);
}

int32_t Layout::stage_index(int32_t rank) const {
  return coord(rank, Dim::kTp) +
         size(Dim::kTp) * (coord(rank, Dim::kCp) + size(Dim::kCp) * coord(rank, Dim::kDp));
}

int32_t Layout::rank_of_stage_index(int32_t rank, int32_t index) const {
  const int32_t tp = index % size(Dim::kTp);
  const int32_t cp = (index / size(Dim::kTp)) % size(Dim::kCp);
  const int32_t dp = index / (size(Dim::kTp) * size(Dim::kCp));
  return tp + cp * stride(Dim::kCp) + coord(rank, Dim::kPp) * stride(Dim::kPp) +
         dp * stride(Dim::kDp);
}

int32_t Layout::group_id(int32_t rank, Dim d) const {
  // Drop the d coordinate: the places below it keep theirs, those above shift down.
  const int32_t s = stride(d);
  if (info(d).expert) {
    const int32_t index = stage_index(rank);
    const int32_t per_stage = world_ / size(Dim::kPp) / size(d);
    return (index % s) + (index / (s * size(d))) * s + coord(rank, Dim::kPp) * per_stage;
  }
  return (rank % s) + (rank / (s * size(d))) * s;
}

std::vector<int32_t> Layout::group_members(int32_t rank, Dim d) const {
  const int32_t s = stride(d);
  std::vector<int32_t> members(static_cast<std::size_t>(size(d)));
  if (info(d).expert) {
    const int32_t base = stage_index(rank) - coord(rank, d) * s;
    for (int32_t i = 0; i < size(d); ++i) members[i] = rank_of_stage_index(rank, base + i * s);
    return members;
  }
  const int32_t base = rank - coord(rank, d) * s;
  for (int32_t i = 0; i < size(d); ++i) members[i] = base + i * s;
  return members;
}

}  // namespace cs::workload
