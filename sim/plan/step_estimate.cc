#include "sim/plan/step_estimate.h"

#include <algorithm>
#include <array>
#include <map>

#include "sim/compute/gpu_profile.h"
#include "sim/compute/kernel_cost.h"
#include "sim/lower/stage_work.h"
#include "sim/plan/collective_cost.h"
#include "sim/plan/compute_interference.h"
#include "sim/plan/stream_replay.h"
#include "sim/workload/model_math.h"
#include "sim/workload/schedules/registry.h"

namespace cs::plan {

namespace {

using clustersim::RunConfig;

constexpr double kTiny = 1e-12;  // a pass with no work (weight gradients of an unsplit backward)

// The seconds of an op of the data-parallel stream (a gather, a reduction, an offload copy);
// `stages_at_once` as CollectiveCost::seconds has it.
double dp_op_seconds(const workload::StageWork& work, const workload::Op& op, CollectiveCost& comm,
                     double stages_at_once) {
  return op.kind == workload::OpKind::kCollective ? comm.seconds(op, stages_at_once)
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
// microbatch. The filling pass: the part of the backward pass that makes the weight gradients
// (the weight-gradient pass where the schedule splits it off), over which the buckets fill.
// Under DualPipe's overlapped pairs a pass's seconds are its share of its pair's; alone: those of
// a forward and of a backward run by themselves, as the warm-up and cool-down run them. By chunk:
// each chunk's forward, backward (its input gradients where the schedule splits the weight
// gradients off) and weight-gradient pass alone, in workload::Phase order, in the steady state
// and after each pass the stage may run before it (PassesAfter). The seconds of the
// data-parallel collectives of a microbatch's passes, over all chunks.
using Passes = std::array<double, 3>;
// A chunk's passes right after each of its passes (by workload::Phase), or first (kFirst): where
// the data-parallel stream carries one pass's collectives into the next (a backward's
// reduce-scatters holding up the next forward's gathers), what a pass takes depends on what ran
// before it; a forward after a forward in the warm-up waits for none.
constexpr std::size_t kFirst = 3;
using PassesAfter = std::array<Passes, 4>;
struct SlotTimes {
  double forward = 0, backward = 0, weight_grad = 0;
  double forward_pass = 0, backward_pass = 0, filling_pass = 0, per_slot = 0;
  double forward_alone = 0, backward_alone = 0;
  std::vector<Passes> by_chunk;
  std::vector<PassesAfter> after_pass;
  double dp_collectives = 0;
  // What the first chunk's last pass of a microbatch leaves its other streams to run after it.
  double final_tail = 0;
};

// The data-parallel collectives' seconds in a chunk's passes for one microbatch, with `syncs`.
double dp_collective_seconds(const workload::ChunkWork& chunk,
                             const std::vector<workload::GradSync>& syncs, CollectiveCost& comm,
                             double stages_at_once) {
  double s = 0;
  const auto add = [&](const workload::Op& op) {
    if (op.stream == workload::Stream::kDp && op.kind == workload::OpKind::kCollective)
      s += comm.seconds(op, stages_at_once);
  };
  for (const auto* phase : {&chunk.forward, &chunk.backward, &chunk.weight_grad})
    for (const auto& e : phase->ops) add(e.op);
  for (const auto& g : syncs) add(g.op);
  return s;
}

// Fills `after` with each of the chunk's passes replayed after each, from idle streams (a pass
// the chunk does not have keeps what `after` held).
void replay_passes_after(const workload::StageWork& work, const workload::ChunkWork& chunk,
                         const std::vector<workload::GradSync>& syncs, CollectiveCost& comm,
                         const ComputeInterference& interference, double stages_at_once,
                         PassesAfter& after) {
  const bool split = !chunk.weight_grad.ops.empty();
  const std::array<const workload::PhaseOps*, 3> ops{&chunk.forward, &chunk.backward,
                                                     &chunk.weight_grad};
  const std::vector<workload::GradSync> none;
  const std::size_t passes = split ? 3 : 2;
  // The pass that ends the chunk's backward reduces the gradients it made.
  const auto run = [&](StreamReplay& replay, std::size_t pass) {
    return replay.run(*ops[pass], pass + 1 == passes ? syncs : none);
  };
  for (std::size_t before = 0; before < after.size(); ++before) {
    if (before != kFirst && before >= passes) continue;
    for (std::size_t pass = 0; pass < passes; ++pass) {
      StreamReplay replay(work, comm, interference, stages_at_once);
      if (before != kFirst) run(replay, before);
      after[before][pass] = run(replay, pass);
    }
  }
}

SlotTimes slot_times(const clustersim::ParallelConfig& p, const workload::StageWork& work,
                     CollectiveCost& comm, const ComputeInterference& interference,
                     double stages_at_once) {
  // DualPipe's overlapped pairs run a forward and a backward in turns, the all-to-alls of one
  // under the other's compute.
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
    StreamReplay replay(work, comm, interference, stages_at_once),
        alone(work, comm, interference, stages_at_once);
    double forward = 0, backward = 0, filling = 0, pair = 0;
    for (int visit = 0; visit < 2; ++visit) {
      if (paired)  // the pair's seconds, shared by compute
        pair = replay.run_pair(chunk.forward, chunk.backward, chunk.weight_grad, syncs);
      forward = alone.run(chunk.forward, none);
      if (split) {
        backward = alone.run(chunk.backward, none);
        filling = alone.run(chunk.weight_grad, syncs);
        backward += filling;
      } else {
        filling = backward = alone.run(chunk.backward, syncs);
      }
    }
    if (&chunk == &work.chunks.front()) t.final_tail = alone.streams_ahead();
    t.forward_alone += forward;
    t.backward_alone += backward;
    t.by_chunk.push_back({forward, split ? backward - filling : backward, split ? filling : 0});
    const double dp = dp_collective_seconds(chunk, syncs, comm, stages_at_once);
    t.dp_collectives += dp;
    // Where no data-parallel collective runs in the passes, none carries into the next.
    auto& after = t.after_pass.emplace_back();
    after.fill(t.by_chunk.back());
    if (dp > 0) replay_passes_after(work, chunk, syncs, comm, interference, stages_at_once, after);
    if (paired) {
      forward = pair * f / std::max(f + b + w, 1e-12);
      filling = backward = pair - forward;
    }
    t.forward += f;
    t.backward += b;
    t.weight_grad += w;
    t.forward_pass += forward;
    t.backward_pass += backward;
    t.filling_pass += filling;
  }
  const auto n = static_cast<double>(std::max<std::size_t>(work.chunks.size(), 1));
  for (double* x : {&t.forward, &t.backward, &t.weight_grad, &t.forward_pass, &t.backward_pass,
                    &t.filling_pass, &t.forward_alone, &t.backward_alone})
    *x /= n;
  t.per_slot = t.forward_pass + t.backward_pass;
  return t;
}

// What DualPipe's passes outside its overlapped pairs (the warm-up's forwards, the cool-down's
// backwards) take beyond the slots' pair shares: their all-to-alls under no other pass's compute.
// None without the overlap, where every pass's slot is its own.
double unpaired_seconds(const clustersim::ParallelConfig& p, int32_t stage, const SlotTimes& slot) {
  if (!p.dualpipe_overlap()) return 0;
  const auto order = workload::pipeline_orders(workload::PipelineSchedule::kDualPipe, p.pp(),
                                               workload::num_microbatches(p),
                                               p.virtual_stages())[static_cast<std::size_t>(stage)];
  int64_t forwards = 0, backwards = 0;  // alone
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i].phase == workload::Phase::kWeightGrad) continue;
    const bool in_pair = order[i].pair == workload::Pairing::kOverlapped ||
                         (i > 0 && order[i - 1].pair == workload::Pairing::kOverlapped);
    if (in_pair) continue;
    (order[i].phase == workload::Phase::kForward ? forwards : backwards) += 1;
  }
  return static_cast<double>(forwards) * std::max(0.0, slot.forward_alone - slot.forward_pass) +
         static_cast<double>(backwards) * std::max(0.0, slot.backward_alone - slot.backward_pass);
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
      done += dp_op_seconds(work, g.op, comm, 0);
      delay = std::max(delay, done - (start + slot.forward_pass * g.before / ops));
    }
  }
  return delay;
}

