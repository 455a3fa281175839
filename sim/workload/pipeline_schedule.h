// Pipeline-parallel schedules as the exact per-stage order of forward / backward work items.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace cs::workload {

// kGpipe: all forwards, then all backwards (Huang et al. 2019).
// kOneFOneB: PipeDream-Flush, Megatron-LM's non-interleaved schedule (Narayanan et al. 2021).
// kInterleaved: Megatron-LM's interleaved 1F1B over v model chunks per stage (same paper).
// kZbH1: zero-bubble ZB-H1, backward split into input-grad B and weight-grad W (Qi et al. 2023).
// kZbV: zero-bubble ZB-V, two chunks per stage in a V, backward split (same authors).
// kDualPipe: DeepSeek-V3's bidirectional DualPipe (DeepSeek-AI 2024, section 3.2.1).
// kZbH2: zero-bubble ZB-H2, ZB-H1 with a warm-up twice as long and the W's moved to the tail
// (Qi et al. 2023); zero bubble only with optimizer post-validation (ParallelConfig).
// Each schedule's properties, order and formulas: sim/workload/schedules/registry.h.
enum class PipelineSchedule : uint8_t {
  kGpipe,
  kOneFOneB,
  kInterleaved,
  kZbH1,
  kZbV,
  kDualPipe,
  kZbH2,
};

enum class Phase : uint8_t {
  kForward,
  kBackward,    // the full backward, or only the input gradient (B) when the schedule splits it
  kWeightGrad,  // the weight gradient (W); only ZB-H1 splits it from kBackward
};

// An item whose output (activation or input gradient) is sent only once the item after it has
// run too, and, when that one is marked as well, the one after that: DualPipe's F&B sends after
// the pair (deepseek-ai/DualPipe, dualpipe.py, _forward_backward_chunk), and its full backwards
// (B then W in one autograd pass) send their input gradient after the W.
enum class Pairing : uint8_t {
  kNone,
  // DualPipe's F&B, on a forward followed by a backward of another microbatch and chunk: the
  // pair starts once both halves have their inputs (the repository receives both, then computes
  // the two) and its compute and communication overlap: the builder interleaves the halves so
  // that this forward's MoE all-to-alls run under the backward's compute and the other way round
  // (DeepSeek-V3, section 3.2.1, figure 4; StageWork::overlap_pairs).
  kOverlapped,
  // Only the deferred send (a full backward; DualPipe's middle stages' first, unoverlapped pair).
  kSequential,
};

struct WorkItem {
  Phase phase = Phase::kForward;
  int32_t microbatch = 0;
  int32_t chunk = 0;              // virtual chunk on this stage, 0..v-1; see model_piece()
  Pairing pair = Pairing::kNone;  // see Pairing
  friend bool operator==(const WorkItem&, const WorkItem&) = default;
};

// The names are those of ParallelConfig.Schedule in proto/config.proto ("GPIPE", "ONE_F_ONE_B",
// "INTERLEAVED", "ZB_H1"); parsing ignores case and throws std::invalid_argument otherwise.
std::string_view to_string(PipelineSchedule schedule);
PipelineSchedule parse_pipeline_schedule(std::string_view text);

// Where a schedule places the model. The model is cut into model_pieces() pieces in model order;
// chunk c of stage s holds piece model_piece(s, c). Megatron's interleaving puts piece c*p + s
// there (p*v pieces), ZB-V's V puts s and 2p-1-s, DualPipe's two copies s and p-1-s (p pieces,
// each held twice). A microbatch's forward runs its pieces in order along one path of chunks;
// DualPipe has two paths, one per chunk index (microbatches fed from stage 0 and from stage p-1).
int32_t model_pieces(PipelineSchedule schedule, int32_t stages, int32_t virtual_stages);
int32_t model_piece(PipelineSchedule schedule, int32_t stage, int32_t chunk, int32_t stages);

// A chunk of a stage; stage < 0 for none.
struct ChunkRef {
  int32_t stage = -1;
  int32_t chunk = -1;
  bool exists() const { return stage >= 0; }
  friend bool operator==(const ChunkRef&, const ChunkRef&) = default;
};
// The chunk whose forward output this chunk's forward takes (none for the path's first piece),
// and the chunk this one's output goes to (none for the last). Backward gradients flow back the
// same way. A neighbour on the same stage is a hand-off in GPU memory, not a transfer.
ChunkRef forward_source(PipelineSchedule schedule, int32_t stage, int32_t chunk, int32_t stages,
                        int32_t virtual_stages);
ChunkRef forward_target(PipelineSchedule schedule, int32_t stage, int32_t chunk, int32_t stages,
                        int32_t virtual_stages);

// Chunks one microbatch runs on each stage: v, or 1 for DualPipe (one path per chunk index).
int32_t chunk_passes(PipelineSchedule schedule, int32_t virtual_stages);

