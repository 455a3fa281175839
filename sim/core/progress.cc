#include "sim/core/progress.h"

#include <chrono>

namespace cs {

uint64_t run_with_progress(Simulator& sim, const std::function<double()>& fraction,
                           const ProgressFn& report, double every_s) {
  if (!report) return sim.run();
  using Clock = std::chrono::steady_clock;
  constexpr uint64_t kBatch = 4096;  // events between looks at the clock
  const auto start = Clock::now();
  auto last = start;
  const uint64_t before = sim.events_processed();
  SimProgress p;
  auto fill = [&](Clock::time_point now) {
    p.simulated = sim.now();
    p.events = sim.events_processed();
    p.wall_s = std::chrono::duration<double>(now - start).count();
    p.fraction = fraction ? fraction() : -1;
  };
  while (sim.run_for(kBatch) == kBatch) {
    const auto now = Clock::now();
    if (std::chrono::duration<double>(now - last).count() < every_s) continue;
    last = now;
    fill(now);
    report(p);
  }
  fill(Clock::now());
  p.done = true;
  report(p);
  return sim.events_processed() - before;
}

}  // namespace cs
