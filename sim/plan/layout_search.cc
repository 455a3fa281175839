#include "sim/plan/layout_search.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "sim/config/config_error.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/recompute.h"
#include "sim/workload/schedules/registry.h"
#include "sim/workload/stack.h"
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

// A validation error after its source: "plan: parallel.dp = 3 must ..." gives "parallel.dp = 3
// must ...".
std::string_view without_source(std::string_view message) {
  const auto colon = message.find(": ");
  if (colon != std::string_view::npos) message.remove_prefix(colon + 2);
  return message;
}

// Keeps `c` if it validates; otherwise counts it under the field its error names first.
void consider(RunConfig c, LayoutSearch& out) {
  try {
    run::validate_config(c, "plan", run::CheckContext::kPlan);
  } catch (const ConfigError& e) {
    const std::string_view error = without_source(e.what());
    const std::string reason(error.substr(0, error.find(' ')));
    ++out.invalid[reason];
    out.invalid_error.emplace(reason, error);
    return;
  }
  out.layouts.push_back(std::move(c));
}

// `choices` with the base config's own value added at the end when it is not among them: what a
// user already runs is always searched.
template <typename T>
std::vector<T> with_own(std::vector<T> choices, const T& own) {
  if (std::find(choices.begin(), choices.end(), own) == choices.end()) choices.push_back(own);
  return choices;
}

// A (schedule, virtual stages) pair.
struct ScheduleChoice {
  ParallelConfig::Schedule schedule;
  int32_t v;
  bool operator==(const ScheduleChoice&) const = default;
};

// The pairs the search tries, as the schedules' entries ask: fewest virtual stages first, then in
// table order; then the base's own.
std::vector<ScheduleChoice> schedule_choices(int32_t pp, const ParallelConfig& own) {
  std::vector<ScheduleChoice> out;
  for (const workload::ScheduleInfo& s : workload::schedule_table()) {
    if (s.planner_needs_pipeline && pp < 2) continue;
    for (int32_t v : s.planner_virtual_stages) out.push_back({s.config, v});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ScheduleChoice& a, const ScheduleChoice& b) { return a.v < b.v; });
  return with_own(out, {own.schedule(), own.virtual_stages()});
}

// A recompute policy with its checkpoint interval (checkpoint_every_k_layers, 0: none).
struct RecomputeChoice {
  ParallelConfig::Recompute policy;
  int32_t every_k;
  bool operator==(const RecomputeChoice&) const = default;
};

// A layout's sizes before the schedule, ZeRO, microbatch and recompute choices.
struct Shape {
  int32_t tp, cp, pp, dp;
  int32_t ep = 1, etp = 0;  // etp 0: the experts' TP is tp
};

// The choices made on a shape.
struct Choice {
  ScheduleChoice schedule;
  int32_t zero, microbatch;
  RecomputeChoice recompute;
  bool sequence_parallel;
};

