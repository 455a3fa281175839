// `clustersim run` with two or more configs: the jobs share one cluster and its network.
#include <charconv>

#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/progress.h"
#include "sim/cli/run_args.h"
#include "sim/config/field_override.h"
#include "sim/config/run_config.h"
#include "sim/run/jobs_output.h"
#include "sim/run/multi_job.h"

namespace cs::cli {

namespace {

// --job-set J:path=value, split into the job index and the override.
std::pair<std::size_t, std::string> split_job_override(const std::string& text, std::size_t jobs) {
  const auto colon = text.find(':');
  std::size_t job = 0;
  const char* end = text.data() + (colon == std::string::npos ? 0 : colon);
  const auto [ptr, ec] = std::from_chars(text.data(), end, job);
  if (colon == std::string::npos || colon == 0 || ec != std::errc() || ptr != end)
    throw UsageError("--job-set " + text +
                     ": expected JOB:dotted.path=value, e.g. 1:parallel.dp=8");
  if (job >= jobs)
    throw UsageError("--job-set " + text + ": job " + std::to_string(job) + " does not exist (" +
                     std::to_string(jobs) + " jobs, numbered from 0)");
  return {job, text.substr(colon + 1)};
}

}  // namespace

int run_several_jobs(const RunArgs& args, CommandIo& io) {
  if (!args.timeline_path.empty()) throw UsageError("--timeline takes one job, not several");
  if (!args.hf_config.empty()) throw UsageError("--hf-config takes one job, not several");
  std::vector<std::vector<std::string>> job_sets(args.jobs.size());
  for (const auto& text : args.job_overrides) {
    auto [job, set] = split_job_override(text, args.jobs.size());
    job_sets[job].push_back(std::move(set));
  }
  std::vector<run::JobInput> jobs;
  for (std::size_t j = 0; j < args.jobs.size(); ++j) {
    LoadedConfig loaded = load_run_config(args.jobs[j].path, args.jobs[j].preset, args.overrides);
    // A job's own overrides after the shared ones; an error names the option they came with.
    for (const auto& set : job_sets[j])
      apply_override(loaded.config, set, "--job-set " + std::to_string(j) + ":");
    canonicalize_preset_names(loaded.config);
    jobs.push_back(
        {std::move(loaded.config), "job " + std::to_string(j) + " (" + loaded.source + ")"});
  }
  const run::PlacementSpec placement =
      run::parse_placement(args.placement.empty() ? "packed" : args.placement);
  const run::JobsReport report = run::simulate_jobs(jobs, placement, simulation_progress(io));
  run::print_jobs_table(io.out, report);
  if (!args.json.empty())
    write_file(io, args.json, [&](std::ostream& out) { run::write_jobs_json(out, report); });
  return 0;
}

}  // namespace cs::cli
