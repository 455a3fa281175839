// Simulates an explicit workload (an imported trace) on a cluster and reports what it can.
#pragma once

#include <string>

#include "proto/config.pb.h"
#include "sim/core/progress.h"
#include "sim/exec/executor.h"
#include "sim/report/step_report.h"

namespace cs::trace {

struct ReplayTarget {
  std::string topology;  // preset name or file
  std::string gpu;       // empty: the topology's GPU
  clustersim::NetworkMode network = clustersim::CONGESTION_AWARE;
  bool fluid_collectives = true;  // SimulationConfig.fluid_collectives
  // NCCL's settings and the modelled effects, as `run` takes them from a config (all defaults:
  // what a real run pays). The replay's world is built from them as a run's is.
  clustersim::NcclConfig nccl{};
  clustersim::EffectsConfig effects{};
};

// The config a replay on `target` builds its world from: cluster, network, NCCL, effects and
// simulation settings.
clustersim::RunConfig replay_config(const ReplayTarget& target);

// The GPU a replay on `target` times compute for.
std::string target_gpu(const ReplayTarget& target);

// Runs every rank of `workload` once. The report has the step time, communication bytes and
// events; figures that need a model config (MFU, FLOPs, bubbles, memory) stay 0. Throws
// std::runtime_error naming `source` and the stuck ranks and ops if the run cannot complete.
report::StepReport simulate_workload(const exec::ExplicitWorkload& workload,
                                     const ReplayTarget& target, const std::string& name,
                                     const std::string& source, const ProgressFn& progress = {});

// Prints the figures an imported trace has, and says which ones it cannot have.
void print_workload_table(std::ostream& out, const report::StepReport& r);

}  // namespace cs::trace
