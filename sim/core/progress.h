// Runs a simulation to its end while reporting how far it got, for progress lines on a terminal.
#pragma once

#include <cstdint>
#include <functional>

#include "sim/core/simulator.h"
#include "sim/core/units.h"

namespace cs {

struct SimProgress {
  Time simulated;        // simulated time reached
  double fraction = -1;  // of the work done, 0..1 (negative: unknown)
  uint64_t events = 0;
  double wall_s = 0;  // since the run began
  bool done = false;  // the last report of the run
};
using ProgressFn = std::function<void(const SimProgress&)>;

// Like sim.run() (the same events in the same order), but every few thousand events reads the
// wall clock and, about every `every_s` seconds, calls `report` with `fraction()` (when given);
// once more at the end with done set. No `report`: plain sim.run().
uint64_t run_with_progress(Simulator& sim, const std::function<double()>& fraction,
                           const ProgressFn& report, double every_s = 0.5);

}  // namespace cs
