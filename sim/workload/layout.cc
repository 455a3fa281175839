#include "sim/workload/layout.h"

#include <stdexcept>

namespace cs::workload {

Layout::Layout(const DimSizes& sizes) : size_(sizes) {
  int64_t stride = 1;
  for (int d = 0; d < kNumDims; ++d) {
    if (size_[d] < 1) throw std::invalid_argument("parallel sizes must be >= 1");
    stride_[d] = static_cast<int32_t>(stride);
    stride *= size_[d];
    if (stride > (int64_t{1} << 30)) throw std::invalid_argument("layout is too large");
  }
  world_ = static_cast<int32_t>(stride);
}

int32_t Layout::group_id(int32_t rank, Dim d) const {
  // Drop the d coordinate: the ranks below it keep their place, those above shift down.
  const int32_t s = stride(d);
  return (rank % s) + (rank / (s * size(d))) * s;
}

std::vector<int32_t> Layout::group_members(int32_t rank, Dim d) const {
  const int32_t s = stride(d);
  const int32_t base = rank - coord(rank, d) * s;
  std::vector<int32_t> members(static_cast<std::size_t>(size(d)));
  for (int32_t i = 0; i < size(d); ++i) members[i] = base + i * s;
  return members;
}

}  // namespace cs::workload
