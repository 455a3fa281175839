// Memory a step simulation will need, estimated before it starts, so a run too big is refused.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sim/net/routing.h"
#include "sim/net/topology.h"
#include "sim/workload/layout.h"
#include "sim/workload/program.h"

namespace cs::run {

// What the simulation will add to the memory already held (the topology and the programs), by
// the structures that grow with the run: per rank (executor state), per communicating GPU pair
// (cached routes and multi-flow spreads) and per link (flow-sharing state).
struct Footprint {
  double held_bytes = 0;  // resident now, topology and programs built
  double rank_bytes = 0;
  double pair_bytes = 0;
  double link_bytes = 0;
  double total() const { return held_bytes + rank_bytes + pair_bytes + link_bytes; }
  std::string describe() const;
};

Footprint estimate_footprint(const net::Topology& topology, net::Routing& routing,
                             const workload::Layout& layout,
                             const std::vector<workload::Program>& programs);

// The memory a run may use: `limit_gb` when positive, else what this machine holds now plus what
// it has available (MemAvailable); 0 when neither is known.
double memory_limit_bytes(double limit_gb, double held_bytes);

// Throws ConfigError (naming `source` and simulation.memory_limit_gb) when the estimate exceeds
// the limit.
void refuse_if_too_big(const Footprint& footprint, double limit_gb, const std::string& source);

// What a built cluster holds per GPU: topology graph, routing index and one flow network over
// every link. Measured with `collective --fluid --sizes 1K` at 65,536 GPUs: 3.3 KB (dgx-h100,
// h800-cluster) to 4.0 KB (dgx-a100, llama3-24k); a step's extra networks for collectives timed
// alone bring gpt3-175b on 200,000 GPUs to 4.8 KB. Rounded up, so that the estimate errs high.
inline constexpr double kClusterBytesPerGpu = 5 * 1024.0;

// Refuses, before anything is built, a cluster of `gpus` GPUs whose estimate alone (with what
// this process holds now) exceeds the limit; the footprint check after building stays, for the
// parts that grow with the job rather than the cluster.
void refuse_cluster_if_too_big(int64_t gpus, double limit_gb, const std::string& source);

}  // namespace cs::run