// Seconds the step's once-per-step gradient reductions run past the end of stage 0's pipeline,
// the step's end. Each chunk's buckets start as its last backward makes them: chunk c (model
// piece k) ends its last backward k backward passes before stage 0's first chunk does; its
// buckets fill evenly over that backward's filling pass. Without overlap_grad_reduce all wait for
// the stage's last backward. The reductions slow the compute of the filling passes they run
// beside (`interference`): those end later by the extra seconds, and each bucket by its share of
// them, so the step ends at the later of the last compute and the last reduction.
double reduction_tail_seconds(const RunConfig& config, int32_t stage,
                              const workload::StageWork& work, const SlotTimes& slot,
                              CollectiveCost& comm, const ComputeInterference& interference) {
  if (work.grad_sync_every_microbatch) return 0;  // in the slots, but for the last bucket
  const auto& p = config.parallel();
  const auto schedule = workload::pipeline_schedule_of(p);
  struct Call {
    double ready, seconds, filled;
    double end;                             // of its chunk's last backward
    const workload::PhaseOps* filling_ops;  // that backward's ops making the weight gradients
    const workload::Op* op;
  };
  std::vector<Call> calls;
  for (std::size_t c = 0; c < work.chunks.size(); ++c) {
    const auto& chunk = work.chunks[c];
    const double end = -slot.backward_pass *
                       workload::model_piece(schedule, stage, static_cast<int32_t>(c), p.pp());
    const auto* filling_ops = chunk.weight_grad.ops.empty() ? &chunk.backward : &chunk.weight_grad;
    for (std::size_t i = 0; i < chunk.grad_sync.size(); ++i) {
      const auto& op = chunk.grad_sync[i].op;
      const double filled =
          static_cast<double>(i + 1) / static_cast<double>(chunk.grad_sync.size());
      const double ready = work.grad_sync_after_backward ? -slot.backward_pass * stage
                                                         : end - slot.filling_pass * (1 - filled);
      calls.push_back({ready, dp_op_seconds(work, op, comm, 1),
                       work.grad_sync_after_backward ? 1.0 : filled, end, filling_ops, &op});
    }
  }
  std::stable_sort(calls.begin(), calls.end(),
                   [](const Call& a, const Call& b) { return a.ready < b.ready; });
  // The extra seconds of the filling passes' compute beside the reductions, as placed alone.
  double extra = 0, free = -1e300;
  for (const Call& call : calls) {
    const double start = std::max(free, call.ready);
    free = start + call.seconds;
    const double beside = std::min(free, call.end) - std::max(start, call.end - slot.filling_pass);
    if (beside > 0 && interference.on())
      extra += beside * (interference.mean_slowdown(work, *call.filling_ops,
                                                    interference.load(work, *call.op, comm)) -
                         1);
  }
  free = -1e300;
  for (const Call& call : calls)
    free = std::max(free, call.ready + extra * call.filled) + call.seconds;
  return std::max({0.0, extra, free});
}

