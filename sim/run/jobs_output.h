// Several jobs' report as a terminal table and as JSON.
#pragma once

#include <ostream>

#include "sim/run/multi_job.h"

namespace cs::run {

// The cluster line, then one row per job: GPUs, steps, step time alone and shared, slowdown.
void print_jobs_table(std::ostream& out, const JobsReport& r);

// {"cluster": {...}, "jobs": [{...}], "span_s", "events", "wall_time_s"}; with include_host
// false the host figures (wall time) are left out, so equal runs give equal bytes.
void write_jobs_json(std::ostream& out, const JobsReport& r, bool include_host = true);

}  // namespace cs::run
