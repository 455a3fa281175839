#include "sim/plan/planner.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>

#include "sim/compute/gpu_hardware.h"
#include "sim/compute/gpu_profile.h"
#include "sim/compute/kernel_cost.h"
#include "sim/config/field_checks.h"
#include "sim/core/batch.h"
#include "sim/net/topology_builder.h"
#include "sim/plan/nvlink_domain.h"
#include "sim/report/json.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/model_math.h"
#include "sim/workload/recompute.h"
#include "sim/workload/schedules/registry.h"
#include "sim/workload/stack.h"

namespace cs::plan {

namespace {

using Ref = report::FieldRef;

// A candidate's figures, described once: `plan --json` lists the kJson ones in this order after
// the layout's fields, and ranks under MPI send the kWire ones to rank 0 (what the ranking, its
// explanation and the best run's line read). The fit and the estimate are computed on every rank.
const report::Field<Candidate> kCandidateFields[] = {
    {.key = "iteration_time_s",
     .at = [](Candidate& c) -> Ref { return &c.report.iteration_time_s; }},
    {.key = "congestion_aware",
     .at = [](Candidate& c) -> Ref { return &c.refined; },
     .shown = report::kJson},
    {.key = "analytical_iteration_time_s",
     .at = [](Candidate& c) -> Ref { return &c.search_iteration_time_s; },
     .shown = report::kJson},
    {.key = "mfu", .at = [](Candidate& c) -> Ref { return &c.report.mfu; }},
    {.key = "bubble_fraction", .at = [](Candidate& c) -> Ref { return &c.report.bubble_fraction; }},
    {.key = "exposed_comm_s",
     .at = [](Candidate& c) -> Ref { return c.report.exposed_s.data(); },
     .shown = report::kJson | report::kFlatJson | report::kWire,
     .parts = report::Parts::kDims,
     .column = "exposed_{}_s"},
    {.key = "peak_memory_gb",
     .at = [](Candidate& c) -> Ref { return &c.fit.peak; },
     .shown = report::kJson,
     .unit = 1e9},
    {.key = "estimate_s",
     .at = [](Candidate& c) -> Ref { return &c.estimate_s; },
     .shown = report::kJson},
    {.key = "dollars", .at = [](Candidate& c) -> Ref { return &c.report.cost.dollars; }},
    {.key = "goodput", .at = [](Candidate& c) -> Ref { return &c.report.cost.goodput; }},
    {.key = "mtbf_hours", .at = [](Candidate& c) -> Ref { return &c.report.cost.mtbf_hours; }},
    {.key = "interruptions_per_day",
     .at = [](Candidate& c) -> Ref { return &c.report.cost.interruptions_total_per_day; }},
    {.key = "interruptions_per_day_by_cause",
     .at = [](Candidate& c) -> Ref { return c.report.cost.interruptions_per_day.data(); },
     .parts = report::Parts::kCauses},
    {.key = "effective_dollars",
     .at = [](Candidate& c) -> Ref { return &c.report.cost.effective_dollars; }},
    {.key = "wall_days", .at = [](Candidate& c) -> Ref { return &c.report.cost.wall_days; }},
    // Read by the text ranking and its explanation only.
    {.key = "gpus",
     .at = [](Candidate& c) -> Ref { return &c.report.gpus; },
     .shown = report::kWire},
    {.key = "compute_s",
     .at = [](Candidate& c) -> Ref { return &c.compute_s; },
     .shown = report::kWire},
    {.key = "price_per_gpu_hour",
     .at = [](Candidate& c) -> Ref { return &c.report.cost.price_per_gpu_hour; },
     .shown = report::kWire},
    {.key = "train_tokens",
     .at = [](Candidate& c) -> Ref { return &c.report.cost.train_tokens; },
     .shown = report::kWire},
    {.key = "gpu_hours",
     .at = [](Candidate& c) -> Ref { return &c.report.cost.gpu_hours; },
     .shown = report::kWire},
    {.key = "effective_wall_days",
     .at = [](Candidate& c) -> Ref { return &c.report.cost.effective_wall_days; },
     .shown = report::kWire},
};

}  // namespace

std::span<const report::Field<Candidate>> candidate_fields() {
  return kCandidateFields;
}

std::string serialize_candidate_figures(std::size_t index, const Candidate& c) {
  report::WireWriter w;
  w.put(static_cast<int64_t>(index));
  report::write_wire(w, candidate_fields(), c);
  return w.take();
}

std::size_t parse_candidate_figures(const std::string& line, std::vector<Candidate>& candidates) {
  try {
    report::WireReader in(line);
    const int64_t index = in.integer();
    if (index < 0 || static_cast<std::size_t>(index) >= candidates.size())
      throw std::invalid_argument("no candidate " + std::to_string(index));
    report::read_wire(in, candidate_fields(), candidates[static_cast<std::size_t>(index)]);
    return static_cast<std::size_t>(index);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("bad plan figures from an MPI rank: ") + e.what());
  }
}

