// A chunk's gradient buckets: gradients become ready layer by layer in the backward, and each
// bucket is reduced as soon as it fills (Megatron's overlap_grad_reduce), on the DP stream after
// the op that completed it. Routed experts' gradients fill buckets of their own, reduced over
// their expert-data-parallel group.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/lower/bucket.h"
#include "sim/lower/op_maker.h"
#include "sim/lower/stage_rules.h"
#include "sim/workload/program_builder.h"

namespace cs::lower {

// Dense gradients (every parameter when routed experts have no group of their own): buckets of
// the stack's bucket_params, each reduced over DP (all-reduce without ZeRO or under a stack that
// all-reduces below ZeRO-3, else reduce-scatter) with the stack's copies around it, then summed
// over CP, and under ZeRO-Offload copied (this rank's shard) to the host.
class GradBuckets {
 public:
  // Reductions go to `out`, each after the op of `phase` (the chunk's final backward phase) that
  // completed its bucket.
  GradBuckets(const StageRules& rules, OpMaker& make, const workload::PhaseOps& phase,
              std::vector<workload::GradSync>& out);

  // `params` more gradients are complete after the phase's ops so far.
  void ready(int64_t params);
  // Reduces the last, partly filled bucket.
  void flush();

 private:
  void reduce(int64_t params);
  void reduce_over_dp(int64_t params, Bytes bytes, uint32_t after);
  void sum_over_cp(Bytes bytes, uint32_t after);
  // The stack's rows of `slot` (copies, casts) around a reduction of `params` gradients.
  void stack_rows(clustersim::StackKernel::Slot slot, int64_t params, uint32_t after);

  const StageRules& rules_;
  OpMaker& make_;
  const workload::PhaseOps& phase_;
  std::vector<workload::GradSync>& out_;
  Bucket bucket_;
};

// Routed experts' gradients (EP > 1): buckets of dp_bucket_params of their own, each reduced over
// the expert-data-parallel group (all-reduce without ZeRO, else reduce-scatter).
class ExpertGradBuckets {
 public:
  ExpertGradBuckets(const StageRules& rules, OpMaker& make, const workload::PhaseOps& phase,
                    std::vector<workload::GradSync>& out);

  void ready(int64_t params);
  void flush();

 private:
  void reduce(int64_t params);

  const StageRules& rules_;
  OpMaker& make_;
  const workload::PhaseOps& phase_;
  std::vector<workload::GradSync>& out_;
  Bucket bucket_;
};

}  // namespace cs::lower
