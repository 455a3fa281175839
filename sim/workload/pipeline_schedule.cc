#include "sim/workload/pipeline_schedule.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace cs::workload {
namespace {

constexpr std::array<std::pair<PipelineSchedule, std::string_view>, 4> kNames{{
    {PipelineSchedule::kGpipe, "GPIPE"},
    {PipelineSchedule::kOneFOneB, "ONE_F_ONE_B"},
    {PipelineSchedule::kInterleaved, "INTERLEAVED"},
    {PipelineSchedule::kZbH1, "ZB_H1"},
}};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) ==
                  std::toupper(static_cast<unsigned char>(y));
         });
}

void validate(PipelineSchedule schedule, int32_t p, int32_t m, int32_t v) {
  const std::string name(to_string(schedule));
  if (p < 1 || m < 1 || v < 1) {
    throw std::invalid_argument(name + " pipeline: stages (" + std::to_string(p) +
                                "), microbatches (" + std::to_string(m) + ") and virtual stages (" +
                                std::to_string(v) + ") must all be at least 1");
  }
  if (schedule == PipelineSchedule::kInterleaved) {
    if (m % p != 0) {
      throw std::invalid_argument("INTERLEAVED pipeline: microbatches (" + std::to_string(m) +
                                  ") must be a multiple of the stages (" + std::to_string(p) +
                                  "), as Megatron-LM requires");
    }
  } else if (v != 1) {
    throw std::invalid_argument(name + " pipeline: virtual stages must be 1 (got " +
                                std::to_string(v) + "); only INTERLEAVED uses model chunks");
  }
}

void validate_costs(double t_f, double t_b, double t_w) {
  for (double t : {t_f, t_b, t_w}) {
    if (!(t > 0) || !std::isfinite(t)) {
      throw std::invalid_argument("pipeline costs t_f, t_b, t_w must be positive and finite");
    }
  }
}

int32_t one_f_one_b_warmup(int32_t p, int32_t m, int32_t s) {
  return std::min(p - s - 1, m);
}

int32_t interleaved_warmup(int32_t p, int32_t m, int32_t v, int32_t s) {
  // The 2(p-s-1) rather than 1F1B's p-s-1 lets a chunk's forward outputs come back round the
  // ring of stages before the steady phase needs them.
  return std::min((p - s - 1) * 2 + (v - 1) * p, m * v);
}

std::vector<WorkItem> gpipe_order(int32_t m) {
  std::vector<WorkItem> order;
  order.reserve(2 * static_cast<size_t>(m));
  for (int32_t mb = 0; mb < m; ++mb) order.push_back({Phase::kForward, mb, 0});
  for (int32_t mb = 0; mb < m; ++mb) order.push_back({Phase::kBackward, mb, 0});
  return order;
}

