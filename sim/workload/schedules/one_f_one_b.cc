// 1F1B: PipeDream-Flush, Megatron-LM's non-interleaved schedule (Narayanan et al. 2021).
#include <algorithm>

#include "sim/workload/schedules/entries.h"

namespace cs::workload {
namespace {

// min(p-s-1, m) warm-up forwards, then forward/backward pairs, then the remaining backwards
// (Megatron's forward_backward_pipelining_without_interleaving); v must be 1.
std::vector<std::vector<WorkItem>> orders(int32_t p, int32_t m, int32_t, double, double, double) {
  std::vector<std::vector<WorkItem>> out(static_cast<size_t>(p));
  for (int32_t s = 0; s < p; ++s) out[s] = one_f_one_b_order(p, m, s);
  return out;
}

}  // namespace

int32_t one_f_one_b_warmup(int32_t p, int32_t m, int32_t s) {
  return std::min(p - s - 1, m);
}

std::vector<WorkItem> one_f_one_b_order(int32_t p, int32_t m, int32_t s) {
  return warmup_then_pairs(m, one_f_one_b_warmup(p, m, s));
}

std::vector<WorkItem> warmup_then_pairs(int32_t m, int32_t warmup) {
  std::vector<WorkItem> order;
  order.reserve(2 * static_cast<size_t>(m));
  for (int32_t mb = 0; mb < warmup; ++mb) order.push_back({Phase::kForward, mb, 0});
  for (int32_t i = 0; i < m - warmup; ++i) {
    order.push_back({Phase::kForward, warmup + i, 0});
    order.push_back({Phase::kBackward, i, 0});
  }
  for (int32_t mb = m - warmup; mb < m; ++mb) order.push_back({Phase::kBackward, mb, 0});
  return order;
}

double unfilled_bubble_fraction(int32_t p, int32_t m, int32_t, double, double, double) {
  const double p1 = p - 1;
  return p1 / (m + p1);
}

// The bubble is GPipe's, (p-1)/(m+p-1), whatever t_f and t_b (Narayanan et al. 2021, section
// 2.2: bubble (p-1)(t_f+t_b) against m(t_f+t_b) of work); 1F1B only bounds the activations held,
// to min(p-s, m) microbatches on stage s.
ScheduleInfo one_f_one_b_schedule() {
  ScheduleInfo s;
  s.value = PipelineSchedule::kOneFOneB;
  s.config = clustersim::ParallelConfig::ONE_F_ONE_B;
  s.name = "ONE_F_ONE_B";
  s.display = "1F1B";
  s.planner_virtual_stages = {1};
  s.planner_needs_pipeline = false;  // the schedule of every layout without a pipeline
  s.orders = orders;
  s.warmup = [](int32_t p, int32_t m, int32_t, int32_t stage) {
    return one_f_one_b_warmup(p, m, stage);
  };
  s.bubble_fraction = unfilled_bubble_fraction;
  return s;
}

}  // namespace cs::workload
