// ZB-V: two model chunks per stage placed in a V, backward split into B and W (Qi et al.).
#include <algorithm>

#include "sim/workload/schedules/entries.h"

namespace cs::workload {
namespace {

// Counters of one stage's F, B and W per chunk while its order is written.
struct VOrder {
  std::vector<WorkItem> items;
  int32_t f[2] = {0, 0}, b[2] = {0, 0}, w[2] = {0, 0};
  void add(Phase phase, int32_t chunk) {
    int32_t* count = phase == Phase::kForward ? f : phase == Phase::kBackward ? b : w;
    items.push_back({phase, count[chunk]++, chunk});
  }
};

// The handcrafted ZB-V of the zero-bubble authors (their repository's handcrafted_zb_v: the order
// of the paper's V figure for T_F = T_B = T_W), on stage s of p, as if there were
// n = max(m, 2p-1) microbatches, dropping those >= m afterwards. Chunk 0 is piece s, chunk 1
// piece 2p-1-s. Warm-up: 2(p-s)-1 F0, then s pairs F1 F0, then p-s triples F1 B1 W1. Steady:
// F0 (while any are left) B0 W0 F1 B1 W1 until chunk 1 has run every forward. Cool-down: s pairs
// B0 B1, p-s pairs B0 W0, then the W1's and the W0's left.
std::vector<WorkItem> zb_v_order(int32_t p, int32_t m, int32_t s) {
  const int32_t n = std::max(m, 2 * p - 1);
  VOrder o;
  for (int32_t i = 0; i < 2 * (p - s) - 1; ++i) o.add(Phase::kForward, 0);
  for (int32_t i = 0; i < s; ++i) {
    o.add(Phase::kForward, 1);
    o.add(Phase::kForward, 0);
  }
  for (int32_t i = 0; i < p - s; ++i) {
    o.add(Phase::kForward, 1);
    o.add(Phase::kBackward, 1);
    o.add(Phase::kWeightGrad, 1);
  }
  while (o.f[1] < o.f[0] || o.f[0] < n) {
    if (o.f[0] < n) o.add(Phase::kForward, 0);
    for (int32_t c : {0, 1}) {
      if (c == 1) o.add(Phase::kForward, 1);
      o.add(Phase::kBackward, c);
      o.add(Phase::kWeightGrad, c);
    }
  }
  for (int32_t i = 0; i < s; ++i) {
    o.add(Phase::kBackward, 0);
    o.add(Phase::kBackward, 1);
  }
  for (int32_t i = 0; i < p - s; ++i) {
    o.add(Phase::kBackward, 0);
    o.add(Phase::kWeightGrad, 0);
  }
  for (int32_t c : {1, 0}) {
    while (o.w[c] < o.b[c]) o.add(Phase::kWeightGrad, c);
  }
  std::vector<WorkItem> order;
  order.reserve(6 * static_cast<size_t>(m));
  for (const WorkItem& item : o.items)
    if (item.microbatch < m) order.push_back(item);
  return order;
}

std::vector<std::vector<WorkItem>> orders(int32_t p, int32_t m, int32_t, double, double, double) {
  std::vector<std::vector<WorkItem>> out(static_cast<size_t>(p));
  for (int32_t s = 0; s < p; ++s) out[s] = zb_v_order(p, m, s);
  return out;
}

// The paper gives ZB-V's bubble only for T_F = T_B = T_W = T (a chunk's), where with m >= 2p-1
// every stage idles (p-1)T in a synchronous step: the first forward's climb to the last stage,
// which the authors' optimizer post-validation would overlap with the previous step (Qi et al.,
// "Zero Bubble Pipeline Parallelism", section 6); so (p-1)/(6m + p-1). For other costs there is
// no closed form: the idle time is that of the orders replayed under the costs (replay_idle).
double bubble_fraction(int32_t p, int32_t m, int32_t, double t_f, double t_b, double t_w) {
  check_pipeline_costs(t_f, t_b, t_w);
  const double idle = replay_idle(PipelineSchedule::kZbV, p, m, 2, t_f, t_b, t_w);
  return idle / (2.0 * m * (t_f + t_b + t_w) + idle);
}

}  // namespace

// Activations: every stage holds at most 2p microbatch-chunks, each half a stage's layers, so
// p microbatches' worth, 1F1B's first stage (Qi et al.: ZB-V keeps 1F1B's memory).
ScheduleInfo zb_v_schedule() {
  ScheduleInfo s;
  s.value = PipelineSchedule::kZbV;
  s.config = clustersim::ParallelConfig::ZB_V;
  s.name = "ZB_V";
  s.display = "ZB-V";
  s.virtual_stages = true;
  s.exact_virtual_stages = 2;
  s.splits_backward = true;
  s.planner_virtual_stages = {2};
  // The V: stage s holds pieces s and 2p-1-s, so the last stage's two chunks are adjacent.
  s.piece = [](int32_t p, int32_t stage, int32_t chunk) {
    return chunk == 0 ? stage : 2 * p - 1 - stage;
  };
  s.orders = orders;
  s.warmup = [](int32_t p, int32_t m, int32_t, int32_t stage) {
    return forwards_before_backward(zb_v_order(p, m, stage)) - 1;  // 2p - 1 when m >= 2p - 1
  };
  s.bubble_fraction = bubble_fraction;
  return s;
}

}  // namespace cs::workload