std::vector<WorkItem> one_f_one_b_order(int32_t p, int32_t m, int32_t s) {
  const int32_t warmup = one_f_one_b_warmup(p, m, s);
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

// The list-scheduling simulation documented at pipeline_orders (kZbH1). Times only order the
// decisions; they are not returned.
std::vector<std::vector<WorkItem>> zb_h1_orders(int32_t p, int32_t m, double t_f, double t_b,
                                                double t_w) {
  constexpr double kNever = std::numeric_limits<double>::infinity();
  const auto n = static_cast<size_t>(p);
  std::vector<std::vector<WorkItem>> fb(n), orders(n);
  std::vector<std::vector<double>> f_done(n, std::vector<double>(m, kNever));
  std::vector<std::vector<double>> b_done(n, std::vector<double>(m, kNever));
  std::vector<size_t> next(n, 0);
  std::vector<std::deque<int32_t>> pending_w(n);
  std::vector<int32_t> held(n, 0);  // forwards run whose W has not
  std::vector<double> free_at(n, 0.0);
  for (int32_t s = 0; s < p; ++s) {
    fb[s] = one_f_one_b_order(p, m, s);
    orders[s].reserve(3 * static_cast<size_t>(m));
  }

  auto ready = [&](int32_t s, const WorkItem& item, double t) {
    if (item.phase == Phase::kForward) {
      return s == 0 || f_done[s - 1][item.microbatch] <= t;
    }
    const bool downstream = s == p - 1 || b_done[s + 1][item.microbatch] <= t;
    return downstream && f_done[s][item.microbatch] <= t;
  };

  // Every decision happens when some item finishes (or at 0): only then can readiness change.
  std::priority_queue<double, std::vector<double>, std::greater<>> events;
  events.push(0.0);
  while (!events.empty()) {
    const double t = events.top();
    while (!events.empty() && events.top() == t) events.pop();
    for (int32_t s = 0; s < p; ++s) {
      if (free_at[s] > t) continue;
      const WorkItem* upcoming = next[s] < fb[s].size() ? &fb[s][next[s]] : nullptr;
      WorkItem pick;
      const bool memory_full = upcoming != nullptr && upcoming->phase == Phase::kForward &&
                               held[s] >= p && !pending_w[s].empty();
      if (!memory_full && upcoming != nullptr && ready(s, *upcoming, t)) {
        pick = *upcoming;
        ++next[s];
      } else if (!pending_w[s].empty()) {
        pick = {Phase::kWeightGrad, pending_w[s].front(), 0};
        pending_w[s].pop_front();
      } else {
        continue;  // idle until the next finish makes something ready
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
      free_at[s] = t + cost;
      orders[s].push_back(pick);
      events.push(t + cost);
    }
  }
  for (int32_t s = 0; s < p; ++s) {
    if (orders[s].size() != 3 * static_cast<size_t>(m)) {
      throw std::logic_error("ZB_H1 list scheduling left work unscheduled");
    }
  }
  return orders;
}

}  // namespace

std::string_view to_string(PipelineSchedule schedule) {
  for (const auto& [value, name] : kNames) {
    if (value == schedule) return name;
  }
  return "?";
}

PipelineSchedule parse_pipeline_schedule(std::string_view text) {
  std::string choices;
  for (const auto& [value, name] : kNames) {
    if (iequals(name, text)) return value;
    choices += choices.empty() ? "" : ", ";
    choices += name;
  }
  throw std::invalid_argument("unknown pipeline schedule '" + std::string(text) +
                              "' (expected one of: " + choices + ")");
}

std::vector<std::vector<WorkItem>> pipeline_orders(PipelineSchedule schedule, int32_t stages,
                                                   int32_t microbatches, int32_t virtual_stages) {
  return pipeline_orders(schedule, stages, microbatches, virtual_stages, 1.0, 1.0, 1.0);
}

std::vector<std::vector<WorkItem>> pipeline_orders(PipelineSchedule schedule, int32_t stages,
                                                   int32_t microbatches, int32_t virtual_stages,
                                                   double t_f, double t_b, double t_w) {
  validate(schedule, stages, microbatches, virtual_stages);
  validate_costs(t_f, t_b, t_w);
  const int32_t p = stages;
  const int32_t m = microbatches;
  if (schedule == PipelineSchedule::kZbH1) return zb_h1_orders(p, m, t_f, t_b, t_w);
  std::vector<std::vector<WorkItem>> orders(static_cast<size_t>(p));
  for (int32_t s = 0; s < p; ++s) {
    switch (schedule) {
      case PipelineSchedule::kGpipe:
        orders[s] = gpipe_order(m);
        break;
      case PipelineSchedule::kInterleaved:
        // Megatron runs v = 1 through its non-interleaved schedule, whose warm-up is shorter.
        orders[s] = virtual_stages == 1 ? one_f_one_b_order(p, m, s)
                                        : interleaved_order(p, m, virtual_stages, s);
        break;
      case PipelineSchedule::kOneFOneB:
      case PipelineSchedule::kZbH1:
        orders[s] = one_f_one_b_order(p, m, s);
        break;
    }
  }
  return orders;
}

int32_t warmup_forwards(PipelineSchedule schedule, int32_t stages, int32_t microbatches,
                        int32_t virtual_stages, int32_t stage) {
  validate(schedule, stages, microbatches, virtual_stages);
  if (stage < 0 || stage >= stages) {
    throw std::invalid_argument("stage " + std::to_string(stage) + " is outside 0.." +
                                std::to_string(stages - 1));
  }
  switch (schedule) {
    case PipelineSchedule::kGpipe:
      return microbatches;
    case PipelineSchedule::kInterleaved:
      if (virtual_stages > 1) {
        return interleaved_warmup(stages, microbatches, virtual_stages, stage);
      }
      [[fallthrough]];
    case PipelineSchedule::kOneFOneB:
    case PipelineSchedule::kZbH1:
      return one_f_one_b_warmup(stages, microbatches, stage);
  }
  return 0;
}

int32_t peak_in_flight(const std::vector<WorkItem>& order) {
  int32_t now = 0;
  int32_t peak = 0;
  for (const WorkItem& item : order) {
    if (item.phase == Phase::kForward) peak = std::max(peak, ++now);
    if (item.phase == Phase::kBackward) --now;
  }
  return peak;
}

int32_t peak_held_activations(const std::vector<WorkItem>& order) {
  std::set<std::pair<int32_t, int32_t>> split;
  for (const WorkItem& item : order) {
    if (item.phase == Phase::kWeightGrad) split.insert({item.microbatch, item.chunk});
  }
  int32_t now = 0;
  int32_t peak = 0;
  for (const WorkItem& item : order) {
    const bool has_w = split.count({item.microbatch, item.chunk}) > 0;
    if (item.phase == Phase::kForward) {
      peak = std::max(peak, ++now);
    } else if (item.phase == (has_w ? Phase::kWeightGrad : Phase::kBackward)) {
      --now;  // the last backward item of this microbatch-chunk frees its activations
    }
  }
  return peak;
}

double analytic_bubble_fraction(PipelineSchedule schedule, int32_t stages, int32_t microbatches,
                                int32_t virtual_stages, double t_f, double t_b, double t_w) {
  validate(schedule, stages, microbatches, virtual_stages);
  const double p1 = stages - 1;
  const double m = microbatches;
  switch (schedule) {
    case PipelineSchedule::kGpipe:
    case PipelineSchedule::kOneFOneB:
      return p1 / (m + p1);
    case PipelineSchedule::kInterleaved:
      return p1 / (virtual_stages * m + p1);
    case PipelineSchedule::kZbH1: {
      validate_costs(t_f, t_b, t_w);
      const double idle = p1 * std::max(0.0, t_f + t_b - t_w);
      const double work = m * (t_f + t_b + t_w);
      return idle / (work + idle);
    }
  }
  return 0.0;
}

}  // namespace cs::workload
