// ZB-H1: zero-bubble pipeline, backward split into input-grad B and weight-grad W (Qi et al. 2023).
#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/workload/schedules/entries.h"

namespace cs::workload {
namespace {

// The 1F1B order of F and B (B = input gradient only), with the W's placed by the list
// scheduling below under a cap of p held microbatches, stage 0's 1F1B peak: so W's fill what would
// be bubbles while no stage holds more than stage 0 does in 1F1B, the paper's memory claim.
// (Deferring W's without that cap gives the same step time at equal costs but leaves the last
// stage holding all m microbatches.) With t_f = t_b = t_w and m >= p the bubble is exactly the
// ZB-H1 formula (bubble_fraction below).
std::vector<std::vector<WorkItem>> zb_h1_orders(int32_t p, int32_t m, int32_t, double t_f,
                                                double t_b, double t_w) {
  std::vector<std::vector<WorkItem>> fb(static_cast<size_t>(p));
  for (int32_t s = 0; s < p; ++s) fb[s] = one_f_one_b_order(p, m, s);
  return place_weight_grads(fb, m, p, t_f, t_b, t_w, "ZB_H1");
}

// (p-1)(t_f+t_b-t_w) / (m(t_f+t_b+t_w) + (p-1)(t_f+t_b-t_w)) (Qi et al. 2023, section 3.1), for
// m >= p: each stage's fill and drain shrink from (p-1)(t_f+t_b+t_w) by the W's that run in
// them. The idle time is clamped at 0 when t_w > t_f + t_b.
double bubble_fraction(int32_t p, int32_t m, int32_t, double t_f, double t_b, double t_w) {
  check_pipeline_costs(t_f, t_b, t_w);
  const double p1 = p - 1;
  const double md = m;
  const double idle = p1 * std::max(0.0, t_f + t_b - t_w);
  const double work = md * (t_f + t_b + t_w);
  return idle / (work + idle);
}

}  // namespace

// A list-scheduling simulation: a free stage runs its next F/B if that is ready; if not, rather
// than idle, its oldest pending W; and before an F that would hold more than `cap` microbatches'
// activations (F run, W not), its oldest pending W. Leftover W's run last. Times only order the
// decisions; they are not returned.
std::vector<std::vector<WorkItem>> place_weight_grads(const std::vector<std::vector<WorkItem>>& fb,
                                                      int32_t m, int32_t cap, double t_f,
                                                      double t_b, double t_w,
                                                      std::string_view name) {
  constexpr double kNever = std::numeric_limits<double>::infinity();
  const auto p = static_cast<int32_t>(fb.size());
  const auto n = static_cast<size_t>(p);
  std::vector<std::vector<WorkItem>> orders(n);
  std::vector<std::vector<double>> f_done(n, std::vector<double>(m, kNever));
  std::vector<std::vector<double>> b_done(n, std::vector<double>(m, kNever));
  std::vector<size_t> next(n, 0);
  std::vector<std::deque<int32_t>> pending_w(n);
  std::vector<int32_t> held(n, 0);  // forwards run whose W has not
  for (int32_t s = 0; s < p; ++s) orders[s].reserve(3 * static_cast<size_t>(m));

  auto ready = [&](int32_t s, const WorkItem& item, double t) {
    if (item.phase == Phase::kForward) {
      return s == 0 || f_done[s - 1][item.microbatch] <= t;
    }
    const bool downstream = s == p - 1 || b_done[s + 1][item.microbatch] <= t;
    return downstream && f_done[s][item.microbatch] <= t;
  };

  // Every decision happens when some item finishes (or at 0): only then can readiness change.
  // Then the stages free decide: those whose item just finished and those left idle before.
  using Finish = std::pair<double, int32_t>;  // (time, stage)
  std::priority_queue<Finish, std::vector<Finish>, std::greater<>> finishes;
  std::vector<int32_t> idle(n), deciding;
  std::iota(idle.begin(), idle.end(), 0);
  for (double t = 0;;) {
    deciding.swap(idle);
    idle.clear();
    while (!finishes.empty() && finishes.top().first == t) {
      deciding.push_back(finishes.top().second);
      finishes.pop();
    }
    std::sort(deciding.begin(), deciding.end());
    for (const int32_t s : deciding) {
      const WorkItem* upcoming = next[s] < fb[s].size() ? &fb[s][next[s]] : nullptr;
      WorkItem pick;
      const bool memory_full = upcoming != nullptr && upcoming->phase == Phase::kForward &&
                               held[s] >= cap && !pending_w[s].empty();
      if (!memory_full && upcoming != nullptr && ready(s, *upcoming, t)) {
        pick = *upcoming;
        ++next[s];
      } else if (!pending_w[s].empty()) {
        pick = {Phase::kWeightGrad, pending_w[s].front(), 0};
        pending_w[s].pop_front();
      } else {
        idle.push_back(s);  // until the next finish makes something ready
        continue;
      }
      double cost = t_w;
      if (pick.phase == Phase::kForward) {
        cost = t_f;
        ++held[s];
        f_done[s][pick.microbatch] = t + cost;
      } else if (pick.phase == Phase::kBackward) {
        cost = t_b;
        pending_w[s].push_back(pick.microbatch);
        b_done[s][pick.microbatch] = t + cost;
      } else {
        --held[s];
      }
      orders[s].push_back(pick);
      finishes.emplace(t + cost, s);
    }
    if (finishes.empty()) break;
    t = finishes.top().first;
  }
  for (int32_t s = 0; s < p; ++s) {
    if (orders[s].size() != 3 * static_cast<size_t>(m)) {
      throw std::logic_error(std::string(name) + " list scheduling left work unscheduled");
    }
  }
  return orders;
}

// The warm-up is 1F1B's: the list scheduling keeps 1F1B's order of F and B.
ScheduleInfo zb_h1_schedule() {
  ScheduleInfo s;
  s.value = PipelineSchedule::kZbH1;
  s.config = clustersim::ParallelConfig::ZB_H1;
  s.name = "ZB_H1";
  s.display = "ZB-H1";
  s.splits_backward = true;
  s.planner_virtual_stages = {1};
  s.orders = zb_h1_orders;
  s.warmup = [](int32_t p, int32_t m, int32_t, int32_t stage) {
    return one_f_one_b_warmup(p, m, stage);
  };
  s.bubble_fraction = bubble_fraction;
  return s;
}

}  // namespace cs::workload
