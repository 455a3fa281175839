#include "sim/run/extrapolation.h"

#include <algorithm>
#include <cmath>

#include "sim/workload/model_math.h"
#include "sim/workload/schedules/registry.h"

namespace cs::run {
namespace {

int32_t round_up(int32_t n, int32_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

bool variability_on(const clustersim::RunConfig& config) {
  if (!config.has_variability()) return false;
  const auto& v = config.variability();
  return v.enabled() && (v.has_gpu_speed() || v.has_kernel_jitter() || v.has_links());
}

// Extends a figure seen at the two short runs to the full step.
class SteadySlope {
 public:
  SteadySlope(int32_t shorter, int32_t longer, int32_t full)
      : reach_(static_cast<double>(full - longer) / (longer - shorter)) {}

  double operator()(double shorter, double longer) const {
    return std::max(0.0, unclamped(shorter, longer));
  }
  Time operator()(Time shorter, Time longer) const {
    return std::max(Time{}, unclamped(shorter, longer));
  }
  // The line itself, below zero where the figure shrank between the runs.
  double unclamped(double shorter, double longer) const {
    return longer + (longer - shorter) * reach_;
  }
  Time unclamped(Time shorter, Time longer) const {
    return Time::ps(std::llround(unclamped(static_cast<double>(shorter.count_ps()),
                                           static_cast<double>(longer.count_ps()))));
  }
  template <typename Count>
  Count count(Count shorter, Count longer) const {
    return static_cast<Count>(
        std::llround((*this)(static_cast<double>(shorter), static_cast<double>(longer))));
  }

 private:
  double reach_;  // (full - longer) / (longer - shorter)
};

// A rank's waits trade time as the short runs grow: its pipeline wait can shrink by what its
// TP wait gains. Extended alone, the shrinking wait falls below zero and is clamped there, which
// adds time the rank never spent, so that its figures no longer add up to its step. That time is
// taken back from the rank's largest wait, where the traded time went.
void give_back_clamped_waits(exec::RankStats& s, const exec::RankStats& a, const exec::RankStats& b,
                             const SteadySlope& line) {
  Time added;
  auto add_clamped = [&](Time extended, Time shorter, Time longer) {
    added += extended - line.unclamped(shorter, longer);
  };
  add_clamped(s.pipeline_wait, a.pipeline_wait, b.pipeline_wait);
  add_clamped(s.end_wait, a.end_wait, b.end_wait);
  add_clamped(s.host_wait, a.host_wait, b.host_wait);
  for (std::size_t d = 0; d < s.comm_wait.size(); ++d)
    add_clamped(s.comm_wait[d], a.comm_wait[d], b.comm_wait[d]);
  if (added == Time{}) return;
  Time* largest = &s.pipeline_wait;
  for (Time& wait : s.comm_wait)
    if (wait > *largest) largest = &wait;
  if (s.end_wait > *largest) largest = &s.end_wait;
  *largest = std::max(Time{}, *largest - added);
  s.lead_wait = std::min(s.lead_wait, s.pipeline_wait);
  for (std::size_t d = 0; d < s.comm_wait.size(); ++d)
    s.peer_wait[d] = std::min(s.peer_wait[d], s.comm_wait[d]);
}

exec::RankStats extend(const exec::RankStats& a, const exec::RankStats& b,
                       const SteadySlope& line) {
  exec::RankStats s;
  s.compute = line(a.compute, b.compute);
  s.interference = line(a.interference, b.interference);
  s.host_wait = line(a.host_wait, b.host_wait);
  s.recompute = line(a.recompute, b.recompute);
  s.side_stream = line(a.side_stream, b.side_stream);
  s.side_stream_hold = line(a.side_stream_hold, b.side_stream_hold);
  s.pipeline_wait = line(a.pipeline_wait, b.pipeline_wait);
  for (std::size_t d = 0; d < s.comm_wait.size(); ++d) {
    s.comm_wait[d] = line(a.comm_wait[d], b.comm_wait[d]);
    s.peer_wait[d] = line(a.peer_wait[d], b.peer_wait[d]);
  }
  s.end_wait = line(a.end_wait, b.end_wait);
  s.all_to_all = line(a.all_to_all, b.all_to_all);
  s.all_to_all_wire = line(a.all_to_all_wire, b.all_to_all_wire);
  s.all_to_all_token_cost = line(a.all_to_all_token_cost, b.all_to_all_token_cost);
  s.finish = line(a.finish, b.finish);
  s.lead_wait = line(a.lead_wait, b.lead_wait);
  give_back_clamped_waits(s, a, b, line);
  return s;
}

exec::CommTally extend(const exec::CommTally& a, const exec::CommTally& b,
                       const SteadySlope& line) {
  exec::CommTally t;
  for (std::size_t i = 0; i < t.by_op.size(); ++i) t.by_op[i] = line.count(a.by_op[i], b.by_op[i]);
  for (std::size_t i = 0; i < t.by_dim.size(); ++i)
    t.by_dim[i] = line.count(a.by_dim[i], b.by_dim[i]);
  t.collectives = line.count(a.collectives, b.collectives);
  t.p2p_messages = line.count(a.p2p_messages, b.p2p_messages);
  t.isolated_nvlink_bytes = line.count(a.isolated_nvlink_bytes, b.isolated_nvlink_bytes);
  t.isolated_collectives = line.count(a.isolated_collectives, b.isolated_collectives);
  for (const auto& [kind, longer] : b.by_kind) {
    const auto it = a.by_kind.find(kind);
    const exec::KindCount shorter = it == a.by_kind.end() ? exec::KindCount{} : it->second;
    t.by_kind[kind] = {line.count(shorter.calls, longer.calls),
                       line.count(shorter.bytes, longer.bytes)};
  }
  return t;
}

net::TrafficStats extend(const net::TrafficStats& a, const net::TrafficStats& b,
                         const SteadySlope& line) {
  net::TrafficStats t;
  for (std::size_t i = 0; i < t.bytes_by_class.size(); ++i) {
    t.bytes_by_class[i] = line.count(a.bytes_by_class[i], b.bytes_by_class[i]);
    t.messages_by_class[i] = line.count(a.messages_by_class[i], b.messages_by_class[i]);
  }
  t.messages = line.count(a.messages, b.messages);
  return t;
}

// By group name, in the longer run's order; a group one run lacks had no time there.
std::vector<std::pair<std::string, double>> extend(
    const std::vector<std::pair<std::string, double>>& a,
    const std::vector<std::pair<std::string, double>>& b, const SteadySlope& line) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& entry : b) {
    const auto it =
        std::find_if(a.begin(), a.end(), [&](const auto& g) { return g.first == entry.first; });
    out.emplace_back(entry.first, line(it == a.end() ? 0.0 : it->second, entry.second));
  }
  return out;
}

}  // namespace

