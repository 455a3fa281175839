// Several training jobs at once on one cluster: placed on its GPUs, sharing its network, each
// timed under contention and alone on the same GPUs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/config.pb.h"
#include "sim/core/progress.h"
#include "sim/run/placement.h"

namespace cs::run {

struct JobInput {
  clustersim::RunConfig config;
  std::string source;  // file path or "preset NAME", for error messages
};

// One job's figures. Under contention a job repeats its step, back to back, as long as some job
// is still in its first step; `steps` counts the steps it started, all of which it finishes.
struct JobFigures {
  std::string name, source, layout;
  int32_t gpus = 0;
  std::string gpu_ranges;  // the GPUs it ran on, e.g. "0-63" or "0-7,16-23"
  int32_t steps = 0;
  double alone_step_s = 0;               // alone on the same GPUs, same network model
  double mean_step_s = 0;                // under contention, mean over its steps
  double max_step_s = 0;                 // under contention, its slowest step
  double slowdown = 0;                   // mean_step_s / alone_step_s
  double mfu_alone = 0, mfu_shared = 0;  // model FLOPs utilisation alone, and at mean_step_s
};

struct JobsReport {
  std::string topology, gpu, network, placement;
  int32_t cluster_gpus = 0;  // GPUs built
  double span_s = 0;         // simulated time until the last step under contention ended
  std::vector<JobFigures> jobs;
  uint64_t events = 0;  // of the contended run and the alone runs together
  double wall_time_s = 0;
};

// Runs `jobs` together on job 0's cluster (cluster.topology, gpu, load_balancing, num_gpus) and
// network model, placed by `placement`, then each alone on its GPUs. A job's own cluster fields
// are ignored, except that a cluster.gpu or network differing from job 0's is refused (its
// kernels were timed for another GPU). Throws ConfigError naming the job's source and field, or
// "--placement: ..."; std::runtime_error naming the stuck ranks if a step cannot complete.
// A job may start at most `max_steps` steps (ConfigError beyond), so that a job that cannot
// end its first step makes the run fail instead of letting the others repeat forever.
JobsReport simulate_jobs(const std::vector<JobInput>& jobs, const PlacementSpec& placement,
                         const ProgressFn& on_progress = {}, int32_t max_steps = 1000);

}  // namespace cs::run
