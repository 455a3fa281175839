// Benchmarks of what the planner does for every layout it enumerates before simulating any: the
// memory fit and the step pre-estimate. A plan ranks thousands of layouts this way.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <vector>

#include "sim/config/run_config.h"
#include "sim/plan/layout_search.h"
#include "sim/plan/memory_report.h"
#include "sim/plan/step_estimate.h"

namespace cs::plan {
namespace {

// Each iteration fits and estimates the next of Llama 3 70B's layouts on 640 GPUs (2,340 of them,
// PP up to 80 and every schedule), round robin.
void BM_FitAndEstimateALayout(benchmark::State& state) {
  const auto base = load_run_config("", "llama3-70b", {}).config;
  const std::vector<clustersim::RunConfig> layouts = enumerate_layouts(base, 640, 8);
  std::size_t next = 0;
  for (auto _ : state) {
    const auto& layout = layouts[next];
    benchmark::DoNotOptimize(check_fit(layout, 80e9).peak);
    benchmark::DoNotOptimize(estimate_step_seconds(layout, 8));
    next = (next + 1) % layouts.size();
  }
  state.counters["layouts"] = static_cast<double>(layouts.size());
}
BENCHMARK(BM_FitAndEstimateALayout)->Unit(benchmark::kMillisecond)->MinTime(5);

}  // namespace
}  // namespace cs::plan
