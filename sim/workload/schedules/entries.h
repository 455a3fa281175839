// What each schedule file in this folder exports for the table (registry.cc), and the pieces of
// 1F1B and the argument checks that other schedules build on. Not for use outside the folder.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/workload/pipeline_schedule.h"
#include "sim/workload/schedules/registry.h"

namespace cs::workload {

ScheduleInfo gpipe_schedule();        // gpipe.cc
ScheduleInfo one_f_one_b_schedule();  // one_f_one_b.cc
ScheduleInfo interleaved_schedule();  // interleaved.cc
ScheduleInfo zb_h1_schedule();        // zb_h1.cc
ScheduleInfo zb_h2_schedule();        // zb_h2.cc
ScheduleInfo zb_v_schedule();         // zb_v.cc
ScheduleInfo dualpipe_schedule();     // dualpipe.cc

// 1F1B's order and warm-up on stage s (one_f_one_b.cc): interleaved runs it when v == 1, and
// ZB-H1 keeps its order of F and B.
int32_t one_f_one_b_warmup(int32_t p, int32_t m, int32_t s);
std::vector<WorkItem> one_f_one_b_order(int32_t p, int32_t m, int32_t s);
// 1F1B's shape for any warm-up (<= m): `warmup` forwards, forward/backward pairs, the backwards
// left; ZB-H2 runs it with its longer warm-up.
std::vector<WorkItem> warmup_then_pairs(int32_t m, int32_t warmup);

// ZB-H1's W placement (zb_h1.cc), shared with ZB-H2: each stage runs its order of F and B (`fb`)
// and, when its next one is not ready or its F would hold more than `cap` microbatches'
// activations, its oldest pending W, under the costs of one F, B and W. `name` is for errors.
std::vector<std::vector<WorkItem>> place_weight_grads(const std::vector<std::vector<WorkItem>>& fb,
                                                      int32_t m, int32_t cap, double t_f,
                                                      double t_b, double t_w,
                                                      std::string_view name);

// Each stage's idle time when `schedule`'s orders run with chunk costs t_f, t_b, t_w (the full
// backward t_b + t_w where the schedule does not split it) and free communication, all stages
// ending together: the step's length less a stage's chunk_passes x m x (t_f + t_b + t_w).
double replay_idle(PipelineSchedule schedule, int32_t p, int32_t m, int32_t v, double t_f,
                   double t_b, double t_w);

// For schedules that put no work in their bubble (GPipe, 1F1B): the bubble fraction
// (p-1)/(m+p-1) of one chunk per stage, whatever the costs.
double unfilled_bubble_fraction(int32_t p, int32_t m, int32_t v, double t_f, double t_b,
                                double t_w);

// The forwards before the first backward of `order` (pipeline_schedule.cc): one more than the
// warm-up of a schedule whose steady phase opens with a forward.
int32_t forwards_before_backward(const std::vector<WorkItem>& order);

// Throws std::invalid_argument unless t_f, t_b and t_w are all positive and finite
// (pipeline_schedule.cc).
void check_pipeline_costs(double t_f, double t_b, double t_w);

}  // namespace cs::workload
