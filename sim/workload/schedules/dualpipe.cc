// DualPipe: DeepSeek-V3's bidirectional pipeline with overlapped forward-backward pairs.
#include <algorithm>
#include <deque>
#include <stdexcept>
#include <utility>

#include "sim/workload/schedules/entries.h"

namespace cs::workload {
namespace {

// One stage's order while it is written. The DualPipe repository (deepseek-ai/DualPipe,
// dualpipe.py, DualPipe.step) names a stage's two chunks by "phase": phase 0 is the chunk whose
// microbatches come from the nearer end, so on the second half of the stages phase k is chunk
// 1 - k. Chunk 0 (piece s) runs microbatches 0..m/2-1, fed at stage 0; chunk 1 (piece p-1-s)
// runs m/2..m-1, fed at stage p-1.
struct DualOrder {
  std::vector<WorkItem> items;
  int32_t flip = 0;  // 1 on the second half of the stages
  int32_t first_mb[2] = {0, 0};
  int32_t f[2] = {0, 0}, b[2] = {0, 0};
  std::deque<std::pair<int32_t, int32_t>> deferred_w;  // (microbatch, chunk), oldest first

  void forward(int32_t phase, Pairing pair = Pairing::kNone) {
    const int32_t c = phase ^ flip;
    items.push_back({Phase::kForward, first_mb[c] + f[c]++, c, pair});
  }
  // A backward; with zero_bubble its W waits in a queue for weight(), else it follows at once
  // and the input gradient leaves after both (the repository's full backward, one autograd pass).
  void backward(int32_t phase, bool zero_bubble = false) {
    const int32_t c = phase ^ flip;
    const int32_t mb = first_mb[c] + b[c]++;
    if (zero_bubble) {
      items.push_back({Phase::kBackward, mb, c});
      deferred_w.emplace_back(mb, c);
    } else {
      items.push_back({Phase::kBackward, mb, c, Pairing::kSequential});
      items.push_back({Phase::kWeightGrad, mb, c});
    }
  }
  void weight() {
    if (deferred_w.empty()) throw std::logic_error("DUALPIPE order: W with no deferred B");
    items.push_back({Phase::kWeightGrad, deferred_w.front().first, deferred_w.front().second});
    deferred_w.pop_front();
  }
  // The F&B of forward `f_phase` and backward `b_phase` (full backward).
  void pair(int32_t f_phase, int32_t b_phase, Pairing how = Pairing::kOverlapped) {
    forward(f_phase, how);
    backward(b_phase);
  }
};

// The eight steps of DualPipe.step on stage s of p with m microbatches (p even, m even, m >= 2p);
// h = p/2, r = min(s, p-1-s) the distance from the nearer end.
std::vector<WorkItem> dualpipe_order(int32_t p, int32_t m, int32_t s) {
  const int32_t h = p / 2, r = std::min(s, p - 1 - s);
  const bool middle = s == h - 1 || s == h;
  DualOrder o;
  o.flip = s >= h ? 1 : 0;
  o.first_mb[1] = m / 2;
  for (int32_t i = 0; i < 2 * (h - r - 1); ++i) o.forward(0);  // 1: nF0
  for (int32_t i = 0; i < r + 1; ++i) {                        // 2: nF0F1
    o.forward(0);
    o.forward(1);
  }
  for (int32_t i = 0; i < h - r - 1; ++i) {  // 3: nB1W1F1, zero bubble
    o.backward(1, true);
    o.weight();
    o.forward(1);
  }
  for (int32_t i = 0; i < m / 2 - p + r + 1; ++i) {  // 4: nF0B1F1B0, the main step
    // The middle stages do not overlap their first pair, "to further reduce bubble size".
    o.pair(0, 1, i == 0 && middle ? Pairing::kSequential : Pairing::kOverlapped);
    o.pair(1, 0);
  }
  for (int32_t i = 0; i < h - r - 1; ++i) {  // 5: nB1F1B0
    o.backward(1);
    o.pair(1, 0);
  }
  bool zero_bubble = false;  // 6: nB1B0, the second half of them zero bubble
  for (int32_t i = 0; i < r + 1; ++i) {
    if (i == (r + 1) / 2 && r % 2 == 1) zero_bubble = true;
    o.backward(1, zero_bubble);
    if (i == (r + 1) / 2 && r % 2 == 0) zero_bubble = true;
    o.backward(0, zero_bubble);
  }
  for (int32_t i = 0; i < h - r - 1; ++i) {  // 7: nWB0, zero bubble
    o.weight();
    o.backward(0, true);
  }
  while (!o.deferred_w.empty()) o.weight();  // 8: nW
  return o.items;
}

std::vector<std::vector<WorkItem>> orders(int32_t p, int32_t m, int32_t, double, double, double) {
  std::vector<std::vector<WorkItem>> out(static_cast<size_t>(p));
  for (int32_t s = 0; s < p; ++s) out[s] = dualpipe_order(p, m, s);
  return out;
}

// Table 2 of the DeepSeek-V3 report (and the repository's README): bubble
// (PP/2 - 1)(F&B + B - 3W), with B a full backward and F&B a forward and a backward run as one;
// with free communication the pair costs t_f + (t_b + t_w), so the idle is
// (p/2 - 1)(t_f + 2 t_b - t_w) against m(t_f + t_b + t_w) of work per stage (each microbatch
// visits one chunk per stage). Exact for t_f = t_b = t_w; clamped at 0.
double bubble_fraction(int32_t p, int32_t m, int32_t, double t_f, double t_b, double t_w) {
  check_pipeline_costs(t_f, t_b, t_w);
  const double idle = (p / 2 - 1) * std::max(0.0, t_f + 2 * t_b - t_w);
  return idle / (m * (t_f + t_b + t_w) + idle);
}

}  // namespace

// Parameters 2x (stage s holds pieces s and p-1-s of a p-piece model, each piece on two stages)
// and activations of at most p + 1 microbatches per stage (Table 2). The repository asserts
// p even, m even and m >= 2p.
ScheduleInfo dualpipe_schedule() {
  ScheduleInfo s;
  s.value = PipelineSchedule::kDualPipe;
  s.config = clustersim::ParallelConfig::DUALPIPE;
  s.name = "DUALPIPE";
  s.display = "DualPipe";
  s.virtual_stages = true;
  s.exact_virtual_stages = 2;
  s.splits_backward = true;
  s.even_stages = true;
  s.min_microbatches = [](int32_t p) { return 2 * p; };
  s.even_microbatches = true;
  s.bidirectional = true;
  s.planner_virtual_stages = {2};
  s.piece = [](int32_t p, int32_t stage, int32_t chunk) {
    return chunk == 0 ? stage : p - 1 - stage;
  };
  s.orders = orders;
  s.warmup = [](int32_t p, int32_t m, int32_t, int32_t stage) {
    return forwards_before_backward(dualpipe_order(p, m, stage)) - 1;
  };
  s.bubble_fraction = bubble_fraction;
  return s;
}

}  // namespace cs::workload
