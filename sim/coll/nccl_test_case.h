// One nccl-tests measurement on the simulated cluster: a collective over the first `gpus` GPUs of
// a topology, as NCCL would run it, with its time and algorithm / bus bandwidth.
#pragma once

#include <cstdint>

#include "sim/coll/nccl_plan.h"
#include "sim/coll/schedule.h"
#include "sim/core/units.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology.h"

namespace cs::coll {

struct NcclTestResult {
  ScheduleKey key;  // what ran: algorithm, protocol, channels, chunks, wire
  Time time;
  double algbw_gbytes_per_s = 0;  // size / time
  double busbw_gbytes_per_s = 0;  // algbw x the op's bus factor (nccl-tests' busbw)
};

// Runs `op` of `size` bytes over GPUs 0..gpus-1 of `topology` (all of them: 0) with `tuning`
// (NCCL's for the topology's GPU type: compute::nccl_tuning), `algo` kAuto for NCCL's choice.
// Throws std::invalid_argument for a bad group or an algorithm that does not implement the op.
NcclTestResult run_nccl_test(const net::Topology& topology, const NcclTuning& tuning, Op op,
                             Bytes size, int32_t gpus = 0, Algorithm algo = Algorithm::kAuto,
                             net::NetworkMode mode = net::NetworkMode::kCongestionAware);

// The same over routes already made for `topology` (a world's: world::World), which a run on
// one cluster shares rather than making again; with `fluid`, as fluid transfers where the
// algorithm has a fluid form (fluid.h), as `collective --fluid` runs it.
NcclTestResult run_nccl_test(const net::Topology& topology, net::Routing& routing,
                             const NcclTuning& tuning, Op op, Bytes size, int32_t gpus,
                             Algorithm algo, net::NetworkMode mode, bool fluid = false);

}  // namespace cs::coll
