// Interruptions of a job by root cause: per-component rates times the job's GPUs, servers, NICs.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "proto/config.pb.h"
#include "sim/cost/failure_causes.h"

namespace cs::cost {

// The components a job holds: its GPUs, the servers they sit in and those servers' NICs.
struct FleetCounts {
  int64_t gpus = 1, servers = 1, nics = 1;
};

// Interruptions per day of the whole job, by cause (in kFailureCauses' order) and in total.
struct Interruptions {
  std::array<double, kNumFailureCauses> per_day{};
  double total_per_day = 0;
};

// One interruption a second per component: far beyond any hardware, and it keeps a job's total
// (times its GPUs, servers and NICs) a finite number.
constexpr double kMaxRatePerDay = 86400;

// The ReliabilityConfig field of `cause` below reliability: "per_gpu_day.hbm".
std::string cause_field(const FailureCause& cause);

// The rate of `cause` per unit-day in `reliability` (its default when unset).
double rate_per_unit_day(const clustersim::ReliabilityConfig& reliability,
                         const FailureCause& cause);

// Each cause's rate times the count of its unit; a set interruptions_per_gpu_day replaces the
// total (x gpus), keeping the causes' shares. Throws ConfigError naming `source` and the field
// for a negative or non-finite rate, a total of zero, or a set total that is not positive.
Interruptions interruptions_of(const clustersim::ReliabilityConfig& reliability,
                               const FleetCounts& counts, const std::string& source);

}  // namespace cs::cost
