#include "sim/workload/pipeline_schedule.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/workload/schedules/entries.h"
#include "sim/workload/schedules/registry.h"

namespace cs::workload {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) ==
                  std::toupper(static_cast<unsigned char>(y));
         });
}

const ScheduleInfo& validate(PipelineSchedule schedule, int32_t p, int32_t m, int32_t v) {
  const ScheduleInfo& info = schedule_info(schedule);
  const std::string name(info.name);
  if (p < 1 || m < 1 || v < 1) {
    throw std::invalid_argument(name + " pipeline: stages (" + std::to_string(p) +
                                "), microbatches (" + std::to_string(m) + ") and virtual stages (" +
                                std::to_string(v) + ") must all be at least 1");
  }
  if (info.whole_groups && m % p != 0) {
    throw std::invalid_argument(name + " pipeline: microbatches (" + std::to_string(m) +
                                ") must be a multiple of the stages (" + std::to_string(p) +
                                "), as Megatron-LM requires");
  }
  if (info.exact_virtual_stages > 0 && v != info.exact_virtual_stages) {
    throw std::invalid_argument(name + " pipeline: virtual stages must be " +
                                std::to_string(info.exact_virtual_stages) + " (got " +
                                std::to_string(v) + "): each stage holds two model chunks");
  }
  if (info.even_stages && p % 2 != 0) {
    throw std::invalid_argument(name + " pipeline: stages (" + std::to_string(p) +
                                ") must be even, its two halves mirror each other");
  }
  if (info.min_microbatches != nullptr && m < info.min_microbatches(p)) {
    throw std::invalid_argument(name + " pipeline: microbatches (" + std::to_string(m) +
                                ") must be at least " + std::to_string(info.min_microbatches(p)));
  }
  if (info.even_microbatches && m % 2 != 0) {
    throw std::invalid_argument(name + " pipeline: microbatches (" + std::to_string(m) +
                                ") must be even, half are fed from each end");
  }
  if (!info.virtual_stages && v != 1) {
    const auto& table = schedule_table();
    const bool one = std::count_if(table.begin(), table.end(),
                                   [](const ScheduleInfo& s) { return s.virtual_stages; }) == 1;
    throw std::invalid_argument(
        name + " pipeline: virtual stages must be 1 (got " + std::to_string(v) + "); only " +
        names_with_virtual_stages(" and ") + (one ? " uses" : " use") + " model chunks");
  }
  return info;
}

ChunkRef find_piece(const ScheduleInfo& info, int32_t p, int32_t v, int32_t piece, int32_t lane) {
  for (int32_t s = 0; s < p; ++s) {
    for (int32_t c = 0; c < v; ++c) {
      if (info.bidirectional && c != lane) continue;
      if (model_piece(info.value, s, c, p) == piece) return {s, c};
    }
  }
  return {};
}

// The chunk holding the piece `step` away from (stage, chunk) on the same path.
ChunkRef neighbour(PipelineSchedule schedule, int32_t stage, int32_t chunk, int32_t p, int32_t v,
                   int32_t step) {
  const ScheduleInfo& info = schedule_info(schedule);
  if (stage < 0 || stage >= p || chunk < 0 || chunk >= v) {
    throw std::invalid_argument("chunk " + std::to_string(chunk) + " of stage " +
                                std::to_string(stage) + " is outside the pipeline");
  }
  const int32_t piece = model_piece(schedule, stage, chunk, p) + step;
  if (piece < 0 || piece >= model_pieces(schedule, p, v)) return {};
  return find_piece(info, p, v, piece, chunk);
}

}  // namespace

int32_t model_pieces(PipelineSchedule schedule, int32_t stages, int32_t virtual_stages) {
  return schedule_info(schedule).bidirectional ? stages : stages * virtual_stages;
}

int32_t model_piece(PipelineSchedule schedule, int32_t stage, int32_t chunk, int32_t stages) {
  const ScheduleInfo& info = schedule_info(schedule);
  return info.piece != nullptr ? info.piece(stages, stage, chunk) : chunk * stages + stage;
}

ChunkRef forward_source(PipelineSchedule schedule, int32_t stage, int32_t chunk, int32_t stages,
                        int32_t virtual_stages) {
  return neighbour(schedule, stage, chunk, stages, virtual_stages, -1);
}

ChunkRef forward_target(PipelineSchedule schedule, int32_t stage, int32_t chunk, int32_t stages,
                        int32_t virtual_stages) {
  return neighbour(schedule, stage, chunk, stages, virtual_stages, +1);
}

int32_t chunk_passes(PipelineSchedule schedule, int32_t virtual_stages) {
  return schedule_info(schedule).bidirectional ? 1 : virtual_stages;
}

int32_t forwards_before_backward(const std::vector<WorkItem>& order) {
  int32_t n = 0;
  for (const WorkItem& item : order) {
    if (item.phase != Phase::kForward) break;
    ++n;
  }
  return n;
}

void check_pipeline_costs(double t_f, double t_b, double t_w) {
  for (double t : {t_f, t_b, t_w}) {
    if (!(t > 0) || !std::isfinite(t)) {
      throw std::invalid_argument("pipeline costs t_f, t_b, t_w must be positive and finite");
    }
  }
}

std::string_view to_string(PipelineSchedule schedule) {
  for (const ScheduleInfo& s : schedule_table()) {
    if (s.value == schedule) return s.name;
  }
  return "?";
}

