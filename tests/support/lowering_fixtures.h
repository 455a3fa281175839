// Shared fixtures for tests of lowering (sim/lower/): one stage's rules with an op maker and a
// phase to fill, hand-made layer ops, a stage's work, and counts over a phase's ops.
#pragma once

#include <string>
#include <vector>

#include "proto/config.pb.h"
#include "sim/compute/gpu_profile.h"
#include "sim/compute/kernel.h"
#include "sim/compute/kernel_cost.h"
#include "sim/config/run_config.h"
#include "sim/lower/op_maker.h"
#include "sim/lower/stage_rules.h"
#include "sim/lower/stage_work.h"
#include "sim/workload/program_builder.h"
#include "sim/workload/stack.h"
#include "tests/support/run_fixtures.h"

namespace cs::testing_support {

// What a lowering part needs, for `config` on H100s: the stage's rules, an op maker writing into
// `work`, and a phase whose ops the part's results point at. Built in place (members refer to
// each other).
struct StageLowering {
  explicit StageLowering(clustersim::RunConfig c)
      : config(std::move(c)),
        cost(compute::load_gpu_profile("h100"), compute::cost_options(config)),
        rules(config, cost),
        make(config, cost, work) {}
  StageLowering(const StageLowering&) = delete;

  // Appends one compute op to `phase` (the last op of a layer, say); returns its index.
  uint32_t add_op() {
    phase.add(make.kernel(kernel_op("test_kernel"), workload::OpClass::kBackward));
    return static_cast<uint32_t>(phase.ops.size() - 1);
  }
  const std::string& label(const workload::Op& op) const { return work.labels[op.label]; }

  // A GEMM layer op named `name` (a static string).
  static workload::LayerOp kernel_op(std::string_view name) {
    workload::LayerOp op;
    op.kernel = compute::gemm(name, 1024, 1024, 1024, 2);
    return op;
  }

  clustersim::RunConfig config;
  compute::KernelCostModel cost;
  lower::StageRules rules;
  workload::StageWork work;
  lower::OpMaker make;
  workload::PhaseOps phase;
};

// Llama 3 8B's layers (4 of 2,048 tokens) as FSDP and DeepSpeed run them: TP 1, ZeRO `zero` over
// the 8 GPUs of one server, two microbatches; the stack resolved.
inline clustersim::RunConfig data_parallel(const std::string& stack,
                                           std::vector<std::string> extra = {}, int zero = 3) {
  std::vector<std::string> o = {"parallel.tp=1",
                                "parallel.dp=8",
                                "parallel.zero_stage=" + std::to_string(zero),
                                "parallel.sequence_parallel=false",
                                "parallel.global_batch_size=16",
                                "software_stack=" + stack};
  o.insert(o.end(), extra.begin(), extra.end());
  clustersim::RunConfig c = small_llama(o);
  workload::resolve_stack(c, "test");
  return c;
}

// Stage `stage`'s work under `c` on H100s.
inline workload::StageWork stage_work_of(const clustersim::RunConfig& c, int32_t stage = 0) {
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"), compute::cost_options(c));
  return lower::build_stage_work(c, stage, cost, false);
}

// How many ops of `phase` are all-gathers.
inline int gathers(const workload::PhaseOps& phase) {
  int n = 0;
  for (const auto& e : phase.ops)
    n += e.op.kind == workload::OpKind::kCollective && e.op.coll_op == coll::Op::kAllGather;
  return n;
}
// How many ops of `phase` are gradient reductions issued inside it.
inline int reductions(const workload::PhaseOps& phase) {
  int n = 0;
  for (const auto& e : phase.ops) n += e.grad_reduction;
  return n;
}
// Phase-op indices of the all-gathers, in order.
inline std::vector<int32_t> gather_indices(const workload::PhaseOps& phase) {
  std::vector<int32_t> out;
  for (std::size_t i = 0; i < phase.ops.size(); ++i)
    if (phase.ops[i].op.kind == workload::OpKind::kCollective &&
        phase.ops[i].op.coll_op == coll::Op::kAllGather)
      out.push_back(static_cast<int32_t>(i));
  return out;
}

}  // namespace cs::testing_support
