// Hold-model benchmark of the event kernel: N pending events, each handler schedules one more.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "sim/core/simulator.h"

namespace cs {
namespace {

// xorshift: cheap and deterministic, so the benchmark measures the queue rather than the RNG.
struct Rng {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

struct Hold {
  Simulator sim;
  Rng rng;
  int64_t remaining = 0;
  void fire() {
    if (--remaining < 0) return;
    sim.schedule_in(Time::ps(static_cast<int64_t>(rng.next() % 1'000'000)), [this] { fire(); });
  }
};

void BM_HoldModel(benchmark::State& state) {
  const auto pending = state.range(0);
  const int64_t per_iteration = 1'000'000;
  for (auto _ : state) {
    state.PauseTiming();
    Hold hold;
    hold.remaining = per_iteration;
    for (int64_t i = 0; i < pending; ++i)
      hold.sim.schedule_at(Time::ps(static_cast<int64_t>(hold.rng.next() % 1'000'000)),
                           [&hold] { hold.fire(); });
    state.ResumeTiming();
    hold.sim.run();
    benchmark::DoNotOptimize(hold.sim.events_processed());
  }
  state.SetItemsProcessed(state.iterations() * (per_iteration + pending));
  state.counters["pending"] = static_cast<double>(pending);
}
BENCHMARK(BM_HoldModel)->Arg(1'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cs