// For each stage s of p, the exact order in which s runs its items; each stage runs every
// (phase, microbatch, chunk) of its schedule exactly once. The orders respect the data
// dependencies F(mb, q) after F(mb, q-1); B(mb, q) after B(mb, q+1) and F(mb, q); W(mb, q) after
// B(mb, q), and running them with any positive costs never deadlocks. Each schedule's order is
// described in its own file under sim/workload/schedules/ (GPipe's as PyTorch's ScheduleGPipe,
// 1F1B's and interleaved's as Megatron's, ZB-H1's W's placed by list scheduling under the costs).
// Throws std::invalid_argument for p, m or v below 1, v != 1 for a schedule without virtual
// stages, v != 2 for ZB-V and DualPipe, m % p != 0 for one that needs whole groups
// (kInterleaved), and for DualPipe an odd p, an odd m or m < 2p.
std::vector<std::vector<WorkItem>> pipeline_orders(PipelineSchedule schedule, int32_t stages,
                                                   int32_t microbatches, int32_t virtual_stages);
// The same with the stage-uniform costs of one F, B and W (full backward = t_b + t_w for the
// schedules that do not split it); only ZB-H1's and ZB-H2's orders depend on them. Costs must be >
// 0.
std::vector<std::vector<WorkItem>> pipeline_orders(PipelineSchedule schedule, int32_t stages,
                                                   int32_t microbatches, int32_t virtual_stages,
                                                   double t_f, double t_b, double t_w);

// Megatron's warm-up count: the forwards (microbatch-chunks) a stage runs before its steady
// phase, whose pairs open with a forward; so min(warm-up + 1, m*v) forwards precede the first
// backward. Each schedule's file gives its count: m for GPipe, min(p-s-1, m) for 1F1B and ZB-H1,
// min(2(p-s-1) + (v-1)p, m*v) for interleaved with v > 1, min(2(p-s-1), m) for ZB-H2.
int32_t warmup_forwards(PipelineSchedule schedule, int32_t stages, int32_t microbatches,
                        int32_t virtual_stages, int32_t stage);

// The most microbatch-chunks whose forward has run but whose backward (B) has not: the
// activations that 1F1B-style schedules bound. 1F1B: min(p-s, m); GPipe: m.
int32_t peak_in_flight(const std::vector<WorkItem>& order);

// The most microbatch-chunks whose activations are still held: forward run but last backward
// item (W where the order has one for that item, else B) not. ZB-H1 keeps this at most p on
// every stage, stage 0's 1F1B peak, ZB-H2 at most 2p-1; elsewhere it equals peak_in_flight.
int32_t peak_held_activations(const std::vector<WorkItem>& order);

// The orders of `schedule` (pipeline_orders under the stage-uniform costs t_f, t_b, t_w) run with
// each item taking cost(stage, item, the item its stage ran before it or null) once its input is
// ready (the previous piece's forward, the next piece's backward, its own B for a W;
// communication free): the seconds until every stage is done. What the planner's estimate runs
// where stages, chunks or what a stage's streams carry from one item into the next differ.
double replayed_span(PipelineSchedule schedule, int32_t stages, int32_t microbatches,
                     int32_t virtual_stages, double t_f, double t_b, double t_w,
                     const std::function<double(int32_t stage, const WorkItem& item,
                                                const WorkItem* previous)>& cost);

// The textbook share of a step each stage spends idle, with stage-uniform costs and free
// communication (returns 0 for p = 1); t_b is the full backward for a schedule that does not
// split it. Each schedule's file gives its formula and its source: (p-1)/(m+p-1) for GPipe and
// 1F1B, (p-1)/(v*m+p-1) for interleaved, (p-1)(t_f+t_b-t_w) / (m(t_f+t_b+t_w) + (p-1)(t_f+t_b-t_w))
// for ZB-H1 (m >= p), the same with 2t_w for ZB-H2 (m >= 2p-1, its step under optimizer
// post-validation). Same argument checks as pipeline_orders.
double analytic_bubble_fraction(PipelineSchedule schedule, int32_t stages, int32_t microbatches,
                                int32_t virtual_stages, double t_f, double t_b, double t_w);
// The same idle time in slots of one chunk visit's t_f + t_b + t_w, against the stage's
// chunk_passes x m slots of work: p - 1 for a schedule that leaves every bubble empty, fewer where
// weight gradients fill them. Below 2p microbatches, where the textbook forms stop holding, it is
// the idle time of the schedule's orders replayed under the costs (more for ZB-H1 and ZB-V with
// too few microbatches to fill their bubbles). What the planner's estimate charges.
double idle_slots(PipelineSchedule schedule, int32_t stages, int32_t microbatches,
                  int32_t virtual_stages, double t_f, double t_b, double t_w);

}  // namespace cs::workload