namespace {

// What the explanation compares: compute per GPU, the mean over the stages.
double mean_compute_s(const report::StepReport& r) {
  double s = 0;
  for (const auto& st : r.stages) s += st.compute_s;
  return r.stages.empty() ? 0.0 : s / static_cast<double>(r.stages.size());
}

using clustersim::ParallelConfig;
using clustersim::RunConfig;

std::string gpu_of(const RunConfig& c) {
  return compute::gpu_or_default(c.cluster().gpu());
}

// What the whole run costs with its interruptions; one that never finishes ranks last.
double run_dollars(const Candidate& c) {
  const auto& cost = c.report.cost;
  return cost.goodput > 0 ? cost.effective_dollars : std::numeric_limits<double>::infinity();
}

double objective_value(const Candidate& c, Objective o) {
  return o == Objective::kCost ? run_dollars(c) : c.report.iteration_time_s;
}

// The biggest differences between `c` and the winner, in seconds of step time.
std::string why(const Candidate& c, const Candidate& best) {
  const auto& r = c.report;
  const auto& b = best.report;
  char buf[320];
  std::snprintf(buf, sizeof buf, "headroom %.1f GB; bubble %.1f%%; exposed comm %.2f s (",
                (c.fit.capacity - c.fit.peak) / 1e9, 100 * r.bubble_fraction,
                std::accumulate(r.exposed_s.begin(), r.exposed_s.end(), 0.0));
  std::string s = buf;
  for (const auto& d : workload::kDims) {
    std::snprintf(buf, sizeof buf, "%s%s %.2f", d.dim == workload::kDims[0].dim ? "" : ", ",
                  std::string(d.label).c_str(), r.exposed(d.dim));
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "); compute %.2f s; MFU %.1f%%", c.compute_s, 100 * r.mfu);
  s += buf;
  if (&c == &best) return s;
  struct Diff {
    std::string what;
    double seconds;
  };
  std::vector<Diff> d = {
      {"bubble", r.bubble_fraction * r.iteration_time_s - b.bubble_fraction * b.iteration_time_s},
      {"compute (recompute, kernel shapes)", c.compute_s - best.compute_s}};
  for (const auto& dim : workload::kDims)
    d.push_back({"exposed " + std::string(dim.label), r.exposed(dim.dim) - b.exposed(dim.dim)});
  std::sort(d.begin(), d.end(), [](const Diff& x, const Diff& y) { return x.seconds > y.seconds; });
  s += "\n      loses to #1 on: ";
  int shown = 0;
  for (const auto& x : d) {
    if (x.seconds <= 1e-3 || shown == 2) break;
    std::snprintf(buf, sizeof buf, "%s%s +%.2f s", shown ? ", " : "", x.what.c_str(), x.seconds);
    s += buf;
    ++shown;
  }
  if (shown == 0) s += "nothing large (within noise)";
  return s;
}

}  // namespace

std::string short_layout(const RunConfig& c) {
  const auto& p = c.parallel();
  std::string s = workload::dims_text(workload::dim_sizes(p), " ");
  const workload::ScheduleInfo& schedule = workload::schedule_info(p.schedule());
  if (c.model().has_moe() && workload::expert_tp_of(p) != p.tp())
    s += ", ETP " + std::to_string(workload::expert_tp_of(p));
  s += ", " + std::string(schedule.display);
  if (schedule.virtual_stages) s += " v" + std::to_string(p.virtual_stages());
  s += ", mbs " + std::to_string(p.microbatch_size()) + ", ZeRO-" + std::to_string(p.zero_stage());
  if (const std::string recompute = workload::recompute_label(p); !recompute.empty())
    s += ", " + recompute;
  if (c.software_stack() != clustersim::MEGATRON_TE || !c.stack_variant().empty())
    s += ", " + workload::stack_label(c);
  return s;
}

