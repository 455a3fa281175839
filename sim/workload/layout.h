// Rank numbering of a layout over the parallel dimensions (dims.h order) and its groups.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/workload/dims.h"

namespace cs::workload {

// Rank r is the GPU with index r in the topology, so that TP groups fill a server's NVLink
// domain first and data-parallel replicas are furthest apart, as Megatron-LM orders them.
class Layout {
 public:
  explicit Layout(const DimSizes& sizes);
  Layout(int32_t tp, int32_t cp, int32_t pp, int32_t dp) : Layout(DimSizes{tp, cp, pp, dp}) {}

  int32_t size(Dim d) const { return size_[static_cast<int>(d)]; }
  int32_t world() const { return world_; }
  const DimSizes& sizes() const { return size_; }
  int32_t coord(int32_t rank, Dim d) const {
    return (rank / stride_[static_cast<int>(d)]) % size(d);
  }
  int32_t stride(Dim d) const { return stride_[static_cast<int>(d)]; }

  // Groups along `d`: ranks that differ only in their `d` coordinate. Numbered 0..world/size-1.
  int32_t group_id(int32_t rank, Dim d) const;
  int32_t num_groups(Dim d) const { return world_ / size(d); }
  // Members of the group of `rank` along `d`, ordered by their `d` coordinate.
  std::vector<int32_t> group_members(int32_t rank, Dim d) const;
  // The rank that is `rank` with its pipeline coordinate replaced by `stage`.
  int32_t with_stage(int32_t rank, int32_t stage) const {
    return rank + (stage - coord(rank, Dim::kPp)) * stride(Dim::kPp);
  }

 private:
  DimSizes size_;
  DimSizes stride_;
  int32_t world_;
};

}  // namespace cs::workload