// The (ep, etp) pairs to try on a shape: for a mixture of experts, every ep dividing the experts
// and the stage's tp·cp·dp ranks over expert TP, with expert TP tp first, then 1 (Megatron-Core's
// two choices); a dense model has only (1, tp). validate_moe rejects what remains invalid.
std::vector<Shape> expert_choices(const clustersim::ModelConfig& m, const Shape& s) {
  if (!m.has_moe()) return {s};
  std::vector<Shape> out;
  const int64_t stage_ranks = int64_t{s.tp} * s.cp * s.dp;
  const std::vector<int32_t> expert_tps =
      s.tp == 1 ? std::vector<int32_t>{1} : std::vector<int32_t>{s.tp, 1};
  for (const int32_t etp : expert_tps) {
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

// `base` laid out as `s` with the choices `ch`. The base's uneven layers_per_stage stays where
// its pipeline does (the same pp and virtual stages); its sharded_grad_reduce stays at ZeRO 2 and
// 3, the stages whose gradients are sharded; its recompute_modules, activation_fp8_input_store,
// batch, precision, offload and cluster stay on every layout (the cluster sized to the search).
RunConfig variant(const RunConfig& base, const Shape& s, const Choice& ch,
                  std::optional<ParallelConfig::RankOrder> rank_order) {
  RunConfig c = base;
  auto& p = *c.mutable_parallel();
  if (s.pp != base.parallel().pp() || ch.schedule.v != base.parallel().virtual_stages())
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
  p.set_virtual_stages(ch.schedule.v);
  p.set_schedule(ch.schedule.schedule);
  p.set_sequence_parallel(ch.sequence_parallel);
  p.set_zero_stage(ch.zero);
  if (ch.zero < 2) p.set_sharded_grad_reduce(ParallelConfig::EVERY_MICROBATCH);
  p.set_microbatch_size(ch.microbatch);
  p.set_recompute(ch.recompute.policy);
  p.set_checkpoint_every_k_layers(ch.recompute.every_k);
  p.set_gradient_accumulation_steps(0);
  return c;
}

// The checkpointing modes the base's software stack has (Megatron-TE's selective, torchtitan's
// op-level selective), not ones its stack file refuses, and the base's own.
std::vector<RecomputeChoice> recompute_choices(const RunConfig& base) {
  std::vector<RecomputeChoice> modes;
  for (const auto& m : workload::recompute_modes())
    if (workload::stack_allows(base, "parallel.recompute", ParallelConfig::Recompute_Name(m.mode)))
      modes.push_back({m.mode, 0});
  const ParallelConfig& own = base.parallel();
  return with_own<RecomputeChoice>(modes, {own.recompute(), own.checkpoint_every_k_layers()});
}

// Every schedule, ZeRO stage, microbatch size and recompute choice (`recomputes`) of `s`, the
// base's own among them.
void add_variants(const RunConfig& base, const Shape& s,
                  const std::vector<RecomputeChoice>& recomputes,
                  std::optional<ParallelConfig::RankOrder> rank_order, LayoutSearch& out) {
  const ParallelConfig& own = base.parallel();
  std::vector<int32_t> zeros = with_own<int32_t>({1, 3}, own.zero_stage());
  std::vector<int32_t> microbatches = with_own<int32_t>({1, 2}, own.microbatch_size());
  std::sort(zeros.begin(), zeros.end());
  std::sort(microbatches.begin(), microbatches.end());
  for (const ScheduleChoice& sc : schedule_choices(s.pp, own))
    for (const int32_t zero : zeros)
      for (const int32_t mbs : microbatches)
        for (const RecomputeChoice& rc : recomputes)
          consider(variant(base, s, {sc, zero, mbs, rc, s.tp > 1}, rank_order), out);
}

// The base's own layout with its dp scaled to `gpus`, unless the loops already made it: a layout
// the search would not try (an uneven split at a pp not dividing the layers, GPipe, sequence
// parallelism off, cp 8, ...) is still a candidate when it is what the user runs.
void add_own(const RunConfig& base, int64_t gpus,
             std::optional<ParallelConfig::RankOrder> rank_order, LayoutSearch& out) {
  const ParallelConfig& own = base.parallel();
  const int64_t tcp = int64_t{own.tp()} * own.cp() * own.pp();
  if (tcp <= 0 || gpus % tcp != 0) return;
  const Shape s{own.tp(), own.cp(), own.pp(), static_cast<int32_t>(gpus / tcp),
                own.ep(), own.etp()};
  RunConfig c = variant(base, s,
                        {{own.schedule(), own.virtual_stages()},
                         own.zero_stage(),
                         own.microbatch_size(),
                         {own.recompute(), own.checkpoint_every_k_layers()},
                         own.sequence_parallel()},
                        rank_order);
  // Its own rank order too, unless one is pinned.
  if (!rank_order && own.has_rank_order()) c.mutable_parallel()->set_rank_order(own.rank_order());
  if (!rank_order && !own.has_rank_order()) c.mutable_parallel()->clear_rank_order();
  const std::string key = c.parallel().SerializeAsString();
  for (const RunConfig& l : out.layouts)
    if (l.parallel().SerializeAsString() == key) return;
  consider(std::move(c), out);
}

// The pp to try with `tp` and `cp`: those dividing the layers, and with the base's own tp and cp
// its pp when its layers_per_stage splits the layers unevenly (Llama 3 405B's 126 layers over 16
// stages). That split is not tried on other tp and cp: at 16,384 GPUs it would add TP 4 x CP 4
// layouts whose steps take 10 to 25 s each to simulate, several times the whole search's time.
std::vector<int32_t> pipeline_choices(const RunConfig& base, int32_t tp, int32_t cp) {
  const ParallelConfig& own = base.parallel();
  std::vector<int32_t> pps = divisors(base.model().num_layers(), 128);
  if (own.layers_per_stage_size() > 0 && tp == own.tp() && cp == own.cp()) {
    pps = with_own(pps, own.pp());
    std::sort(pps.begin(), pps.end());
  }
  return pps;
}

LayoutSearch search_one_stack(const RunConfig& base, int64_t gpus, int32_t gpus_per_node,
                              std::optional<ParallelConfig::RankOrder> rank_order);

}  // namespace

LayoutSearch search_layouts(const RunConfig& base, int64_t gpus, int32_t gpus_per_node,
                            std::optional<ParallelConfig::RankOrder> rank_order,
                            const std::vector<clustersim::SoftwareStack>& stacks) {
  if (stacks.empty()) return search_one_stack(base, gpus, gpus_per_node, rank_order);
  LayoutSearch out;
  for (const clustersim::SoftwareStack stack : stacks) {
    RunConfig b = base;
    if (stack != base.software_stack()) {
      b.set_software_stack(stack);
      b.clear_stack_variant();
      b.clear_stack_profile();
    }
    LayoutSearch one = search_one_stack(b, gpus, gpus_per_node, rank_order);
    for (auto& l : one.layouts) out.layouts.push_back(std::move(l));
    for (const auto& [reason, n] : one.invalid) out.invalid[reason] += n;
    out.invalid_error.insert(one.invalid_error.begin(), one.invalid_error.end());
  }
  return out;
}

namespace {

// search_layouts for the base's own stack.
LayoutSearch search_one_stack(const RunConfig& preset, int64_t gpus, int32_t gpus_per_node,
                              std::optional<ParallelConfig::RankOrder> rank_order) {
  LayoutSearch out;
  // The searched GPUs are the cluster: a config's own cluster.num_gpus (mixtral-8x7b's 64) gives
  // way to them, so that its layouts on more GPUs are not refused as larger than the cluster.
  RunConfig base = preset;
  if (base.cluster().num_gpus() != 0)
    base.mutable_cluster()->set_num_gpus(static_cast<int32_t>(gpus));
  const auto& m = base.model();
  const std::vector<RecomputeChoice> recomputes = recompute_choices(base);
  for (int32_t tp : divisors(gpus_per_node, gpus_per_node)) {
    if (gpus % tp) continue;
    for (int32_t cp : {1, 2, 4}) {
      if (gpus % (int64_t{tp} * cp)) continue;
      for (int32_t pp : pipeline_choices(base, tp, cp)) {
        const int64_t tcp = int64_t{tp} * cp * pp;
        if (gpus % tcp) continue;
        const Shape shape{tp, cp, pp, static_cast<int32_t>(gpus / tcp)};
        for (const Shape& s : expert_choices(m, shape))
          add_variants(base, s, recomputes, rank_order, out);
      }
    }
  }
  add_own(base, gpus, rank_order, out);
  return out;
}

}  // namespace

std::vector<RunConfig> enumerate_layouts(const RunConfig& base, int64_t gpus, int32_t gpus_per_node,
                                         std::optional<ParallelConfig::RankOrder> rank_order) {
  return search_layouts(base, gpus, gpus_per_node, rank_order).layouts;
}

}  // namespace cs::plan
