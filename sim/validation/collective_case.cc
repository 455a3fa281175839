#include "sim/validation/collective_case.h"

#include <stdexcept>

#include "sim/coll/nccl_test_case.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/config/field_checks.h"
#include "sim/net/network_factory.h"
#include "sim/world/world.h"

namespace cs::validation {

clustersim::RunConfig collective_case_config(const clustersim::CollectiveCase& c) {
  clustersim::RunConfig config;
  config.mutable_cluster()->set_topology(c.topology());
  config.mutable_cluster()->set_gpus_per_node(c.gpus_per_node());
  config.set_network(world::config_network_mode(net::parse_network_mode(c.network())));
  if (c.has_nccl()) *config.mutable_nccl() = c.nccl();
  return config;
}

CollectiveTiming time_collective(const clustersim::CollectiveCase& c) {
  const world::ResolvedCluster cluster(collective_case_config(c), "collective case", "topology");
  world::World world(cluster, c.gpus());
  const auto r = coll::run_nccl_test(world.topology(), world.routing(), world.nccl_tuning(),
                                     coll::parse_op(c.op()), c.size_bytes(), c.gpus(),
                                     coll::parse_algorithm(c.algo()), world.mode(), c.fluid());
  return {r.key.algo, r.time, r.algbw_gbytes_per_s, r.busbw_gbytes_per_s};
}

void check_collective(const clustersim::CollectiveCase& c, const std::string& where,
                      const std::string& prefix) {
  // The parsers' messages list the accepted names.
  const auto named = [&](const std::string& field, auto parse) {
    try {
      parse();
    } catch (const std::invalid_argument& e) {
      config_fail(where, prefix + field + ": " + e.what());
    }
  };
  named("op", [&] { coll::parse_op(c.op()); });
  named("algo", [&] { coll::parse_algorithm(c.algo()); });
  named("network", [&] { net::parse_network_mode(c.network()); });
  const coll::Op op = coll::parse_op(c.op());
  const coll::Algorithm algo = coll::resolve(coll::parse_algorithm(c.algo()), op);
  if (!coll::supports(algo, op)) {
    config_fail(where, prefix + "algo " + c.algo() + " cannot run " + c.op());
  }
  if (c.topology().empty()) config_fail(where, prefix + "topology must be set, e.g. \"dgx-h100\"");
  if (c.gpus() < 1) {
    config_fail(where, prefix + "gpus must be >= 1 (is " + std::to_string(c.gpus()) + ")");
  }
  if (c.size_bytes() < 1) {
    config_fail(where,
                prefix + "size_bytes must be >= 1 (is " + std::to_string(c.size_bytes()) + ")");
  }
}

}  // namespace cs::validation