// A stage as the estimate reckons it: its slots, and what it adds after its pipeline (the
// data-parallel traffic that cannot overlap, the optimizer).
struct StageEstimate {
  SlotTimes slot;
  double after = 0;
};

// Stage `stage`: its slots; then the parameter gathers that delay its first forwards, the gradient
// reductions' tail, what its last pass's reductions leave (the last bucket at least where every
// microbatch reduces), the gather after the optimizer, and the optimizer.
StageEstimate stage_estimate(const RunConfig& config, int32_t stage,
                             const workload::StageWork& work, CollectiveCost& comm,
                             const ComputeInterference& interference, double stages_at_once) {
  StageEstimate e;
  e.slot = slot_times(config.parallel(), work, comm, interference, stages_at_once);
  e.after = gather_head_seconds(config, stage, work, e.slot, comm) +
            reduction_tail_seconds(config, stage, work, e.slot, comm, interference);
  // The step's last pass leaves what its reductions have not done, its last bucket's at least.
  double tail = e.slot.final_tail;
  if (work.grad_sync_every_microbatch && !work.chunks.empty() &&
      !work.chunks.front().grad_sync.empty())
    tail = std::max(tail, dp_op_seconds(work, work.chunks.front().grad_sync.back().op, comm, 1));
  e.after += tail;
  for (const auto& op : work.after_optimizer) e.after += dp_op_seconds(work, op, comm, 1);
  for (const auto& op : work.optimizer) e.after += op.duration.as_seconds();
  return e;
}

// DualPipe's pipeline on stage `stage`, whose overlapped pairs the orders do not time: m + idle
// slots of its mean pair, and its passes outside the pairs.
double paired_pipeline(const clustersim::ParallelConfig& p, int32_t stage, const SlotTimes& slot) {
  const int32_t m = workload::num_microbatches(p);
  const double idle =
      workload::idle_slots(workload::PipelineSchedule::kDualPipe, p.pp(), m, p.virtual_stages(),
                           std::max(slot.forward, kTiny), std::max(slot.backward, kTiny),
                           std::max(slot.weight_grad, kTiny));
  return (m + idle) * slot.per_slot + unpaired_seconds(p, stage, slot);
}

