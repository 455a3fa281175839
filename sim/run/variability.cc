#include "sim/run/variability.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

#include "sim/config/field_checks.h"
#include "sim/net/link_degradation.h"

namespace cs::run {

namespace {

using clustersim::VariabilityConfig;
using google::protobuf::RepeatedField;

// Far beyond any real GPU's spread; a typo such as 80 for 0.8 fails.
constexpr double kMaxSpeed = 10;
// A GPU a hundred times slower than its peers is broken, not slow (reliability models that); a
// speed near 0 would also stretch a kernel past the picosecond clock and wrap it negative.
constexpr double kMinSpeed = 0.01;

std::string num(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

std::string at(const std::string& field, int i) {
  return field + "[" + std::to_string(i) + "]";
}

// Each entry a rank of the run, none twice.
void check_ranks(const RepeatedField<int32_t>& ranks, int32_t world, const std::string& source,
                 const std::string& field) {
  std::set<int32_t> seen;
  for (int i = 0; i < ranks.size(); ++i) {
    const int32_t r = ranks[i];
    if (r < 0 || r >= world)
      config_fail(source, at(field, i) + " = " + std::to_string(r) +
                              " is not a rank of this run (0 to " + std::to_string(world - 1) +
                              ")");
    if (!seen.insert(r).second)
      config_fail(source, at(field, i) + " = " + std::to_string(r) + " names a rank twice");
  }
}

// One factor per entry of a list of `n`, or one for all; each in (min, max] (or [min, max] where
// min > 0).
void check_factors(const RepeatedField<double>& factors, int n, const std::string& list, double min,
                   double max, const std::string& source, const std::string& field) {
  if (n == 0 && !factors.empty()) config_fail(source, field + " is set but " + list + " is empty");
  if (n > 0 && factors.size() != 1 && factors.size() != n)
    config_fail(source, field + " has " + std::to_string(factors.size()) +
                            " entries; it needs 1, or one per entry of " + list + " (" +
                            std::to_string(n) + ")");
  for (int i = 0; i < factors.size(); ++i)
    if (!((min > 0 ? factors[i] >= min : factors[i] > 0) && factors[i] <= max))
      config_fail(source, at(field, i) + " = " + num(factors[i]) + " must be in " +
                              (min > 0 ? "[" + num(min) : std::string("(0")) + ", " + num(max) +
                              "]");
}

double factor_of(const RepeatedField<double>& factors, int i) {
  return factors.size() == 1 ? factors[0] : factors[i];
}

void check_speed(const clustersim::GpuSpeedConfig& s, int32_t world, const std::string& source) {
  const std::string f = "variability.gpu_speed.";
  check_ranks(s.slow_ranks(), world, source, f + "slow_ranks");
  check_factors(s.slow_speeds(), s.slow_ranks_size(), f + "slow_ranks", kMinSpeed, kMaxSpeed,
                source, f + "slow_speeds");
  require_non_negative(s.relative_std(), source, f + "relative_std");
  if (s.relative_std() > 1)
    config_fail(source, f + "relative_std must be at most 1 (is " + num(s.relative_std()) + ")");
  require_range(s.min_speed(), kMinSpeed, kMaxSpeed, source, f + "min_speed",
                "a GPU 100x slower than its peers is failed, not slow");
  if (!(s.max_speed() >= s.min_speed() && s.max_speed() <= kMaxSpeed))
    config_fail(source, f + "max_speed must be in [min_speed, " + num(kMaxSpeed) + "] (is " +
                            num(s.max_speed()) + ")");
}

void check_jitter(const clustersim::KernelJitterConfig& j, const std::string& source) {
  const std::string f = "variability.kernel_jitter.cv";
  require_non_negative(j.cv(), source, f);
  if (j.cv() > 1) config_fail(source, f + " must be at most 1 (is " + num(j.cv()) + ")");
  if (j.distribution() == clustersim::KernelJitterConfig::NORMAL && j.cv() >= 1.0 / 3)
    config_fail(source, f + " must be below 1/3 with the NORMAL distribution, or a kernel could " +
                            "take no time (is " + num(j.cv()) + ")");
}

void check_links(const clustersim::LinkDegradationConfig& l, int32_t world,
                 const std::string& source) {
  const std::string f = "variability.links.";
  for (int i = 0; i < l.names_size(); ++i)
    if (l.names(i).empty()) config_fail(source, at(f + "names", i) + " is empty");
  check_factors(l.name_factors(), l.names_size(), f + "names", 0, 1, source, f + "name_factors");
  if (!(l.random_fraction() >= 0 && l.random_fraction() <= 1))
    config_fail(source,
                f + "random_fraction must be in [0, 1] (is " + num(l.random_fraction()) + ")");
  require_fraction(l.random_factor(), source, f + "random_factor");
  check_ranks(l.slow_nic_ranks(), world, source, f + "slow_nic_ranks");
  check_factors(l.slow_nic_factors(), l.slow_nic_ranks_size(), f + "slow_nic_ranks", 0, 1, source,
                f + "slow_nic_factors");
}

}  // namespace

void validate_variability(const VariabilityConfig& v, int32_t world, const std::string& source) {
  check_speed(v.gpu_speed(), world, source);
  check_jitter(v.kernel_jitter(), source);
  check_links(v.links(), world, source);
}

std::optional<exec::ComputeVariability> compute_variability(const VariabilityConfig& v,
                                                            int32_t world) {
  const auto& s = v.gpu_speed();
  if (!v.enabled() ||
      (s.slow_ranks_size() == 0 && s.relative_std() == 0 && v.kernel_jitter().cv() == 0))
    return std::nullopt;
  exec::SpeedSpec spec{.named = {},
                       .relative_std = s.relative_std(),
                       .min_speed = s.min_speed(),
                       .max_speed = s.max_speed(),
                       .seed = v.seed()};
  for (int i = 0; i < s.slow_ranks_size(); ++i)
    spec.named.emplace_back(s.slow_ranks(i), factor_of(s.slow_speeds(), i));
  const exec::KernelJitter jitter{
      .cv = v.kernel_jitter().cv(),
      .distribution = v.kernel_jitter().distribution() == clustersim::KernelJitterConfig::NORMAL
                          ? exec::JitterDistribution::kNormal
                          : exec::JitterDistribution::kLognormal,
      .seed = v.seed()};
  return exec::ComputeVariability(exec::draw_speeds(spec, world), jitter);
}

DegradedLinks degrade_links(net::Topology& topology, const VariabilityConfig& v,
                            const std::string& source) {
  if (!v.enabled()) return {};
  const auto& l = v.links();
  std::vector<double> factor(topology.num_links(), 1.0);
  auto scale = [&](const std::vector<net::LinkId>& links, double f) {
    for (const net::LinkId id : links) factor[id] *= f;
  };
  for (int i = 0; i < l.names_size(); ++i) {
    try {
      scale(net::links_named(topology, l.names(i)), factor_of(l.name_factors(), i));
    } catch (const std::invalid_argument& e) {
      config_fail(source, "variability.links.names[" + std::to_string(i) + "]: " + e.what());
    }
  }
  if (l.random_fraction() > 0)
    scale(net::random_cables(topology, l.random_fraction(), v.seed()), l.random_factor());
  for (int i = 0; i < l.slow_nic_ranks_size(); ++i)
    scale(net::nic_links(topology, l.slow_nic_ranks(i)), factor_of(l.slow_nic_factors(), i));
  DegradedLinks degraded;
  for (net::LinkId id = 0; id < topology.num_links(); ++id) {
    if (factor[id] == 1) continue;
    topology.scale_link_bandwidth(id, factor[id]);
    ++degraded.links;
    if (topology.link(id).link_class != net::LinkClass::kNetwork) degraded.inside_servers = true;
  }
  return degraded;
}

report::VariabilityFigures variability_figures(const std::vector<exec::RankStats>& stats,
                                               const workload::Layout& layout, Time step_end,
                                               const exec::ComputeVariability* compute,
                                               int32_t degraded_links) {
  report::VariabilityFigures f;
  f.enabled = true;
  f.degraded_links = degraded_links;
  if (compute != nullptr) {
    const auto& speeds = compute->speeds();
    f.speed_min = *std::min_element(speeds.begin(), speeds.end());
    f.speed_max = *std::max_element(speeds.begin(), speeds.end());
    f.slow_gpus = static_cast<int32_t>(
        std::count_if(speeds.begin(), speeds.end(), [](double s) { return s < 1; }));
    f.jitter_cv = compute->jitter().cv;
  }
  constexpr std::size_t kListed = 8;
  f.stage_busiest.assign(static_cast<std::size_t>(layout.size(workload::Dim::kPp)), {-1, -1.0});
  double sum = 0;
  for (int32_t r = 0; r < layout.world(); ++r) {
    const auto& st = stats[static_cast<std::size_t>(r)];
    const double busy = (st.compute + st.interference).as_seconds();
    sum += busy;
    if (r == 0 || busy < f.busy_min_s) {
      f.busy_min_s = busy;
      f.busy_min_rank = r;
    }
    if (r == 0 || busy > f.busy_max_s) {
      f.busy_max_s = busy;
      f.busy_max_rank = r;
    }
    if (st.finish == step_end && f.finishing_ranks++ < static_cast<int32_t>(kListed))
      f.finishing_first.push_back(r);
    auto& stage = f.stage_busiest[static_cast<std::size_t>(layout.coord(r, workload::Dim::kPp))];
    if (busy > stage.second) stage = {r, busy};
  }
  f.busy_mean_s = layout.world() > 0 ? sum / layout.world() : 0;
  return f;
}

}  // namespace cs::run
