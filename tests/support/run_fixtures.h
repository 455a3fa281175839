// Shared fixtures for tests that simulate a step: a small Llama config and a report's JSON.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "proto/config.pb.h"
#include "sim/config/run_config.h"
#include "sim/report/json.h"
#include "sim/report/step_report.h"

namespace cs::testing_support {

// Llama 3 8B's layer shapes cut to 4 layers of 2,048 tokens, so a step takes milliseconds to
// simulate; `overrides` apply after these.
inline clustersim::RunConfig small_llama(std::vector<std::string> overrides = {}) {
  overrides.insert(overrides.begin(), {"model.num_layers=4", "model.seq_length=2048"});
  return load_run_config("", "llama3-8b", overrides).config;
}

// Seconds per GPU of kernel group `group` in the report's breakdown (0 when it has no line).
inline double group_seconds(const report::StepReport& r, const std::string& group) {
  for (const auto& [name, seconds] : r.compute_by_kernel_group_s)
    if (name == group) return seconds;
  return 0;
}

// The report as `run --json` writes it, less the host block (wall time differs run to run).
inline std::string report_json(const report::StepReport& r) {
  std::ostringstream out;
  report::write_json(out, r, /*include_host=*/false);
  return out.str();
}

}  // namespace cs::testing_support
