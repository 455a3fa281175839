// One training step end to end: config -> programs -> executor on the cluster -> report.
#pragma once

#include <string>

#include "proto/config.pb.h"
#include "sim/report/step_report.h"

namespace cs::run {

// Validates `config` (errors name `source` and the field), simulates every rank of one step and
// returns the report. Throws ConfigError for invalid input and std::runtime_error naming the
// stuck ranks and ops if the step cannot complete.
report::StepReport simulate_step(const clustersim::RunConfig& config, const std::string& source);

}  // namespace cs::run
