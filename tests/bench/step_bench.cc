// Benchmarks of whole training steps: the Llama 3 405B flagship on 16,384 GPUs and a 1,024-GPU
// Llama 3 70B step. Each iteration is one full simulation, so they run once by default.
#include <benchmark/benchmark.h>

#include <string>

#include "sim/config/run_config.h"
#include "sim/run/step_simulation.h"

namespace cs {
namespace {

void BM_Step(benchmark::State& state, const std::string& preset) {
  const auto loaded = load_run_config("", preset, {});
  report::StepReport r;
  for (auto _ : state) {
    r = run::simulate_step(loaded.config, loaded.source);
    benchmark::DoNotOptimize(r.iteration_time_s);
  }
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(r.events) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["peak_rss_mb"] = r.peak_rss_mb;
  state.counters["gpus"] = r.gpus;
  state.counters["step_s"] = r.iteration_time_s;
}
BENCHMARK_CAPTURE(BM_Step, llama3_70b, std::string("llama3-70b"))
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Step, llama3_405b, std::string("llama3-405b"))
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace
}  // namespace cs
