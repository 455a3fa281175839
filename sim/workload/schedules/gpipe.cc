// GPipe: all forwards, then all backwards (Huang et al. 2019).
#include "sim/workload/schedules/entries.h"

namespace cs::workload {
namespace {

// Forwards 0..m-1, then backwards 0..m-1 in the same order (as PyTorch's
// torch.distributed.pipelining ScheduleGPipe), the same on every stage; v must be 1.
std::vector<std::vector<WorkItem>> orders(int32_t p, int32_t m, int32_t, double, double, double) {
  std::vector<WorkItem> order;
  order.reserve(2 * static_cast<size_t>(m));
  for (int32_t mb = 0; mb < m; ++mb) order.push_back({Phase::kForward, mb, 0});
  for (int32_t mb = 0; mb < m; ++mb) order.push_back({Phase::kBackward, mb, 0});
  return std::vector<std::vector<WorkItem>>(static_cast<size_t>(p), order);
}

}  // namespace

// Every forward is warm-up: m of them precede the first backward. The bubble is (p-1)/(m+p-1)
// whatever t_f and t_b (Narayanan et al. 2021, section 2.2), as 1F1B's, at the cost of holding
// all m microbatches' activations; so the planner never tries it.
ScheduleInfo gpipe_schedule() {
  ScheduleInfo s;
  s.value = PipelineSchedule::kGpipe;
  s.config = clustersim::ParallelConfig::GPIPE;
  s.name = "GPIPE";
  s.display = "GPipe";
  s.orders = orders;
  s.warmup = [](int32_t, int32_t m, int32_t, int32_t) { return m; };
  s.bubble_fraction = unfilled_bubble_fraction;
  return s;
}

}  // namespace cs::workload