ExtrapolationPlan short_runs(const clustersim::ParallelConfig& parallel, int32_t full) {
  const auto& info = workload::schedule_info(workload::pipeline_schedule_of(parallel));
  const int32_t p = std::max(parallel.pp(), 1);
  // The schedule's period in microbatches: Megatron's interleaving runs whole groups of p,
  // DualPipe feeds microbatches in pairs, one from each end.
  const int32_t period = info.whole_groups ? p : info.even_microbatches ? 2 : 1;
  const int32_t first = std::max(2 * p, info.min_microbatches ? info.min_microbatches(p) : 1);
  return {round_up(first, period), round_up(std::max(p, 2), period), full};
}

std::optional<ExtrapolationPlan> plan_extrapolation(const clustersim::RunConfig& config) {
  const auto& sim = config.simulation();
  if (!sim.microbatch_extrapolation() || variability_on(config)) return std::nullopt;
  const int32_t m = workload::num_microbatches(config.parallel());
  if (m <= sim.extrapolation_min_microbatches()) return std::nullopt;
  const ExtrapolationPlan plan = short_runs(config.parallel(), m);
  if (plan.first_check() >= m) return std::nullopt;
  return plan;
}

clustersim::RunConfig with_microbatches(const clustersim::RunConfig& config, int32_t microbatches) {
  clustersim::RunConfig out = config;
  auto& par = *out.mutable_parallel();
  par.clear_gradient_accumulation_steps();
  par.set_global_batch_size(microbatches * std::max(par.dp(), 1) *
                            std::max(par.microbatch_size(), 1));
  return out;
}

bool is_steady(const StepOutcome& a, const StepOutcome& b, const StepOutcome& c) {
  const double growth = static_cast<double>((c.step_end - b.step_end).count_ps());
  const double tolerance = 1e-3 * std::abs(growth);
  auto alike = [&](double x, double y, double z) {
    return std::abs((z - y) - (y - x)) <= tolerance;
  };
  auto ps = [](Time t) { return static_cast<double>(t.count_ps()); };
  if (!alike(ps(a.step_end), ps(b.step_end), ps(c.step_end))) return false;
  // Rank means of each time figure.
  auto mean = [&](const StepOutcome& o, auto field) {
    double sum = 0;
    for (const auto& st : o.stats) sum += ps(field(st));
    return sum / static_cast<double>(std::max<std::size_t>(o.stats.size(), 1));
  };
  auto figure_alike = [&](auto field) {
    return alike(mean(a, field), mean(b, field), mean(c, field));
  };
  using S = exec::RankStats;
  if (!figure_alike([](const S& s) { return s.compute; }) ||
      !figure_alike([](const S& s) { return s.pipeline_wait; }) ||
      !figure_alike([](const S& s) { return s.interference; }) ||
      !figure_alike([](const S& s) { return s.side_stream_hold; }) ||
      !figure_alike([](const S& s) { return s.host_wait; }) ||
      !figure_alike([](const S& s) { return s.end_wait; }))
    return false;
  for (std::size_t d = 0; d < exec::RankStats{}.comm_wait.size(); ++d)
    if (!figure_alike([d](const S& s) { return s.comm_wait[d]; })) return false;
  return true;
}

StepOutcome extrapolate(const StepOutcome& shorter, int32_t n_shorter, const StepOutcome& longer,
                        int32_t n_longer, int32_t full) {
  const SteadySlope line(n_shorter, n_longer, full);
  StepOutcome out;
  out.stats.reserve(longer.stats.size());
  for (std::size_t r = 0; r < longer.stats.size(); ++r)
    out.stats.push_back(extend(shorter.stats[r], longer.stats[r], line));
  out.step_end = line(shorter.step_end, longer.step_end);
  out.comm = extend(shorter.comm, longer.comm, line);
  out.traffic = extend(shorter.traffic, longer.traffic, line);
  out.kernel_groups = extend(shorter.kernel_groups, longer.kernel_groups, line);
  out.matmul_flops_per_gpu = line(shorter.matmul_flops_per_gpu, longer.matmul_flops_per_gpu);
  out.offload = longer.offload;
  out.offload.d2h_s = line(shorter.offload.d2h_s, longer.offload.d2h_s);
  out.offload.cpu_adam_s = line(shorter.offload.cpu_adam_s, longer.offload.cpu_adam_s);
  out.offload.h2d_s = line(shorter.offload.h2d_s, longer.offload.h2d_s);
  out.topology_name = longer.topology_name;
  out.fleet = longer.fleet;
  return out;
}

}  // namespace cs::run
