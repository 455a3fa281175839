// Interleaved 1F1B: Megatron-LM's schedule over v model chunks per stage (Narayanan et al. 2021).
#include <algorithm>

#include "sim/workload/schedules/entries.h"

namespace cs::workload {
namespace {

int32_t interleaved_warmup(int32_t p, int32_t m, int32_t v, int32_t s) {
  // The 2(p-s-1) rather than 1F1B's p-s-1 lets a chunk's forward outputs come back round the
  // ring of stages before the steady phase needs them.
  return std::min((p - s - 1) * 2 + (v - 1) * p, m * v);
}

// Megatron's virtual microbatch k: groups of p microbatches run through chunk 0, then chunk 1,
// ..., before the next group; backwards visit the chunks in reverse.
WorkItem interleaved_item(int32_t p, int32_t v, int32_t k, bool forward) {
  const int32_t group = k / (p * v);
  const int32_t in_group = k % (p * v);
  const int32_t chunk = in_group / p;
  const int32_t mb = group * p + k % p;
  return forward ? WorkItem{Phase::kForward, mb, chunk}
                 : WorkItem{Phase::kBackward, mb, v - 1 - chunk};
}

std::vector<WorkItem> interleaved_order(int32_t p, int32_t m, int32_t v, int32_t s) {
  const int32_t total = m * v;
  const int32_t warmup = interleaved_warmup(p, m, v, s);
  std::vector<WorkItem> order;
  order.reserve(2 * static_cast<size_t>(total));
  for (int32_t k = 0; k < warmup; ++k) order.push_back(interleaved_item(p, v, k, true));
  for (int32_t k = 0; k < total - warmup; ++k) {
    order.push_back(interleaved_item(p, v, warmup + k, true));
    order.push_back(interleaved_item(p, v, k, false));
  }
  for (int32_t k = total - warmup; k < total; ++k) {
    order.push_back(interleaved_item(p, v, k, false));
  }
  return order;
}

// Megatron-Core's forward_backward_pipelining_with_interleaving: microbatches in groups of p per
// chunk, warm-up min(2(p-s-1) + (v-1)p, m*v) forwards, then 1F1B, then cool-down. Needs
// m % p == 0. With v = 1 it is 1F1B. (Older Megatron-LM ran everything as warm-up when m == p;
// Megatron-Core dropped that special case and so do we.)
std::vector<std::vector<WorkItem>> orders(int32_t p, int32_t m, int32_t v, double, double, double) {
  std::vector<std::vector<WorkItem>> out(static_cast<size_t>(p));
  for (int32_t s = 0; s < p; ++s) {
    // Megatron runs v = 1 through its non-interleaved schedule, whose warm-up is shorter.
    out[s] = v == 1 ? one_f_one_b_order(p, m, s) : interleaved_order(p, m, v, s);
  }
  return out;
}

int32_t warmup(int32_t p, int32_t m, int32_t v, int32_t s) {
  return v > 1 ? interleaved_warmup(p, m, v, s) : one_f_one_b_warmup(p, m, s);
}

// (p-1)/(v*m+p-1): each chunk costs 1/v of the stage, so the fill and drain shrink by v (same
// paper, section 2.2).
double bubble_fraction(int32_t p, int32_t m, int32_t v, double, double, double) {
  const double p1 = p - 1;
  const double md = m;
  return p1 / (v * md + p1);
}

}  // namespace

ScheduleInfo interleaved_schedule() {
  ScheduleInfo s;
  s.value = PipelineSchedule::kInterleaved;
  s.config = clustersim::ParallelConfig::INTERLEAVED;
  s.name = "INTERLEAVED";
  s.display = "interleaved";
  s.virtual_stages = true;
  s.min_virtual_stages = 2;  // v = 1 runs ONE_F_ONE_B's order (see orders)
  s.whole_groups = true;
  s.planner_virtual_stages = {2, 4};  // v = 1 would only repeat 1F1B
  s.orders = orders;
  s.warmup = warmup;
  s.bubble_fraction = bubble_fraction;
  return s;
}

}  // namespace cs::workload
