#include "sim/plan/layout_search.h"

#include <algorithm>

#include "sim/config/config_error.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/schedules/registry.h"
#include "sim/workload/validate.h"

namespace cs::plan {

namespace {

using clustersim::ParallelConfig;
using clustersim::RunConfig;

std::vector<int32_t> divisors(int64_t n, int64_t limit) {
  std::vector<int32_t> out;
  for (int64_t d = 1; d <= std::min(n, limit); ++d)
    if (n % d == 0) out.push_back(static_cast<int32_t>(d));
  return out;
}

bool valid(const RunConfig& c) {
  try {
    workload::validate_run_config(c, 0, "plan");
    run::validate_plan_fields(c, "plan");
    return true;
  } catch (const ConfigError&) {
    return false;
  }
}

// The (schedule, virtual stages) pairs the search tries, as the schedules' entries ask: fewest
// virtual stages first, then in table order.
struct ScheduleChoice {
  ParallelConfig::Schedule schedule;
  int32_t v;
};
std::vector<ScheduleChoice> schedule_choices(int32_t pp) {
  std::vector<ScheduleChoice> out;
  for (const workload::ScheduleInfo& s : workload::schedule_table()) {
    if (s.planner_needs_pipeline && pp < 2) continue;
    for (int32_t v : s.planner_virtual_stages) out.push_back({s.config, v});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ScheduleChoice& a, const ScheduleChoice& b) { return a.v < b.v; });
  return out;
}

// A layout's sizes before the schedule, ZeRO, microbatch and recompute choices.
struct Shape {
  int32_t tp, cp, pp, dp;
  int32_t ep = 1, etp = 0;  // etp 0: the experts' TP is tp
};

// The (ep, etp) pairs to try on a shape: for a mixture of experts, every ep dividing the experts
// and the stage's tp·cp·dp ranks over expert TP, with expert TP tp first, then 1 (Megatron-Core's
// two choices); a dense model has only (1, tp). validate_moe rejects what remains invalid.
std::vector<Shape> expert_choices(const clustersim::ModelConfig& m, const Shape& s) {
  if (!m.has_moe()) return {s};
  std::vector<Shape> out;
  const int64_t stage_ranks = int64_t{s.tp} * s.cp * s.dp;
  for (const int32_t etp : {s.tp, 1}) {
    if (etp == 1 && s.tp == 1) break;
    for (const int32_t ep : divisors(m.moe().num_experts(), m.moe().num_experts())) {
      if (stage_ranks % (int64_t{etp} * ep)) continue;
      Shape e = s;
      e.ep = ep;
      e.etp = etp == s.tp ? 0 : 1;
      out.push_back(e);
    }
  }
  return out;
}

// Megatron-Core numbers ranks tp-cp-ep-dp-pp: pipeline stages outermost, so that an EP group,
// carved from a stage's TP x CP x DP ranks, lies on consecutive GPUs (one server where it fits)
// and its per-layer all-to-alls ride NVLink; with TP_CP_PP_DP it would stride across servers.
void set_rank_order(const Shape& s, std::optional<ParallelConfig::RankOrder> pinned,
                    ParallelConfig& p) {
  if (pinned) {
    p.set_rank_order(*pinned);
  } else if (s.ep > 1) {
    p.set_rank_order(ParallelConfig::TP_CP_DP_PP);
  }
}

// Every schedule, ZeRO stage, microbatch size and recompute choice of `s` that validates.
void add_variants(const RunConfig& base, const Shape& s,
                  std::optional<ParallelConfig::RankOrder> rank_order,
                  std::vector<RunConfig>& out) {
  for (const ScheduleChoice& sc : schedule_choices(s.pp)) {
    for (int32_t zero : {1, 3}) {
      for (int32_t mbs : {1, 2}) {
        for (auto rc : {ParallelConfig::NONE, ParallelConfig::SELECTIVE, ParallelConfig::FULL}) {
          RunConfig c = base;
          auto& p = *c.mutable_parallel();
          p.clear_layers_per_stage();
          p.set_tp(s.tp);
          p.set_cp(s.cp);
          p.set_pp(s.pp);
          p.set_dp(s.dp);
          if (base.model().has_moe()) {
            p.set_ep(s.ep);
            p.set_etp(s.etp);
          }
          set_rank_order(s, rank_order, p);
          p.set_virtual_stages(sc.v);
          p.set_schedule(sc.schedule);
          p.set_sequence_parallel(s.tp > 1);
          p.set_zero_stage(zero);
          p.set_microbatch_size(mbs);
          p.set_recompute(rc);
          p.set_checkpoint_every_k_layers(0);
          p.set_gradient_accumulation_steps(0);
          if (valid(c)) out.push_back(std::move(c));
        }
      }
    }
  }
}

}  // namespace

std::vector<RunConfig> enumerate_layouts(const RunConfig& base, int64_t gpus, int32_t gpus_per_node,
                                         std::optional<ParallelConfig::RankOrder> rank_order) {
  std::vector<RunConfig> out;
  const auto& m = base.model();
  for (int32_t tp : divisors(gpus_per_node, gpus_per_node)) {
    if (gpus % tp) continue;
    for (int32_t cp : {1, 2, 4}) {
      if (gpus % (int64_t{tp} * cp)) continue;
      for (int32_t pp : divisors(m.num_layers(), 128)) {
        const int64_t tcp = int64_t{tp} * cp * pp;
        if (gpus % tcp) continue;
        const Shape shape{tp, cp, pp, static_cast<int32_t>(gpus / tcp)};
        for (const Shape& s : expert_choices(m, shape)) add_variants(base, s, rank_order, out);
      }
    }
  }
  return out;
}

}  // namespace cs::plan
