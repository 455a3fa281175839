// One training step end to end: config -> programs -> executor on the cluster -> report.
#pragma once

#include <string>

#include "proto/config.pb.h"
#include "sim/report/step_report.h"

namespace cs::run {

struct SimulationOptions {
  // Time collectives that own their NVLink ports once and reuse the result (see
  // Executor::set_isolated_collective_timer); off simulates every message.
  bool reuse_isolated_collectives = true;
};

// Validates `config` (errors name `source` and the field), simulates every rank of one step and
// returns the report. Throws ConfigError for invalid input and std::runtime_error naming the
// stuck ranks and ops if the step cannot complete.
report::StepReport simulate_step(const clustersim::RunConfig& config, const std::string& source,
                                 const SimulationOptions& options = {});

}  // namespace cs::run
