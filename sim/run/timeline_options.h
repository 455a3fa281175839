// Hooks a report::Timeline into a step simulation (run, replay): which ranks, and the recorder.
#pragma once

#include "sim/report/timeline.h"
#include "sim/run/step_simulation.h"

namespace cs::run {

// `options` with on_op and op_ranks set so that `timeline` records its ranks' ops; the timeline
// must outlive the simulation.
inline SimulationOptions with_timeline(report::Timeline& timeline, SimulationOptions options = {}) {
  options.op_ranks = timeline.ranks();
  options.on_op = [&timeline](int32_t rank, const workload::Program& program, uint32_t op,
                              Time start,
                              Time end) { timeline.record(rank, program, op, start, end); };
  return options;
}

}  // namespace cs::run
