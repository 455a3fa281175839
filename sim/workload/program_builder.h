// Turns a stage's pipeline order and per-chunk work into the stage's program (sends, receives,
// compute, gradient synchronisation, optimizer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/workload/pipeline_schedule.h"
#include "sim/workload/program.h"

namespace cs::workload {

// One op of a phase, and what it waits for inside the phase. By default the op before it, so a
// phase runs in sequence; an op on another stream (a ZeRO-3 weight gather, say) can instead wait
// only for the item to start, or for a given earlier op, which is how prefetching overlaps.
struct PhaseOp {
  static constexpr int32_t kPrevious = -1;   // the op before it (the item's start for the first)
  static constexpr int32_t kItemStart = -2;  // only what the item's first op waits for
  static constexpr int32_t kNone = -3;
  Op op;
  int32_t after = kPrevious;
  int32_t also_after = kNone;  // an earlier op of the phase, by index
  // A gradient reduction issued inside the final backward phase (a stack's per-unit
  // reduce-scatter): the optimizer waits for it as for a GradSync.
  bool grad_reduction = false;
};

// Ops of one phase of one model chunk for one microbatch. Their stream, kind, cost and label
// are set; microbatch and dependencies on other phases are filled in by the builder.
struct PhaseOps {
  std::vector<PhaseOp> ops;
  void add(const Op& op, int32_t after = PhaseOp::kPrevious, int32_t also_after = PhaseOp::kNone) {
    ops.push_back({op, after, also_after});
  }
};

// A data-parallel (or ZeRO) communication op on the DP stream that may start once op `after`
// of the chunk's final backward phase (weight-gradient phase for ZB-H1) has run for the last
// microbatch: gradient buckets follow the layers whose gradients they carry.
struct GradSync {
  uint32_t after = 0;
  Op op;
};

// A communication op on the DP stream that forward op `before` of the chunk's first microbatch
// waits for, with no dependency of its own: the distributed optimizer's parameter all-gather
// overlapped with the forward. In a real run it is issued as the next step begins; a simulated
// step stands for any step, so it is issued at the start of this one.
struct ParamGather {
  uint32_t before = 0;
  Op op;
};

struct ChunkWork {
  PhaseOps forward, backward, weight_grad;  // weight_grad only for split-backward schedules
  Bytes activation_bytes = 0;  // sent to the next chunk; its gradient comes back with the same size
  std::vector<GradSync> grad_sync;
  std::vector<ParamGather> param_gather;
};

struct StageWork {
  std::vector<std::string> labels;            // Op::label indexes these
  std::vector<KernelCall> kernels;            // Op::kernel indexes these
  std::vector<std::vector<Time>> rank_times;  // Op::varies of compute ops indexes these
  std::vector<AllToAllV> all_to_alls;         // Op::varies of EP all-to-alls indexes these
  std::vector<ChunkWork> chunks;              // the stage's virtual chunks; see model_piece()
  std::vector<Op> optimizer;                  // compute stream, after every GradSync of the stage
  std::vector<Op> after_optimizer;  // DP stream, after the optimizer (e.g. ZeRO parameter gather)
  // Without overlap_grad_reduce every GradSync waits for the stage's whole backward instead of
  // its bucket's layers (Megatron then reduces all buckets in finalize_model_grads).
  bool grad_sync_after_backward = false;
  // ZeRO-2/3 keep only their shard of the gradients, so every microbatch's gradients are
  // reduce-scattered as its backward makes them (DeepSpeed stage 2, FSDP without no_sync), where
  // ZeRO-0/1 accumulate the full gradients and reduce them once, after the last microbatch.
  bool grad_sync_every_microbatch = false;
  // DualPipe's forward-backward pairs (Pairing::kOverlapped) interleave their two halves, with
  // the expert all-to-alls on their own stream (parallel.dualpipe_overlap); off: in sequence.
  bool overlap_pairs = false;
};

// Builds stage `stage` of `stages` under `schedule`'s placement of the model (forward_source,
// forward_target): for every item of `order` the receive it needs, its ops and the send it feeds,
// then gradient synchronisation and the optimizer step. A neighbouring chunk on the same stage
// (the bottom of ZB-V's V) hands over in GPU memory: no send or receive, the consumer waits for
// the producer's last compute op, and an order that runs the consumer first is rejected
// (std::invalid_argument). Items marked with a Pairing send as Pairing says.
Program build_stage_program(const StageWork& work, const std::vector<WorkItem>& order,
                            PipelineSchedule schedule, int32_t stage, int32_t stages);

}  // namespace cs::workload
