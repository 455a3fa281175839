// The pipeline schedules by name: one table with an entry per schedule, each entry defined in its
// own file in this folder, and the lookups that replace switches over the schedules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proto/config.pb.h"
#include "sim/workload/pipeline_schedule.h"

namespace cs::workload {

// Everything the simulator needs to know about one schedule. Adding a schedule: its value in
// PipelineSchedule and in ParallelConfig.Schedule (proto/config.proto), a file here whose
// function returns its entry (declared in entries.h), and that function's line in the table
// (registry.cc).
struct ScheduleInfo {
  PipelineSchedule value{};
  clustersim::ParallelConfig::Schedule config{};
  std::string_view name;     // the config and JSON name, ParallelConfig.Schedule's ("ZB_H1")
  std::string_view display;  // for people ("ZB-H1"); with virtual_stages the planner adds " v<v>"

  bool virtual_stages = false;   // runs v > 1 model chunks per stage; all others need v == 1
  bool whole_groups = false;     // needs microbatches % stages == 0
  bool splits_backward = false;  // backward as input gradient (kBackward) and weights (kWeightGrad)
  int32_t exact_virtual_stages = 0;  // > 0: v must be exactly this (ZB-V and DualPipe: 2)
  // The fewest virtual stages that make the schedule itself: interleaving one chunk per stage is
  // another schedule's order (interleaved at v = 1 is 1F1B), which a config must name as such.
  int32_t min_virtual_stages = 1;
  bool even_stages = false;  // DualPipe: pp even, its two halves mirror each other
  // The fewest microbatches, and whether their count must be even (DualPipe: m >= 2p, even).
  int32_t (*min_microbatches)(int32_t p) = nullptr;
  bool even_microbatches = false;
  // Chunk c of stage s holds model piece piece(p, s, c); without it Megatron's c*p + s.
  int32_t (*piece)(int32_t p, int32_t stage, int32_t chunk) = nullptr;
  // Each chunk index is its own path through the stages (DualPipe): p pieces, each held twice.
  bool bidirectional = false;

  // The layout search (sim/plan/planner.cc) tries each of these virtual-stage counts, only with
  // pp > 1 when needs_pipeline; an empty list keeps the schedule out of the search.
  std::vector<int32_t> planner_virtual_stages;
  bool planner_needs_pipeline = true;

  // Every stage's order for checked p, m, v and costs (see pipeline_orders); the costs are those
  // of one F, B and W, and only a schedule that splits the backward need read them.
  std::vector<std::vector<WorkItem>> (*orders)(int32_t p, int32_t m, int32_t v, double t_f,
                                               double t_b, double t_w) = nullptr;
  // Forwards before the steady phase on stage s (see warmup_forwards).
  int32_t (*warmup)(int32_t p, int32_t m, int32_t v, int32_t s) = nullptr;
  // The textbook bubble fraction (see analytic_bubble_fraction); t_b is the full backward when
  // the schedule does not split it.
  double (*bubble_fraction)(int32_t p, int32_t m, int32_t v, double t_f, double t_b,
                            double t_w) = nullptr;
};

// Every schedule, in PipelineSchedule (and ParallelConfig.Schedule) order. Built on first use,
// so it is safe to call from any initialiser.
const std::vector<ScheduleInfo>& schedule_table();

// The entry of a schedule; throws std::invalid_argument for a value with none.
const ScheduleInfo& schedule_info(PipelineSchedule schedule);
const ScheduleInfo& schedule_info(clustersim::ParallelConfig::Schedule schedule);

// The names of the schedules that take virtual stages, joined by `separator` ("INTERLEAVED").
std::string names_with_virtual_stages(std::string_view separator);

}  // namespace cs::workload
