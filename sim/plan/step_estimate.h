// The planner's closed-form step time, which pre-ranks layouts before any is simulated.
#pragma once

#include <cstdint>

#include "proto/config.pb.h"

namespace cs::plan {

// Seconds per step without simulation: per-chunk compute from the kernel cost model (a MoE
// layer's experts at the busiest EP rank's time) plus tensor-parallel collectives at NVLink
// bandwidth and expert-parallel all-to-alls (NVLink inside a server of `gpus_per_node` GPUs, the
// NIC across servers), times (v·m + p − 1) pipeline slots; plus the data-parallel traffic that
// cannot overlap (the ZeRO parameter all-gather after the optimizer, over DP for dense weights
// and EDP for experts, or ZeRO-3's per-layer gathers beyond the compute they hide behind, each
// slowed where it crosses an oversubscribed tier of the config's topology) and the optimizer.
double estimate_step_seconds(const clustersim::RunConfig& config, int32_t gpus_per_node);

}  // namespace cs::plan
