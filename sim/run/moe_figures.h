// The mixture-of-experts figures of a step report, from the routing and the ranks' statistics.
#pragma once

#include <vector>

#include "proto/config.pb.h"
#include "sim/compute/kernel_cost.h"
#include "sim/exec/executor.h"
#include "sim/report/step_report.h"
#include "sim/workload/memory.h"

namespace cs::run {

// Nothing (enabled false) for a dense model. `peak` is the peak-memory stage's breakdown; `cost`
// times the expert kernels for the effect lines (run/moe_effects.h).
report::MoeFigures moe_figures(const clustersim::RunConfig& config,
                               const std::vector<exec::RankStats>& stats,
                               const workload::MemoryBreakdown& peak,
                               const compute::KernelCostModel& cost);

}  // namespace cs::run
