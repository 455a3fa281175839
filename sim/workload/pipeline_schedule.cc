#include "sim/workload/pipeline_schedule.h"

#include <algorithm>
#include <cctype>
#include <cmath>
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

}  // namespace cs::workload
