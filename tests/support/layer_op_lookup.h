// Lookups by name and kind over a list of layer ops, shared by the workload tests.
#pragma once

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "sim/workload/layer_ops.h"

namespace cs::testing_support {

inline constexpr workload::Phase kAllPhases[] = {
    workload::Phase::kForward, workload::Phase::kBackward, workload::Phase::kWeightGrad};

// The op named `name`, or nullptr.
inline const workload::LayerOp* find_op(const std::vector<workload::LayerOp>& ops,
                                        std::string_view name) {
  for (const workload::LayerOp& op : ops)
    if (op.name() == name) return &op;
  return nullptr;
}

inline bool has_op(const std::vector<workload::LayerOp>& ops, std::string_view name) {
  return find_op(ops, name) != nullptr;
}

// The op named `name`; a test failure, and an empty op, where there is none.
inline const workload::LayerOp& op_named(const std::vector<workload::LayerOp>& ops,
                                         std::string_view name) {
  if (const workload::LayerOp* op = find_op(ops, name)) return *op;
  ADD_FAILURE() << "no op " << name;
  static const workload::LayerOp none;
  return none;
}

// FLOPs of the compute kernels of `kind` in `ops`.
inline double sum_flops(const std::vector<workload::LayerOp>& ops, compute::KernelKind kind) {
  double f = 0;
  for (const workload::LayerOp& op : ops)
    if (!op.is_comm && op.kernel.kind == kind) f += op.kernel.flops;
  return f;
}

}  // namespace cs::testing_support
