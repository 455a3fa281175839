// Which ranks of a layout the executor simulates, and which ranks each one stands for.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/workload/dims.h"
#include "sim/workload/layout.h"
#include "sim/workload/program.h"

namespace cs::exec {

// Ranks that run the same programs on inputs of the same shape compute alike, so one of them
// can be simulated for all: a tensor-parallel group whose collectives are timed alone (its first
// rank), and data-parallel replicas (replica 0; under skewed expert routing whole
// expert-data-parallel replicas). The ranks it stands for still send their network traffic.
class Folding {
 public:
  // No folding: every rank runs.
  explicit Folding(const workload::Layout& layout) : Folding(layout, false, false, {}) {}
  // Folds tensor parallelism when `fold_tp` (the caller has checked that TP collectives are
  // timed alone) and the TP groups are consecutive ranks; data parallelism when `fold_dp`.
  Folding(const workload::Layout& layout, bool fold_tp, bool fold_dp,
          const std::vector<workload::Program>& programs);

  bool is_simulated(int32_t rank) const;
  // The simulated rank that stands for `rank`.
  int32_t simulated_rank_of(int32_t rank) const;
  // Offsets to the ranks a simulated rank stands for, itself (0) first.
  const std::vector<int32_t>& represented() const { return represented_; }
  // The ranks a simulated rank's collective over `dim` is sent from, as offsets from it: itself
  // (0, first) and the ranks it stands for outside that collective's group.
  const std::vector<int32_t>& copies(workload::Dim dim) const {
    return copies_[static_cast<int>(dim)];
  }
  // The simulated members of a group of `dim`, each of which posts its collectives.
  int32_t posting(workload::Dim dim) const { return posting_[static_cast<int>(dim)]; }
  // Members of `dim` each simulated rank stands for (1: not folded).
  int32_t fold(workload::Dim dim) const { return fold_[static_cast<int>(dim)]; }

 private:
  void fold_data_parallel(const std::vector<workload::Program>& programs);
  void derive_offsets();

  const workload::Layout* layout_;
  std::array<int32_t, workload::kNumDims> fold_{};       // members per simulated rank, by dim
  std::array<int32_t, workload::kNumDims> fold_step_{};  // rank offset between folded copies
  std::array<int32_t, workload::kNumDims> posting_{};
  std::vector<int32_t> represented_ = {0};
  std::array<std::vector<int32_t>, workload::kNumDims> copies_;
};

}  // namespace cs::exec