namespace {

// Counts a valid layout that does not fit under its reason, keeping the smallest HBM overflow.
void count_misfit(const RunConfig& c, const FitCheck& fit, Refusals& r) {
  if (fit.peak <= fit.capacity) {
    ++r.over_host;
    return;
  }
  if (r.over_hbm++ == 0 || fit.peak < r.least_peak) {
    r.least_peak = fit.peak;
    r.least_layout = short_layout(c);
  }
}

// The validation refusals, most first.
std::vector<std::pair<std::string, int64_t>> by_count(
    const std::map<std::string, int64_t>& invalid) {
  std::vector<std::pair<std::string, int64_t>> v(invalid.begin(), invalid.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

// "parallel.global_batch_size (96), parallel.pp (12)": the field each refusal names, how often.
std::string invalid_text(const std::map<std::string, int64_t>& invalid) {
  std::string s;
  for (const auto& [reason, n] : by_count(invalid))
    s += (s.empty() ? "" : ", ") + reason + " (" + std::to_string(n) + ")";
  return s;
}

// Why the ranking is empty: no valid layout, or none that fits (with the smallest that does not).
void print_refusals(std::ostream& out, const PlanResult& result, const PlanOptions& options) {
  const Refusals& r = result.refused;
  int64_t invalid = 0;
  for (const auto& [reason, n] : r.invalid) invalid += n;
  char buf[512];
  if (result.enumerated == 0) {
    std::snprintf(buf, sizeof buf,
                  "  no valid layout on %lld GPUs%s: all %lld variants tried fail validation on ",
                  static_cast<long long>(options.gpus),
                  options.objective == Objective::kCost ? " or the fewer tried" : "",
                  static_cast<long long>(invalid));
    out << buf << invalid_text(r.invalid) << "\n";
    // The commonest refusal in full: a field of the config itself reads as it would for `run`.
    if (invalid > 0) {
      const auto error = r.invalid_error.find(by_count(r.invalid).front().first);
      if (error != r.invalid_error.end()) out << "  the first of them: " << error->second << "\n";
    }
    return;
  }
  if (r.over_hbm > 0) {
    std::snprintf(buf, sizeof buf,
                  "  none fits: %lld layouts need more than the %.1f GB of HBM per GPU; the least, "
                  "%.1f GB: %s\n",
                  static_cast<long long>(r.over_hbm), r.capacity / 1e9, r.least_peak / 1e9,
                  r.least_layout.c_str());
    out << buf;
  }
  if (r.over_host > 0) {
    std::snprintf(buf, sizeof buf,
                  "  %lld layouts fit in HBM but their offloaded states overflow host memory or "
                  "NVMe\n",
                  static_cast<long long>(r.over_host));
    out << buf;
  }
  if (invalid > 0)
    out << "  refused as invalid: " << invalid << " variants (" << invalid_text(r.invalid) << ")\n";
}

// A candidate's config as the planner simulates it: on `network`, and with steady-state
// microbatch extrapolation unless the base config chose (a step of ~1,000 microbatches per
// replica is simulated as two of a few dozen; sim/run/extrapolation.h).
RunConfig simulated_config(const RunConfig& config, clustersim::NetworkMode network) {
  RunConfig sim = config;
  sim.set_network(network);
  if (!sim.simulation().has_microbatch_extrapolation())
    sim.mutable_simulation()->set_microbatch_extrapolation(true);
  return sim;
}

// Where no layout on options.gpus GPUs is valid: the search on the most GPUs below, whole servers,
// at least half as many and at most kServersBelow servers fewer, that has a valid one
// (result.fallback_gpus), or none.
std::optional<LayoutSearch> search_below(const RunConfig& base, const PlanOptions& options,
                                         PlanResult& result) {
  constexpr int64_t kServersBelow = 64;  // a search each: bounded on the largest clusters
  const int64_t step = std::max<int64_t>(options.gpus_per_node, 1);
  const int64_t lowest = std::max({step, options.gpus / 2, options.gpus - kServersBelow * step});
  for (int64_t g = (options.gpus - 1) / step * step; g >= lowest; g -= step) {
    LayoutSearch search =
        search_layouts(base, g, options.gpus_per_node, options.rank_order, options.stacks);
    if (search.layouts.empty()) continue;
    result.fallback_gpus = g;
    return search;
  }
  return std::nullopt;
}

// Every layout of the base on options.gpus GPUs (or the most below with a valid one:
// search_below; and, for cost, on half and a quarter of them) that fits in HBM less the reserve;
// the others are counted in result.refused.
std::vector<Candidate> fitting_candidates(const RunConfig& base, const PlanOptions& options,
                                          PlanResult& result) {
  const double capacity = usable_hbm_bytes(base, options.reserve_bytes);
  std::vector<int64_t> counts = {options.gpus};
  // Cheapest may not be fastest: fewer GPUs at a higher MFU can cost less in total.
  if (options.objective == Objective::kCost)
    for (int64_t g = options.gpus / 2; g >= options.gpus_per_node && counts.size() < 3; g /= 2)
      counts.push_back(g);
  std::vector<Candidate> fitting;
  result.refused.capacity = capacity;
  for (int64_t g : counts) {
    LayoutSearch search =
        search_layouts(base, g, options.gpus_per_node, options.rank_order, options.stacks);
    if (g == options.gpus && search.layouts.empty())
      if (auto below = search_below(base, options, result)) search = std::move(*below);
    for (const auto& [reason, n] : search.invalid) result.refused.invalid[reason] += n;
    result.refused.invalid_error.insert(search.invalid_error.begin(), search.invalid_error.end());
    for (auto& c : search.layouts) {
      ++result.enumerated;
      Candidate cand;
      cand.fit = check_fit(c, capacity);
      if (!cand.fit.fits) {
        count_misfit(c, cand.fit, result.refused);
        continue;
      }
      cand.config = std::move(c);
      cand.estimate_s = estimate_step_seconds(cand.config, options.gpus_per_node);
      fitting.push_back(std::move(cand));
    }
  }
  return fitting;
}

// Keeps the best `keep` candidates by the analytical estimate (in dollars when the objective is
// cost: time x GPUs), best first.
void keep_best_estimates(std::vector<Candidate>& fitting, const PlanOptions& options,
                         int64_t keep) {
  auto pre = [&](const Candidate& c) {
    const auto& p = c.config.parallel();
    const auto g = static_cast<double>(workload::world_of(workload::dim_sizes(p)));
    return options.objective == Objective::kCost ? c.estimate_s * g : c.estimate_s;
  };
  std::sort(fitting.begin(), fitting.end(),
            [&](const Candidate& a, const Candidate& b) { return pre(a) < pre(b); });
  if (static_cast<int64_t>(fitting.size()) > keep) fitting.resize(static_cast<std::size_t>(keep));
}

// Reports that a pass (search, then refine) of `total` candidates starts.
void start_pass(const PlanOptions& options, std::size_t total) {
  if (options.on_progress) options.on_progress(0, total);
}

// Simulates this rank's candidates (`mine`) on the search network, on `jobs` threads. A candidate
// that fails is left out; the first error is returned in case none succeeds ("" when none).
std::string simulate_candidates(std::vector<Candidate>& fitting,
                                const std::vector<std::size_t>& mine, const PlanOptions& options,
                                int32_t jobs) {
  std::mutex error_mutex;
  std::string first_error;
  start_pass(options, mine.size());
  const auto simulate = [&](std::size_t k) {
    Candidate& c = fitting[mine[k]];
    const RunConfig sim = simulated_config(c.config, options.search_network);
    try {
      c.report = run::simulate_step(sim, "plan candidate " + short_layout(sim));
      c.simulated = true;
      c.compute_s = mean_compute_s(c.report);
    } catch (const std::exception& e) {
      const std::lock_guard lock(error_mutex);
      if (first_error.empty()) first_error = e.what();
    }
  };
  run_batch(mine.size(), jobs, simulate, options.on_progress);
  return first_error;
}

// Under MPI: brings every rank's simulated figures to rank 0, which marks those candidates
// simulated. Returns false on the other ranks, whose part is done.
bool gather_candidate_figures(std::vector<Candidate>& fitting, const std::vector<std::size_t>& mine,
                              const PlanOptions& options) {
  std::string text;
  for (const std::size_t i : mine)
    if (fitting[i].simulated) text += serialize_candidate_figures(i, fitting[i]) + '\n';
  const std::vector<std::string> all = options.gather(text);
  if (options.rank != 0) return false;
  for (const std::string& line : gathered_lines(all)) {
    fitting[parse_candidate_figures(line, fitting)].simulated = true;
  }
  return true;
}

// Sorts [begin, end) by the objective, keeping the order of ties.
void sort_by_objective(std::vector<Candidate>::iterator begin, std::vector<Candidate>::iterator end,
                       Objective objective) {
  std::stable_sort(begin, end, [&](const Candidate& a, const Candidate& b) {
    return objective_value(a, objective) < objective_value(b, objective);
  });
}

// The leaders again, with congestion: ranked among themselves ahead of the rest.
void refine_leaders(PlanResult& result, const PlanOptions& options, int32_t jobs) {
  const auto refine = std::min<std::size_t>(result.ranked.size(),
                                            static_cast<std::size_t>(std::max(options.refine, 0)));
  if (refine == 0) return;
  start_pass(options, refine);
  const auto simulate = [&](std::size_t i) {
    Candidate& c = result.ranked[i];
    const RunConfig sim = simulated_config(c.config, clustersim::CONGESTION_AWARE);
    c.report = run::simulate_step(sim, "plan candidate " + short_layout(sim));
    c.refined = true;
    c.compute_s = mean_compute_s(c.report);
  };
  run_batch(refine, jobs, simulate, options.on_progress);
  sort_by_objective(result.ranked.begin(),
                    result.ranked.begin() + static_cast<std::ptrdiff_t>(refine), options.objective);
  result.refined = static_cast<int64_t>(refine);
}

// Whether the config's fabric hashes each connection across servers onto its paths (static or
// multi-flow ECMP, after cluster.load_balancing) while the analytical network and the
// pre-estimate pool its links as if sprayed (effects.analytical_hashed_paths off): collisions
// that only the congestion-aware network then sees.
bool misses_hash_collisions(const RunConfig& config) {
  const auto& cluster = config.cluster();
  if (cluster.topology().empty() || config.effects().analytical_hashed_paths()) return false;
  auto desc = net::resolve_topology(cluster.topology());
  net::override_load_balancing(desc, cluster.load_balancing(), "cluster.load_balancing");
  return desc.load_balancing().mode() != clustersim::LoadBalancing::ADAPTIVE;
}

}  // namespace

PlanResult plan_layouts(const RunConfig& base, const PlanOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  PlanResult result;
  std::vector<Candidate> fitting = fitting_candidates(base, options, result);
  result.fitting = static_cast<int64_t>(fitting.size());
  const auto seconds_since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  };
  if (options.simulate == 0) {  // the pre-estimate's ranking, which every rank computes alike
    keep_best_estimates(fitting, options, std::max(options.top, 1));
    if (options.rank == 0) result.ranked = std::move(fitting);
    result.wall_s = seconds_since_start();
    return result;
  }
  keep_best_estimates(fitting, options, options.simulate);

  const int32_t jobs =
      options.jobs > 0 ? options.jobs
                       : static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  // The threads of an MPI rank share its candidates.
  const std::vector<std::size_t> mine = rank_share(fitting.size(), options.rank, options.ranks);
  const std::string first_error = simulate_candidates(fitting, mine, options, jobs);
  if (options.ranks > 1 && !gather_candidate_figures(fitting, mine, options)) return result;
  for (auto& c : fitting)
    if (c.simulated) result.ranked.push_back(std::move(c));
  result.simulated = static_cast<int64_t>(result.ranked.size());
  if (result.ranked.empty() && !first_error.empty()) throw std::runtime_error(first_error);
  sort_by_objective(result.ranked.begin(), result.ranked.end(), options.objective);
  for (auto& c : result.ranked) c.search_iteration_time_s = c.report.iteration_time_s;
  refine_leaders(result, options, jobs);
  result.wall_s = seconds_since_start();
  return result;
}

double usable_hbm_bytes(const RunConfig& base, double reserve_bytes, std::string_view what) {
  const std::string name = gpu_of(base);
  const auto capacity =
      static_cast<double>(compute::hbm_capacity_bytes(compute::load_gpu_profile(name)));
  const std::string reserve = std::string(what) + " " + number_text(reserve_bytes / 1e9) + " GB";
  if (!(reserve_bytes >= 0)) throw std::invalid_argument(reserve + " must not be negative");
  if (reserve_bytes >= capacity)
    throw std::invalid_argument(reserve + " leaves no HBM for any layout: one " + name + " has " +
                                number_text(capacity / 1e9) + " GB");
  return capacity - reserve_bytes;
}

MinGpus find_min_gpus(const RunConfig& base, int64_t max_gpus, int32_t gpus_per_node,
                      std::optional<ParallelConfig::RankOrder> rank_order, double reserve_bytes) {
  const double capacity = usable_hbm_bytes(base, reserve_bytes);
  MinGpus out;
  for (int64_t g = 1; g <= max_gpus; g = g < gpus_per_node ? g + 1 : g + gpus_per_node) {
    bool found = false;
    for (auto& c : enumerate_layouts(base, g, gpus_per_node, rank_order)) {
      const FitCheck f = check_fit(c, capacity);
      if (!f.fits) continue;
      if (!found || f.peak < out.layout.fit.peak) {
        out.layout.config = c;
        out.layout.fit = f;
      }
      found = true;
    }
    if (found) {
      out.gpus = g;
      return out;
    }
  }
  return out;
}

namespace {

// A ranked layout that was not simulated (--simulate 0): its GPUs, its memory and its estimate.
std::string estimated_row(std::size_t i, const Candidate& c) {
  char buf[512];
  std::snprintf(
      buf, sizeof buf, "  %-3zu %-62s %6lld %9s %10s %6s %7s %8.1f %9.3f %11s\n", i + 1,
      short_layout(c.config).c_str(),
      static_cast<long long>(workload::world_of(workload::dim_sizes(c.config.parallel()))), "-",
      "-", "-", "-", c.fit.peak / 1e9, c.estimate_s, "-");
  return buf;
}

}  // namespace

void print_plan(std::ostream& out, const PlanResult& result, const PlanOptions& options) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%lld layouts enumerated, %lld fit in memory, %lld simulated (%s network, best "
                "by analytical pre-estimate), the best %lld again congestion-aware, %.1f s\n",
                static_cast<long long>(result.enumerated), static_cast<long long>(result.fitting),
                static_cast<long long>(result.simulated),
                options.search_network == clustersim::ANALYTICAL ? "analytical" : "as configured",
                static_cast<long long>(result.refined), result.wall_s);
  out << buf;
  if (result.fallback_gpus > 0)
    out << "no valid layout on " << options.gpus << " GPUs: planned on " << result.fallback_gpus
        << ", the most whole servers below with one\n";
  out << "objective: " << (options.objective == Objective::kCost ? "cost" : "time") << "\n\n";
  const std::size_t n =
      std::min<std::size_t>(result.ranked.size(), static_cast<std::size_t>(options.top));
  std::snprintf(buf, sizeof buf, "  %-3s %-62s %6s %9s %10s %6s %7s %8s %9s %11s\n", "#", "layout",
                "GPUs", "step s", "analyt. s", "MFU", "bubble", "mem GB", "est. s", "run $ *");
  out << buf;
  const bool simulated = !result.ranked.empty() && result.ranked.front().simulated;
  for (std::size_t i = 0; i < n; ++i) {
    const Candidate& c = result.ranked[i];
    const auto& r = c.report;
    if (!c.simulated) {
      out << estimated_row(i, c);
      continue;
    }
    // A step without congestion is marked: only the refined leaders have one with it.
    std::snprintf(buf, sizeof buf,
                  "  %-3zu %-62s %6d %8.3f%s %10.3f %5.1f%% %6.1f%% %8.1f %9.3f %11.4g\n", i + 1,
                  short_layout(c.config).c_str(), r.gpus, r.iteration_time_s, c.refined ? " " : "*",
                  c.search_iteration_time_s, 100 * r.mfu, 100 * r.bubble_fraction, c.fit.peak / 1e9,
                  c.estimate_s, r.cost.effective_dollars);
    out << buf;
  }
  if (!simulated && n > 0)
    out << "  - not simulated (--simulate 0): ranked by the analytical pre-estimate alone; "
           "--simulate N simulates the best N\n";
  if (simulated && n > static_cast<std::size_t>(result.refined)) {
    out << "  * analytical network only (congestion-free); raise --refine to rank it with "
           "congestion\n";
    const Candidate& best = result.ranked.front();
    if (best.report.gpus > options.gpus_per_node && misses_hash_collisions(best.config))
      out << "    on " << best.config.cluster().topology()
          << " ECMP hashes connections onto paths; with effects.analytical_hashed_paths off "
             "only --refine's runs see the collisions\n";
  }
  if (simulated || n == 0)
    out << "  run $ *: with the interruptions, checkpoints and restarts of `reliability` "
           "(goodput)\n";
  out << "\nwhy:\n";
  if (result.ranked.empty()) print_refusals(out, result, options);
  for (std::size_t i = 0; i < n; ++i) {
    const Candidate& c = result.ranked[i];
    if (c.simulated) {
      out << "  #" << i + 1 << ": " << why(c, result.ranked.front()) << '\n';
    } else {
      std::snprintf(buf, sizeof buf, "  #%zu: estimated %.3f s; headroom %.1f GB\n", i + 1,
                    c.estimate_s, (c.fit.capacity - c.fit.peak) / 1e9);
      out << buf;
    }
    const std::string domain = nvlink_domain_line(c.config, options.gpus_per_node);
    if (!domain.empty()) out << "      NVLink domain: " << domain << '\n';
  }
  if (simulated) {
    const auto& c = result.ranked.front().report.cost;
    std::snprintf(buf, sizeof buf,
                  "\nbest: %.3g tokens in %.1f days, %.3g GPU-hours, $%.4g at $%.2f per GPU-hour; "
                  "with failures (goodput %.1f%%) %.1f days, $%.4g\n",
                  c.train_tokens, c.wall_days, c.gpu_hours, c.dollars, c.price_per_gpu_hour,
                  100 * c.goodput, c.effective_wall_days, c.effective_dollars);
    out << buf;
    std::snprintf(buf, sizeof buf, "interruptions (MTBF %.2f h): ", c.mtbf_hours);
    out << buf << report::interruptions_text(c) << '\n';
  }
}

