#include "sim/plan/step_estimate.h"

#include <algorithm>
#include <set>

#include "sim/compute/gpu_profile.h"
#include "sim/compute/kernel_cost.h"
#include "sim/lower/stage_work.h"
#include "sim/plan/collective_cost.h"
#include "sim/plan/stream_replay.h"
#include "sim/workload/model_math.h"
#include "sim/workload/schedules/registry.h"

namespace cs::plan {

namespace {

using clustersim::RunConfig;

// The seconds of an op of the data-parallel stream (a gather, a reduction, an offload copy);
// `every_stage` as CollectiveCost::seconds has it.
double dp_op_seconds(const workload::StageWork& work, const workload::Op& op, CollectiveCost& comm,
                     bool every_stage) {
  return op.kind == workload::OpKind::kCollective ? comm.seconds(op, every_stage)
                                                  : compute_seconds(work, op);
}

// The compute seconds of a phase's compute-stream kernels: the T_F, T_B, T_W of the bubble.
double compute_stream_seconds(const workload::StageWork& work, const workload::PhaseOps& phase) {
  double s = 0;
  for (const auto& e : phase.ops)
    if (e.op.kind == workload::OpKind::kCompute && e.op.stream == workload::Stream::kCompute)
      s += compute_seconds(work, e.op);
  return s;
}

// A chunk visit's compute seconds per pass, the seconds of its forward and its backward (with
// weight gradients) for one microbatch in the steady state (the second of two visits replayed),
// and a pipeline slot: both; each the mean over the stage's chunks, since a stage holding the
// embedding or the output layer and loss in one of its chunks does that work once per
// microbatch.
struct SlotTimes {
  double forward = 0, backward = 0, weight_grad = 0;
  double forward_pass = 0, backward_pass = 0, per_slot = 0;
};

SlotTimes slot_times(const clustersim::ParallelConfig& p, const workload::StageWork& work,
                     CollectiveCost& comm) {
  // DualPipe's overlapped pairs run a forward and a backward in turns, the all-to-alls of one
  // under the other's compute (their warm-up and cool-down, unpaired, are left out).
  const bool paired = workload::pipeline_schedule_of(p) == workload::PipelineSchedule::kDualPipe &&
                      p.dualpipe_overlap();
  const std::vector<workload::GradSync> none;
  SlotTimes t;
  for (const auto& chunk : work.chunks) {
    // ZeRO-2 and 3 reduce-scatter each microbatch's gradients as its backward makes them.
    const auto& syncs = work.grad_sync_every_microbatch ? chunk.grad_sync : none;
    const bool split = !chunk.weight_grad.ops.empty();
    const double f = compute_stream_seconds(work, chunk.forward);
    const double b = compute_stream_seconds(work, chunk.backward);
    const double w = compute_stream_seconds(work, chunk.weight_grad);
    StreamReplay replay(work, comm);
    double forward = 0, backward = 0;
    for (int visit = 0; visit < 2; ++visit) {
      if (paired) {  // the pair's seconds, shared by compute
        const double pair =
            replay.run_pair(chunk.forward, chunk.backward, chunk.weight_grad, syncs);
        forward = pair * f / std::max(f + b + w, 1e-12);
        backward = pair - forward;
        continue;
      }
      forward = replay.run(chunk.forward, none);
      backward = split ? replay.run(chunk.backward, none) + replay.run(chunk.weight_grad, syncs)
                       : replay.run(chunk.backward, syncs);
    }
    t.forward += f;
    t.backward += b;
    t.weight_grad += w;
    t.forward_pass += forward;
    t.backward_pass += backward;
  }
  const auto n = static_cast<double>(std::max<std::size_t>(work.chunks.size(), 1));
  for (double* x : {&t.forward, &t.backward, &t.weight_grad, &t.forward_pass, &t.backward_pass})
    *x /= n;
  t.per_slot = t.forward_pass + t.backward_pass;
  return t;
}

// Seconds the distributed optimizer's parameter gathers delay stage `stage`'s pipeline. They run
// back to back from the step's start, chunk by chunk; each bucket is needed by a forward op of its
// chunk's first microbatch, whose forward starts when its model piece k would without them, k
// forward passes in.
double gather_head_seconds(const RunConfig& config, int32_t stage, const workload::StageWork& work,
                           const SlotTimes& slot, CollectiveCost& comm) {
  const auto& p = config.parallel();
  const auto schedule = workload::pipeline_schedule_of(p);
  double done = 0, delay = 0;
  for (std::size_t c = 0; c < work.chunks.size(); ++c) {
    const auto& chunk = work.chunks[c];
    const double start =
        slot.forward_pass * workload::model_piece(schedule, stage, static_cast<int32_t>(c), p.pp());
    const auto ops = static_cast<double>(std::max<std::size_t>(chunk.forward.ops.size(), 1));
    for (const auto& g : chunk.param_gather) {
      done += dp_op_seconds(work, g.op, comm, false);
      delay = std::max(delay, done - (start + slot.forward_pass * g.before / ops));
    }
  }
  return delay;
}

// Seconds the step's once-per-step gradient reductions run past the end of stage `stage`'s
// pipeline. Each chunk's buckets start as its last backward makes them: chunk c (model piece k)
// ends its last backward k backward passes before stage 0's first chunk does, the step's end;
// its buckets fill evenly over that backward. Without overlap_grad_reduce all wait for the
// stage's last backward.
double reduction_tail_seconds(const RunConfig& config, int32_t stage,
                              const workload::StageWork& work, const SlotTimes& slot,
                              CollectiveCost& comm) {
  if (work.grad_sync_every_microbatch) return 0;  // in the slots, but for the last bucket
  const auto& p = config.parallel();
  const auto schedule = workload::pipeline_schedule_of(p);
  std::vector<std::pair<double, double>> calls;  // (ready, seconds)
  for (std::size_t c = 0; c < work.chunks.size(); ++c) {
    const auto& syncs = work.chunks[c].grad_sync;
    const double end = -slot.backward_pass *
                       workload::model_piece(schedule, stage, static_cast<int32_t>(c), p.pp());
    for (std::size_t i = 0; i < syncs.size(); ++i) {
      const double filled = static_cast<double>(i + 1) / static_cast<double>(syncs.size());
      const double ready = work.grad_sync_after_backward ? -slot.backward_pass * stage
                                                         : end - slot.backward_pass * (1 - filled);
      calls.emplace_back(ready, dp_op_seconds(work, syncs[i].op, comm, true));
    }
  }
  std::sort(calls.begin(), calls.end());
  double free = -1e300;
  for (const auto& [ready, seconds] : calls) free = std::max(free, ready) + seconds;
  return std::max(0.0, free);
}

// The step as stage `stage` sees it: its pipeline slots, the data-parallel traffic that cannot
// overlap (the parameter gathers that delay its first forwards, the gradient reductions' tail,
// the last microbatch's last bucket where every microbatch reduces, and the gather after the
// optimizer) and the optimizer.
double stage_estimate_seconds(const RunConfig& config, int32_t stage,
                              const compute::KernelCostModel& cost, CollectiveCost& comm) {
  const auto& p = config.parallel();
  const auto schedule = workload::pipeline_schedule_of(p);
  const auto work = lower::build_stage_work(config, stage, cost,
                                            workload::schedule_info(schedule).splits_backward);
  const SlotTimes slot = slot_times(p, work, comm);
  const int32_t m = workload::num_microbatches(p);
  // Chunk visits per microbatch and stage: v, but 1 for DualPipe's two one-way paths.
  const int32_t v = workload::chunk_passes(schedule, p.virtual_stages());
  constexpr double kTiny = 1e-12;  // a pass with no work (weight gradients of an unsplit backward)
  const double bubble_slots =
      workload::idle_slots(schedule, p.pp(), m, p.virtual_stages(), std::max(slot.forward, kTiny),
                           std::max(slot.backward, kTiny), std::max(slot.weight_grad, kTiny));
  const double pipeline = (static_cast<double>(v) * m + bubble_slots) * slot.per_slot;

  double exposed = gather_head_seconds(config, stage, work, slot, comm) +
                   reduction_tail_seconds(config, stage, work, slot, comm);
  if (work.grad_sync_every_microbatch && !work.chunks.empty() &&
      !work.chunks.front().grad_sync.empty())
    exposed += dp_op_seconds(work, work.chunks.front().grad_sync.back().op, comm, true);
  for (const auto& op : work.after_optimizer) exposed += dp_op_seconds(work, op, comm, true);
  double optimizer = 0;
  for (const auto& op : work.optimizer) optimizer += op.duration.as_seconds();
  return pipeline + exposed + optimizer;
}

}  // namespace

double estimate_step_seconds(const RunConfig& config, int32_t gpus_per_node) {
  const auto& p = config.parallel();
  const auto gpu = compute::load_gpu_profile(compute::gpu_or_default(config.cluster().gpu()));
  const compute::KernelCostModel cost(gpu, compute::cost_options(config));
  CollectiveCost comm(config, gpus_per_node);
  // The slowest stage sets the pace: the first holds the embedding (and under ZB-V and DualPipe
  // the output layer too), the last the output layer and loss; the middle one stands for the rest.
  double step = 0;
  for (const int32_t stage : std::set<int32_t>{0, p.pp() / 2, p.pp() - 1})
    step = std::max(step, stage_estimate_seconds(config, stage, cost, comm));
  return step;
}

}  // namespace cs::plan
