// One training step end to end: config -> programs -> executor on the cluster -> report.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "proto/config.pb.h"
#include "sim/core/progress.h"
#include "sim/exec/executor.h"
#include "sim/lower/stage_work.h"
#include "sim/net/network.h"
#include "sim/net/network_factory.h"
#include "sim/report/step_report.h"
#include "sim/run/config_checks.h"
#include "sim/workload/program.h"

namespace cs::run {

struct SimulationOptions {
  // Time collectives that own their NVLink ports once and reuse the result (see
  // ExecutorOptions::isolated_timer); off simulates every message.
  bool reuse_isolated_collectives = true;
  // Called for every op of the ranks in `op_ranks` as it completes (timelines).
  std::function<void(int32_t rank, const workload::Program& program, uint32_t op, Time start,
                     Time end)>
      on_op;
  std::vector<int32_t> op_ranks;
  // Called about twice a second while the step runs, with the simulated time reached and the
  // share of ops done, and once at the end (progress lines on a terminal).
  ProgressFn on_progress;
};

// A step whose workload is built: every stage's program and what the report needs besides the
// simulation. This is what a workload trace stores.
struct PreparedStep {
  clustersim::RunConfig config;             // cluster.gpu resolved
  std::vector<workload::Program> programs;  // one per pipeline stage
  std::vector<int32_t> peak_held;  // per stage: microbatch-chunks of activations at the peak
  lower::StageCosts costs;         // per-phase compute of a middle stage, for the bubble formula
  std::string timed_for_gpu;       // kernel durations in `programs` are for this GPU
};

// Fills the report's communication volumes from the executor's tallies and the network's
// per-link-class counters.
void fill_comm_figures(report::StepReport& r, const exec::CommTally& comm,
                       const net::TrafficStats& traffic);

// Validates `config` and builds its programs (no simulation yet).
PreparedStep prepare_step(const clustersim::RunConfig& config, const std::string& source);

// Simulates a prepared step on prepared.config's cluster. When config.cluster.gpu differs from
// timed_for_gpu, compute ops are re-timed for the new GPU first (so a trace can be retargeted).
report::StepReport simulate_prepared(PreparedStep& prepared, const std::string& source,
                                     const SimulationOptions& options = {});

// Validates `config` (errors name `source` and the field), simulates every rank of one step and
// returns the report. Throws ConfigError for invalid input and std::runtime_error naming the
// stuck ranks and ops if the step cannot complete.
report::StepReport simulate_step(const clustersim::RunConfig& config, const std::string& source,
                                 const SimulationOptions& options = {});

}  // namespace cs::run