namespace {

// One ranked layout: its sizes, schedule and figures, as `plan --json` lists it.
report::Json candidate_json(const Candidate& c, int32_t gpus_per_node) {
  const auto& p = c.config.parallel();
  report::Json j = {{"layout", short_layout(c.config)}};
  const workload::DimSizes sizes = workload::dim_sizes(p);
  for (const auto& d : workload::kDims)
    j[std::string(d.key)] = sizes[static_cast<std::size_t>(d.dim)];
  // A MoE layout's expert TP and rank order (a dense one's JSON is as it was before MoE).
  if (c.config.model().has_moe()) {
    j["etp"] = workload::expert_tp_of(p);
    j["rank_order"] = ParallelConfig::RankOrder_Name(p.rank_order());
  }
  j["virtual_stages"] = p.virtual_stages();
  j["schedule"] = workload::schedule_info(p.schedule()).name;
  j["microbatch_size"] = p.microbatch_size();
  j["zero_stage"] = p.zero_stage();
  j["recompute"] = clustersim::ParallelConfig::Recompute_Name(p.recompute());
  j["software_stack"] = workload::stack_label(c.config);
  j["simulated"] = c.simulated;
  if (c.simulated) {
    report::add_json(j, candidate_fields(), c);
  } else {  // --simulate 0: what the ranking read, the fit and the pre-estimate
    j["peak_memory_gb"] = c.fit.peak / 1e9;
    j["estimate_s"] = c.estimate_s;
  }
  const std::string domain = nvlink_domain_line(c.config, gpus_per_node);
  if (!domain.empty()) j["nvlink_domain"] = domain;
  return j;
}

}  // namespace

void write_plan_json(std::ostream& out, const PlanResult& result, const PlanOptions& options) {
  report::Json j = {{"gpus", options.gpus},
                    {"fallback_gpus", result.fallback_gpus},
                    {"objective", options.objective == Objective::kCost ? "cost" : "time"},
                    {"enumerated", result.enumerated},
                    {"fitting", result.fitting},
                    {"simulated", result.simulated},
                    {"refined", result.refined},
                    {"ranked", report::Json::array()}};
  for (const Candidate& c : result.ranked)
    j["ranked"].push_back(candidate_json(c, options.gpus_per_node));
  const Refusals& r = result.refused;
  report::Json refused = {
      {"invalid", report::Json::object()}, {"over_hbm", r.over_hbm}, {"over_host", r.over_host}};
  for (const auto& [reason, n] : r.invalid) refused["invalid"][reason] = n;
  if (r.over_hbm > 0) {
    refused["least_memory_gb"] = r.least_peak / 1e9;
    refused["least_memory_layout"] = r.least_layout;
  }
  j["refused"] = refused;
  report::write_document(out, j);
}

}  // namespace cs::plan
