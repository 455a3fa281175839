// Sets one run's executor up from its config: NCCL tuning, fluid collectives, folding,
// interference and the isolated-collective timer.
#pragma once

#include <optional>
#include <string>

#include "proto/config.pb.h"
#include "sim/compute/gpu_profile.h"
#include "sim/exec/executor_options.h"
#include "sim/exec/variability.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology.h"

namespace cs::run {

// What executor_options needs besides the config; everything must outlive the executor.
struct ExecutorSetup {
  const compute::GpuProfile& gpu;
  net::NetworkMode mode;
  const net::Topology& topology;
  net::Routing& routing;
  // Time collectives that own their NVLink ports once, each alone on a fresh network of `mode`.
  bool reuse_isolated = true;
  // Ranks are not alike (variability): no rank may stand for another.
  bool ranks_differ = false;
  const std::optional<exec::ComputeVariability>& compute_variability;
};

// The executor options `config`'s NCCL, simulation and effects settings ask for. Throws
// ConfigError naming `source` for a negative nccl.channels.
exec::ExecutorOptions executor_options(const clustersim::RunConfig& config,
                                       const ExecutorSetup& setup, const std::string& source);

}  // namespace cs::run
