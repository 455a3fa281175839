// Random layouts of every preset: each is refused with a ConfigError that names its source, or it
// simulates (analytical network) to a step whose figures can be true, and the planner's estimate
// of it is finite and positive. Sweeps of the CLI over 1,900 such layouts found no crash, hang or
// impossible figure; this keeps a fixed-seed sample of them as a guard.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "sim/compute/gpu_profile.h"
#include "sim/config/config_error.h"
#include "sim/config/embedded_presets.h"
#include "sim/config/run_config.h"
#include "sim/plan/step_estimate.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/schedules/registry.h"

namespace cs::plan {
namespace {

// One random layout of a random preset, as `--set` overrides would give it.
struct RandomLayout {
  std::string preset;
  std::vector<std::string> overrides;
};

// The presets, schedules, GPUs, topologies and stacks to draw from, from their registries.
struct Choices {
  std::vector<std::string> presets = preset_names("workloads");
  std::vector<std::string> topologies = preset_names("topologies");
  std::vector<std::string> gpus = compute::gpu_profile_names();
  std::vector<std::string> schedules, stacks;
  Choices() {
    for (const auto& s : workload::schedule_table()) schedules.emplace_back(s.name);
    const auto* stack_enum = clustersim::SoftwareStack_descriptor();
    for (int i = 0; i < stack_enum->value_count(); ++i)
      stacks.push_back(stack_enum->value(i)->name());
  }
};

RandomLayout random_layout(std::mt19937_64& rng, const Choices& c) {
  const auto pick = [&rng](const auto& options) { return options[rng() % std::size(options)]; };
  static const int kTp[] = {1, 1, 2, 4, 8}, kCp[] = {1, 1, 2, 4}, kPp[] = {1, 1, 2, 3, 4, 6, 8},
                   kDp[] = {1, 2, 3, 4, 8, 16}, kEp[] = {1, 2, 4, 8};
  RandomLayout r;
  r.preset = pick(c.presets);
  const int tp = pick(kTp), cp = pick(kCp), pp = pick(kPp), dp = pick(kDp);
  const std::string schedule = pick(c.schedules);
  const int v = schedule == "ZB_V" || schedule == "DUALPIPE" ? 2
                : schedule == "INTERLEAVED"                  ? 2 + static_cast<int>(rng() % 3)
                                                             : 1;
  auto& o = r.overrides;
  o = {"network=ANALYTICAL",
       "parallel.tp=" + std::to_string(tp),
       "parallel.cp=" + std::to_string(cp),
       "parallel.pp=" + std::to_string(pp),
       "parallel.dp=" + std::to_string(dp),
       "cluster.num_gpus=" + std::to_string(tp * cp * pp * dp),
       "parallel.schedule=" + schedule,
       "parallel.virtual_stages=" + std::to_string(v),
       "parallel.layers_per_stage="};
  if (rng() % 2) o.push_back("parallel.microbatch_size=" + std::to_string(1 + rng() % 2));
  if (rng() % 2) o.push_back("parallel.zero_stage=" + std::to_string(rng() % 4));
  if (rng() % 4 == 0) o.push_back("software_stack=" + pick(c.stacks));
  if (rng() % 4 == 0) o.push_back("cluster.gpu=" + pick(c.gpus));
  if (rng() % 4 == 0) o.push_back("cluster.topology=" + pick(c.topologies));
  if (rng() % 2) o.push_back("parallel.ep=" + std::to_string(pick(kEp)));  // dense: refused
  return r;
}

TEST(RandomLayouts, AreRefusedNamingTheirSourceOrRunToFiguresThatCanBeTrue) {
  const Choices choices;
  std::mt19937_64 rng(2026);
  int ran = 0;
  for (int i = 0; i < 400; ++i) {
    const RandomLayout layout = random_layout(rng, choices);
    std::string what = layout.preset;
    for (const auto& o : layout.overrides) what += " --set " + o;
    SCOPED_TRACE(what);
    report::StepReport r;
    clustersim::RunConfig config;
    try {
      config = load_run_config("", layout.preset, layout.overrides).config;
      r = run::simulate_step(config, layout.preset);
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(layout.preset), std::string::npos) << e.what();
      continue;
    }
    ++ran;
    EXPECT_TRUE(std::isfinite(r.iteration_time_s) && r.iteration_time_s > 0);
    EXPECT_GT(r.mfu, 0);
    EXPECT_LE(r.mfu, r.hfu + 1e-12);
    EXPECT_LE(r.hfu, 1);
    EXPECT_GE(r.bubble_fraction, 0);
    EXPECT_LT(r.bubble_fraction, 1);
    for (const double s : r.exposed_s) EXPECT_TRUE(std::isfinite(s) && s >= 0);
    EXPECT_GE(r.interference_s, 0);
    const double estimate = estimate_step_seconds(config, 8);
    EXPECT_TRUE(std::isfinite(estimate) && estimate > 0) << estimate;
  }
  // Enough of them valid to mean something (76 of the 400 at this seed).
  EXPECT_GE(ran, 60);
}

}  // namespace
}  // namespace cs::plan
