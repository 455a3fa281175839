// Pipeline-parallel schedules as the exact per-stage order of forward / backward work items.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace cs::workload {

// kGpipe: all forwards, then all backwards (Huang et al. 2019).
// kOneFOneB: PipeDream-Flush, Megatron-LM's non-interleaved schedule (Narayanan et al. 2021).
// kInterleaved: Megatron-LM's interleaved 1F1B over v model chunks per stage (same paper).
// kZbH1: zero-bubble ZB-H1, backward split into input-grad B and weight-grad W (Qi et al. 2023).
enum class PipelineSchedule : uint8_t { kGpipe, kOneFOneB, kInterleaved, kZbH1 };

enum class Phase : uint8_t {
  kForward,
  kBackward,    // the full backward, or only the input gradient (B) when the schedule splits it
  kWeightGrad,  // the weight gradient (W); only ZB-H1 splits it from kBackward
};

struct WorkItem {
  Phase phase = Phase::kForward;
  int32_t microbatch = 0;
  int32_t chunk = 0;  // virtual chunk on this stage, 0..v-1; see model_piece()
  friend bool operator==(const WorkItem&, const WorkItem&) = default;
};

// The names are those of ParallelConfig.Schedule in proto/config.proto ("GPIPE", "ONE_F_ONE_B",
// "INTERLEAVED", "ZB_H1"); parsing ignores case and throws std::invalid_argument otherwise.
std::string_view to_string(PipelineSchedule schedule);
PipelineSchedule parse_pipeline_schedule(std::string_view text);

// Megatron's interleaving: chunk c of stage s holds model piece c*p + s, so a microbatch's
// forward visits stages 0..p-1 once per chunk, v times in all.
inline int32_t model_piece(int32_t stage, int32_t chunk, int32_t stages) {
  return chunk * stages + stage;
}

// For each stage s of p, the exact order in which s runs its items; each stage runs every
// (phase, microbatch, chunk) of its schedule exactly once. The orders respect the data
// dependencies F(mb, q) after F(mb, q-1); B(mb, q) after B(mb, q+1) and F(mb, q); W(mb, q) after
// B(mb, q), and running them with any positive costs never deadlocks.
// - kGpipe: forwards 0..m-1, then backwards 0..m-1 in the same order (as PyTorch's
//   torch.distributed.pipelining ScheduleGPipe); v must be 1.
// - kOneFOneB: min(p-s-1, m) warm-up forwards, then forward/backward pairs, then the remaining
//   backwards (Megatron's forward_backward_pipelining_without_interleaving); v must be 1.
// - kInterleaved: Megatron-Core's forward_backward_pipelining_with_interleaving: microbatches in
//   groups of p per chunk, warm-up min(2(p-s-1) + (v-1)p, m*v) forwards, then 1F1B, then
//   cool-down. Needs m % p == 0. With v = 1 it is kOneFOneB. (Older Megatron-LM ran everything
//   as warm-up when m == p; Megatron-Core dropped that special case and so do we.)
// - kZbH1: the 1F1B order of F and B (B = input gradient only), with the W's placed by a
//   list-scheduling simulation under the given costs. A free stage runs its next F/B if that is
//   ready; if not, rather than idle, its oldest pending W; and before an F that would hold more
//   than p microbatches' activations (F run, W not), its oldest pending W. Leftover W's run last.
//   So W's fill what would be bubbles while no stage holds more than stage 0 does in 1F1B, the
//   paper's memory claim. (Deferring W's without that cap gives the same step time at equal
//   costs but leaves the last stage holding all m microbatches.) With t_f = t_b = t_w and
//   m >= p the bubble is exactly the ZB-H1 formula below.
// Throws std::invalid_argument for p, m or v below 1, v != 1 outside kInterleaved, or
// m % p != 0 for kInterleaved.
std::vector<std::vector<WorkItem>> pipeline_orders(PipelineSchedule schedule, int32_t stages,
                                                   int32_t microbatches, int32_t virtual_stages);
// The same with the stage-uniform costs of one F, B and W (full backward = t_b + t_w for the
// schedules that do not split it); only ZB-H1's order depends on them. Costs must be > 0.
std::vector<std::vector<WorkItem>> pipeline_orders(PipelineSchedule schedule, int32_t stages,
                                                   int32_t microbatches, int32_t virtual_stages,
                                                   double t_f, double t_b, double t_w);

// Megatron's warm-up count: the forwards (microbatch-chunks) a stage runs before its steady
// phase, whose pairs open with a forward; so min(warm-up + 1, m*v) forwards precede the first
// backward. m for GPipe, min(p-s-1, m) for 1F1B and ZB-H1, min(2(p-s-1) + (v-1)p, m*v) for
// interleaved with v > 1.
int32_t warmup_forwards(PipelineSchedule schedule, int32_t stages, int32_t microbatches,
                        int32_t virtual_stages, int32_t stage);

// The most microbatch-chunks whose forward has run but whose backward (B) has not: the
// activations that 1F1B-style schedules bound. 1F1B: min(p-s, m); GPipe: m.
int32_t peak_in_flight(const std::vector<WorkItem>& order);

// The most microbatch-chunks whose activations are still held: forward run but last backward
// item (W where the order has one for that item, else B) not. ZB-H1 keeps this at most p on
// every stage, stage 0's 1F1B peak; elsewhere it equals peak_in_flight.
int32_t peak_held_activations(const std::vector<WorkItem>& order);

// The textbook share of a step each stage spends idle, with stage-uniform costs and free
// communication (returns 0 for p = 1):
// - GPipe, 1F1B: (p-1)/(m+p-1), whatever t_f and t_b (Narayanan et al. 2021, section 2.2: bubble
//   (p-1)(t_f+t_b) against m(t_f+t_b) of work).
// - Interleaved: (p-1)/(v*m+p-1); each chunk costs 1/v of the stage (same paper, section 2.2).
// - ZB-H1: (p-1)(t_f+t_b-t_w) / (m(t_f+t_b+t_w) + (p-1)(t_f+t_b-t_w)) (Qi et al. 2023,
//   section 3.1), for m >= p; the idle time is clamped at 0 when t_w > t_f + t_b.
// Same argument checks as pipeline_orders.
double analytic_bubble_fraction(PipelineSchedule schedule, int32_t stages, int32_t microbatches,
                                int32_t virtual_stages, double t_f, double t_b, double t_w);

}  // namespace cs::workload
