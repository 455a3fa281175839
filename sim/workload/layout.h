// Rank numbering of a layout over the parallel dimensions (dims.h order) and its groups.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/workload/dims.h"

namespace cs::workload {

// Rank r is the GPU with index r in the topology, so that TP groups fill a server's NVLink
// domain first and data-parallel replicas are furthest apart, as Megatron-LM orders them.
//
// The expert dimensions (EP, EDP) number the TP x CP x DP ranks of a pipeline stage again, as
// Megatron-Core's expert RankGenerator ("tp-ep-dp") does: with the stage index
// l = tp + TP·(cp + CP·dp), a rank's expert-TP coordinate is l mod ETP, its EP coordinate
// (l / ETP) mod EP and its EDP coordinate l / (ETP·EP). ETP is 1 or TP (ParallelConfig.etp):
// with ETP = TP an EP group holds one rank of every TP group it meets, and the experts' tensor
// parallelism is the dense TP group's.
class Layout {
 public:
  // sizes[kEdp] must be TP·CP·DP / (expert_tp·EP) (dim_sizes computes it so). With
  // `pipeline_outermost`, ranks are numbered TP, CP, DP, PP (Megatron-Core's order) instead.
  explicit Layout(const DimSizes& sizes, int32_t expert_tp = 1, bool pipeline_outermost = false);
  Layout(int32_t tp, int32_t cp, int32_t pp, int32_t dp)
      : Layout(DimSizes{tp, cp, pp, dp, 1, tp * cp * dp}) {}

  int32_t size(Dim d) const { return size_[static_cast<int>(d)]; }
  int32_t world() const { return world_; }
  const DimSizes& sizes() const { return size_; }
  int32_t expert_tp() const { return expert_tp_; }
  // Whether `d` has groups of its own: the expert dimensions only once experts are split (EP > 1);
  // with EP 1 every expert is on every rank and its gradients are reduced with the dense ones.
  bool uses(Dim d) const { return !info(d).expert || size(Dim::kEp) > 1; }
  int32_t coord(int32_t rank, Dim d) const {
    if (info(d).expert) return (stage_index(rank) / stride_[static_cast<int>(d)]) % size(d);
    return (rank / stride_[static_cast<int>(d)]) % size(d);
  }
  // The rank step between neighbours of `d`; for an expert dimension the step of the stage index.
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
  // tp + TP·(cp + CP·dp): the rank's place among the TP x CP x DP ranks of its stage.
  int32_t stage_index(int32_t rank) const;
  // The rank of stage index `index` on the stage of `rank`.
  int32_t rank_of_stage_index(int32_t rank, int32_t index) const;

  DimSizes size_;
  DimSizes stride_;
  int32_t world_;
  int32_t expert_tp_;
};

}  // namespace cs::workload
