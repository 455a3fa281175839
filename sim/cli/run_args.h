// What `clustersim run` was asked: its jobs, in command-line order, and its options.
#pragma once

#include <string>
#include <vector>

#include "sim/cli/command_io.h"

namespace cs::cli {

// One job as named on the command line: a config file or a preset (exactly one is set).
struct JobArg {
  std::string path, preset;
};

struct RunArgs {
  std::vector<JobArg> jobs;
  std::vector<std::string> overrides;      // --set, applied to every job
  std::vector<std::string> job_overrides;  // --job-set J:path=value
  std::string hf_config, json, timeline_path, timeline_ranks, placement;
};

// Runs two or more jobs together on the first one's cluster (`clustersim run A B ...`).
// Throws UsageError for options that take one job and for a bad --job-set.
int run_several_jobs(const RunArgs& args, CommandIo& io);

}  // namespace cs::cli