// The pipeline of the other schedules: their orders run with every stage's own chunks (the first
// stage's, the last's, and the middle one's for the others). A chunk heavier than the rest (the
// output layer and loss) sits on the path of every microbatch, where a stage's mean chunk would
// spread it over its slots, and the more so the fewer microbatches fill the pipeline.
double replayed_pipeline(const clustersim::ParallelConfig& p,
                         const std::map<int32_t, StageEstimate>& stages) {
  const auto standing_for = [&](int32_t s) -> const SlotTimes& {
    return stages.at(s == 0 || s == p.pp() - 1 ? s : p.pp() / 2).slot;
  };
  const SlotTimes& middle = standing_for(p.pp() / 2);
  return workload::replayed_span(
      workload::pipeline_schedule_of(p), p.pp(), workload::num_microbatches(p), p.virtual_stages(),
      std::max(middle.forward, kTiny), std::max(middle.backward, kTiny),
      std::max(middle.weight_grad, kTiny),
      [&](int32_t s, const workload::WorkItem& item, const workload::WorkItem* previous) {
        const auto before = previous ? static_cast<std::size_t>(previous->phase) : kFirst;
        return standing_for(s).after_pass[static_cast<std::size_t>(item.chunk)][before]
                                         [static_cast<std::size_t>(item.phase)];
      });
}

}  // namespace

double estimate_step_seconds(const RunConfig& config, int32_t gpus_per_node) {
  const auto& p = config.parallel();
  const auto gpu = compute::load_gpu_profile(compute::gpu_or_default(config.cluster().gpu()));
  const compute::KernelCostModel cost(gpu, compute::cost_options(config));
  CollectiveCost comm(config, gpus_per_node);
  const ComputeInterference interference(config, gpu);
  const auto schedule = workload::pipeline_schedule_of(p);
  const bool paired = schedule == workload::PipelineSchedule::kDualPipe;
  // The slowest stage sets the pace: the first holds the embedding (and under ZB-V and DualPipe
  // the output layer too), the last the output layer and loss; the middle one stands for the rest.
  std::map<int32_t, workload::StageWork> works;
  for (const int32_t stage : {0, p.pp() / 2, p.pp() - 1})
    if (!works.contains(stage))
      works.emplace(stage,
                    lower::build_stage_work(config, stage, cost,
                                            workload::schedule_info(schedule).splits_backward));
  // The step with a share `stages_at_once` of the other stages making their passes' collectives at
  // the same time; and the share of its passes' time the middle stage's data-parallel collectives
  // take, which is how often the other stages make theirs while a stage's pass runs.
  const auto estimate = [&](double stages_at_once) {
    std::map<int32_t, StageEstimate> stages;
    for (const auto& [stage, work] : works)
      stages.emplace(stage,
                     stage_estimate(config, stage, work, comm, interference, stages_at_once));
    const double replayed = paired ? 0 : replayed_pipeline(p, stages);
    double step = 0;
    for (const auto& [stage, e] : stages)
      step = std::max(step, (paired ? paired_pipeline(p, stage, e.slot) : replayed) + e.after);
    const SlotTimes& middle = stages.at(p.pp() / 2).slot;
    double passes = 0;
    for (const auto& chunk : middle.by_chunk) passes += chunk[0] + chunk[1] + chunk[2];
    return std::make_pair(step, std::min(1.0, middle.dp_collectives / std::max(passes, kTiny)));
  };
  auto [step, busy] = estimate(1);
  // Each stage makes its passes' collectives as its own pipeline reaches them, so the other
  // stages' groups share the fabric with them only while their own are running. Two rounds come
  // within 0.2% of the step more rounds settle at (Llama 3 405B, ZeRO-3, ZB-V, on 16,384 GPUs of
  // llama3-24k: 13.75 s with every stage's at once, 12.39, 12.25, then 12.24; simulated 12.15).
  for (int round = 0; p.pp() > 1 && busy > 0 && comm.fabric_shared() && round < 2; ++round)
    std::tie(step, busy) = estimate(busy);
  return step;
}

}  // namespace cs::plan
