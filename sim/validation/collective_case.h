// Model value of a collective case: one collective timed over a topology the way
// `clustersim collective` times it, reported as nccl-tests bus bandwidth.
#pragma once

#include <string>

#include "proto/config.pb.h"
#include "proto/validation.pb.h"
#include "sim/coll/collective.h"
#include "sim/core/units.h"

namespace cs::validation {

struct CollectiveTiming {
  coll::Algorithm algo = coll::Algorithm::kRing;  // what ran (auto resolved)
  Time time;
  double algbw_gbytes_per_s = 0;
  double busbw_gbytes_per_s = 0;
};

// The config of the world a case runs on: its topology and network, NCCL's defaults and every
// effect on, as `clustersim collective` without switches.
clustersim::RunConfig collective_case_config(const clustersim::CollectiveCase& c);

// Runs the collective over GPUs 0..gpus-1 of the topology, sized to them, as NCCL would run it
// (coll::run_nccl_test, the same plan as `clustersim collective` with its defaults). Throws
// ConfigError for an unknown topology or one too small, std::invalid_argument for an impossible
// algorithm.
CollectiveTiming time_collective(const clustersim::CollectiveCase& c);

// Field checks (op, algorithm, network names; positive GPUs and size), throwing ConfigError
// "<where>: <prefix><field> ...".
void check_collective(const clustersim::CollectiveCase& c, const std::string& where,
                      const std::string& prefix);

}  // namespace cs::validation
