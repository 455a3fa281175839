// The mixture-of-experts figures of a step report, from the routing and the ranks' statistics.
#pragma once

#include <vector>

#include "proto/config.pb.h"
#include "sim/exec/executor.h"
#include "sim/report/step_report.h"
#include "sim/workload/memory.h"

namespace cs::run {

// Nothing (enabled false) for a dense model. `peak` is the peak-memory stage's breakdown.
report::MoeFigures moe_figures(const clustersim::RunConfig& config,
                               const std::vector<exec::RankStats>& stats,
                               const workload::MemoryBreakdown& peak);

}  // namespace cs::run