PipelineSchedule parse_pipeline_schedule(std::string_view text) {
  std::string choices;
  for (const ScheduleInfo& s : schedule_table()) {
    if (iequals(s.name, text)) return s.value;
    choices += choices.empty() ? "" : ", ";
    choices += s.name;
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
  const ScheduleInfo& info = validate(schedule, stages, microbatches, virtual_stages);
  check_pipeline_costs(t_f, t_b, t_w);
  return info.orders(stages, microbatches, virtual_stages, t_f, t_b, t_w);
}

int32_t warmup_forwards(PipelineSchedule schedule, int32_t stages, int32_t microbatches,
                        int32_t virtual_stages, int32_t stage) {
  const ScheduleInfo& info = validate(schedule, stages, microbatches, virtual_stages);
  if (stage < 0 || stage >= stages) {
    throw std::invalid_argument("stage " + std::to_string(stage) + " is outside 0.." +
                                std::to_string(stages - 1));
  }
  return info.warmup(stages, microbatches, virtual_stages, stage);
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
  const ScheduleInfo& info = validate(schedule, stages, microbatches, virtual_stages);
  return info.bubble_fraction(stages, microbatches, virtual_stages, t_f, t_b, t_w);
}

double replayed_span(PipelineSchedule schedule, int32_t p, int32_t m, int32_t v, double t_f,
                     double t_b, double t_w,
                     const std::function<double(int32_t stage, const WorkItem& item,
                                                const WorkItem* previous)>& cost) {
  const auto all = pipeline_orders(schedule, p, m, v, t_f, t_b, t_w);
  // When each item ended, by chunk (stage s, chunk c: s * v + c), phase and microbatch; infinite
  // until it has run. Flat, as the planner replays every layout it ranks.
  constexpr double kNotYet = std::numeric_limits<double>::infinity();
  std::vector<double> done(static_cast<std::size_t>(p) * v * 3 * m, kNotYet);
  const auto slot = [&](ChunkRef ref, Phase phase, int32_t microbatch) {
    return ((static_cast<std::size_t>(ref.stage) * v + ref.chunk) * 3 +
            static_cast<std::size_t>(phase)) *
               m +
           microbatch;
  };
  const auto at = [&](ChunkRef ref, Phase phase, int32_t microbatch) {
    return ref.exists() ? done[slot(ref, phase, microbatch)] : 0.0;
  };
  // Each chunk's neighbours along its microbatches' path, looked up once.
  std::vector<ChunkRef> source, target;
  for (int32_t s = 0; s < p; ++s)
    for (int32_t c = 0; c < v; ++c) {
      source.push_back(forward_source(schedule, s, c, p, v));
      target.push_back(forward_target(schedule, s, c, p, v));
    }
  // When an item may start: its input (the previous piece's forward, the next piece's backward
  // or, for the last piece, its own forward; its own B for a W) has finished.
  const auto ready_at = [&](int32_t s, const WorkItem& item) {
    const ChunkRef own{s, item.chunk};
    const int32_t mb = item.microbatch;
    const auto chunk = static_cast<std::size_t>(s) * v + item.chunk;
    if (item.phase == Phase::kWeightGrad) return at(own, Phase::kBackward, mb);
    if (item.phase == Phase::kForward) return at(source[chunk], Phase::kForward, mb);
    return std::max(at(target[chunk], Phase::kBackward, mb), at(own, Phase::kForward, mb));
  };
  std::vector<size_t> next(static_cast<size_t>(p), 0);
  std::vector<double> free_at(static_cast<size_t>(p), 0.0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int32_t s = 0; s < p; ++s) {
      for (; next[s] < all[s].size(); ++next[s], moved = true) {
        const WorkItem& item = all[s][next[s]];
        const double ready = ready_at(s, item);
        if (ready == kNotYet) break;
        free_at[s] = std::max(free_at[s], ready) +
                     cost(s, item, next[s] > 0 ? &all[s][next[s] - 1] : nullptr);
        done[slot({s, item.chunk}, item.phase, item.microbatch)] = free_at[s];
      }
    }
  }
  for (int32_t s = 0; s < p; ++s)
    if (next[s] != all[s].size())
      throw std::logic_error(std::string(to_string(schedule)) + " order deadlocks");
  return *std::max_element(free_at.begin(), free_at.end());
}

double replay_idle(PipelineSchedule schedule, int32_t p, int32_t m, int32_t v, double t_f,
                   double t_b, double t_w) {
  const double t_back = schedule_info(schedule).splits_backward ? t_b : t_b + t_w;
  const auto uniform = [&](int32_t, const WorkItem& item, const WorkItem*) {
    return item.phase == Phase::kForward ? t_f : item.phase == Phase::kBackward ? t_back : t_w;
  };
  const double work = static_cast<double>(chunk_passes(schedule, v)) * m * (t_f + t_b + t_w);
  return replayed_span(schedule, p, m, v, t_f, t_b, t_w, uniform) - work;
}

double idle_slots(PipelineSchedule schedule, int32_t stages, int32_t microbatches,
                  int32_t virtual_stages, double t_f, double t_b, double t_w) {
  // The textbook forms hold from m >= p (ZB-H1) or m >= 2p - 1 (ZB-H2, ZB-V's equal costs);
  // below, the orders themselves say how long the stages wait.
  if (microbatches < 2 * stages)
    return replay_idle(schedule, stages, microbatches, virtual_stages, t_f, t_b, t_w) /
           (t_f + t_b + t_w);
  const double bubble =
      analytic_bubble_fraction(schedule, stages, microbatches, virtual_stages, t_f, t_b, t_w);
  const double work = static_cast<double>(chunk_passes(schedule, virtual_stages)) * microbatches;
  return bubble / (1 - bubble) * work;
}

}  // namespace cs::workload
