// Goodput: the share of a run's wall time that trains, under failures, checkpoints and restarts.
#pragma once

#include <cstdint>
#include <string>

#include "proto/config.pb.h"
#include "sim/cost/failure_rates.h"

namespace cs::cost {

// Young's first-order model (J. W. Young, "A first order approximation to the optimum checkpoint
// interval", CACM 17(9), 1974). Interruptions arrive at the sum of their causes' rates
// (failure_rates.h), one MTBF apart on average; the job writes a
// checkpoint every `interval` seconds (taking `write_s`, training paused) and each interruption
// loses the restart, the checkpoint read and on average half an interval of work since the last
// checkpoint. Useful fraction = 1 - write_s / interval - (interval / 2 + restart_s + read_s) /
// MTBF, floored at 0.
struct Goodput {
  double checkpoint_bytes = 0;
  Interruptions interruptions;  // of the whole job, by cause
  double mtbf_s = 0;            // of the whole job
  double write_s = 0, read_s = 0;
  double restart_s = 0;
  double interval_s = 0;  // the configured one, or Young's optimum
  double fraction = 1;    // useful wall time / wall time
};

// Throws ConfigError naming `source` and the field for bad rates (interruptions_of), a bandwidth
// that is not positive, or a restart or interval that is negative or not finite.
void validate_reliability(const clustersim::ReliabilityConfig& reliability,
                          const std::string& source);

// Validates as validate_reliability does.
Goodput goodput_of(const clustersim::ReliabilityConfig& reliability, double checkpoint_bytes,
                   const FleetCounts& counts, const std::string& source);

// The checkpoint: every parameter's weights and optimizer states once (bf16 weights, fp32
// master, Adam m and v: 2 + 12 bytes), whatever the sharding.
double checkpoint_bytes(double params);

}  // namespace cs::cost
