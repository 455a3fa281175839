#include "sim/lower/stage_work.h"

#include "sim/lower/backward_pass.h"
#include "sim/lower/forward_pass.h"
#include "sim/lower/op_maker.h"
#include "sim/lower/optimizer_tail.h"
#include "sim/lower/sharded_pass.h"
#include "sim/lower/stage_layers.h"
#include "sim/lower/stage_rules.h"
#include "sim/workload/memory.h"

namespace cs::lower {

namespace {

// Activations between stages: microbatch x tokens x hidden in bf16, per TP rank (sharded by
// sequence parallelism or, without it, replicated on every TP rank).
Bytes stage_boundary_bytes(const clustersim::RunConfig& config) {
  const auto& par = config.parallel();
  const int64_t tokens = int64_t{par.microbatch_size()} * config.model().seq_length() / par.cp();
  return 2 * tokens * config.model().hidden_size() / (par.sequence_parallel() ? par.tp() : 1);
}

workload::ChunkWork lower_chunk(const StageRules& rules, const StageLayers& layers, OpMaker& make,
                                const ChunkSpan& span, bool split_backward) {
  workload::ChunkWork chunk;
  chunk.activation_bytes = stage_boundary_bytes(rules.config);
  if (rules.sharded) {
    const LayerWork& dense = layers.dense();
    build_sharded_chunk(rules.config, make, {dense.fwd, dense.bwd, dense.wgrad, dense.recompute},
                        span.layers, chunk);
    return chunk;
  }
  build_forward(rules, layers, make, span, chunk);
  build_backward(rules, layers, make, span, split_backward, chunk);
  return chunk;
}

}  // namespace

workload::StageWork build_stage_work(const clustersim::RunConfig& config, int32_t stage,
                                     const compute::KernelCostModel& cost, bool split_backward) {
  const auto& par = config.parallel();
  const StageRules rules(config, cost);
  const StageLayers layers(config, stage, rules.segmented);
  workload::StageWork work;
  OpMaker make(config, cost, work);
  work.grad_sync_after_backward = !par.overlap_grad_reduce() || rules.grad_rule.on_compute_stream;
  work.grad_sync_every_microbatch = workload::reduces_grads_every_microbatch(par);
  work.overlap_pairs = par.dualpipe_overlap();
  for (int32_t c = 0; c < par.virtual_stages(); ++c)
    work.chunks.push_back(
        lower_chunk(rules, layers, make, chunk_span(config, stage, c), split_backward));
  build_optimizer_tail(rules, layers, make, stage, work);
  return work;
}

StageCosts phase_costs(const workload::StageWork& work) {
  StageCosts c;
  auto sum = [](const workload::PhaseOps& phase) {
    double s = 0;
    for (const auto& e : phase.ops)
      if (e.op.kind == workload::OpKind::kCompute) s += e.op.duration.as_seconds();
    return s;
  };
  const auto& chunk = work.chunks.front();
  c.t_f = sum(chunk.forward);
  c.t_b = sum(chunk.backward);
  c.t_w = sum(chunk.weight_grad);
  return c;
}

}  // namespace cs::lower
