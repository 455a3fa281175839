#include "sim/coll/nccl_test_case.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/collective.h"
#include "sim/coll/fluid.h"
#include "sim/coll/runner.h"
#include "sim/core/simulator.h"
#include "sim/net/routing.h"

namespace cs::coll {
NcclTestResult run_nccl_test(const net::Topology& topology, const NcclTuning& tuning, Op op,
                             Bytes size, int32_t gpus, Algorithm algo, net::NetworkMode mode) {
  net::Routing routing(topology);
  return run_nccl_test(topology, routing, tuning, op, size, gpus, algo, mode);
}

NcclTestResult run_nccl_test(const net::Topology& topology, net::Routing& routing,
                             const NcclTuning& tuning, Op op, Bytes size, int32_t gpus,
                             Algorithm algo, net::NetworkMode mode, bool fluid) {
  const auto n = gpus > 0 ? gpus : static_cast<int32_t>(topology.num_gpus());
  if (n > static_cast<int32_t>(topology.num_gpus()))
    throw std::invalid_argument("the topology has " + std::to_string(topology.num_gpus()) +
                                " GPUs, fewer than " + std::to_string(n));
  if (size < 0) throw std::invalid_argument("collective size must not be negative");
  NcclTestResult r;
  const int32_t local =
      members_per_server(n, [&](int32_t i) { return topology.vertex(topology.gpu(i)).node; });
  r.key = tuning.plan(op, n, local, size, algo);
  std::vector<net::VertexId> vertices;
  for (int32_t i = 0; i < n; ++i) vertices.push_back(topology.gpu(i));
  Simulator sim;
  const auto network = net::make_network(mode, sim, topology, routing);
  const auto ended = [&](const RunStats& s) { r.time = s.end - s.start; };
  // A fluid run needs no message schedule; a message run's must outlive sim.run().
  const auto schedule = fluid && fluid_supported(r.key) ? nullptr : build_schedule(r.key);
  if (schedule)
    run_collective(sim, *network, *schedule, vertices, size, ended);
  else
    run_fluid_collective(sim, *network, r.key, vertices, size, ended);
  sim.run();
  const double seconds = r.time.as_seconds();
  r.algbw_gbytes_per_s = seconds > 0 ? static_cast<double>(size) / seconds * 1e-9 : 0;
  r.busbw_gbytes_per_s = r.algbw_gbytes_per_s * bus_bandwidth_factor(op, n);
  return r;
}

}  // namespace cs::coll
