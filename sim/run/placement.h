// Where each of several jobs sharing one cluster runs: packed, spread or explicit GPU ranges.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cs::run {

enum class PlacementKind {
  // Job 0 on the first servers, job 1 from the next server on, and so on.
  kPacked,
  // Servers dealt round robin: server 0 to job 0, server 1 to job 1, ..., skipping jobs that
  // have all their GPUs; a job short of a whole server takes its first GPUs.
  kSpread,
  // Job j on GPUs [first_j, last_j], each starting on a server boundary.
  kRanges,
};

struct GpuRange {
  int32_t first = 0, last = 0;  // inclusive
};

struct PlacementSpec {
  PlacementKind kind = PlacementKind::kPacked;
  std::vector<GpuRange> ranges;  // kRanges only
};

// "packed", "spread" or comma-separated ranges "0-511,512-1023". Throws ConfigError
// "--placement: ..." naming what is wrong.
PlacementSpec parse_placement(const std::string& text);

// Per job, the GPU index each of its ranks runs on (rank r of job j on result[j][r]), for jobs
// of `job_gpus[j]` ranks on a cluster of `cluster_gpus` GPUs in servers of `gpus_per_server`.
// Jobs never share a server. Throws ConfigError "--placement: ..." when the ranges overlap, leave
// the cluster, start inside a server, differ in size from their jobs or in count from the jobs,
// or when the jobs need more GPUs than the cluster has.
std::vector<std::vector<int32_t>> place_jobs(const PlacementSpec& spec,
                                             std::span<const int32_t> job_gpus,
                                             int32_t gpus_per_server, int64_t cluster_gpus);

// The placement as text for reports: "packed", "spread" or the ranges.
std::string placement_text(const PlacementSpec& spec);

}  // namespace cs::run
