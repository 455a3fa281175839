#include "sim/validation/collective_case.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/runner.h"
#include "sim/config/field_checks.h"
#include "sim/core/simulator.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"

namespace cs::validation {

namespace {

// Members sharing a server with member 0, and whether every server holds exactly that many
// consecutive members: only then may the auto chooser and the hierarchical algorithm use it,
// as in `clustersim collective`.
int32_t members_per_node(const net::Topology& topo, const std::vector<net::VertexId>& group) {
  int32_t local = 0;
  while (local < static_cast<int32_t>(group.size()) &&
         topo.vertex(group[local]).node == topo.vertex(group[0]).node)
    ++local;
  return local;
}

bool uniform_nodes(const net::Topology& topo, const std::vector<net::VertexId>& group,
                   int32_t local) {
  const auto n = static_cast<int32_t>(group.size());
  if (local < 1 || n % local != 0) return false;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t first = i - i % local;
    if (topo.vertex(group[i]).node != topo.vertex(group[first]).node) return false;
    if (i == first && i > 0 && topo.vertex(group[i]).node == topo.vertex(group[i - 1]).node)
      return false;
  }
  return true;
}

coll::ScheduleKey schedule_key(const clustersim::CollectiveCase& c, int32_t local,
                               int32_t auto_local) {
  coll::ScheduleKey key;
  key.op = coll::parse_op(c.op());
  key.n = c.gpus();
  const coll::Algorithm requested = coll::parse_algorithm(c.algo());
  key.algo = requested == coll::Algorithm::kAuto
                 ? coll::choose_algorithm(key.op, key.n, auto_local, c.size_bytes())
                 : coll::resolve(requested, key.op);
  key.chunks = coll::auto_chunks(key.op, key.algo, key.n, c.size_bytes());
  key.window = coll::auto_window(key.op, key.algo, key.n, key.chunks, c.size_bytes());
  key.local_size = key.algo == coll::Algorithm::kHierarchical ? local : 0;
  return key;
}

}  // namespace

CollectiveTiming time_collective(const clustersim::CollectiveCase& c) {
  const auto desc = net::resolve_topology(c.topology());
  const net::Topology topo = net::build_topology(desc, c.gpus(), c.topology());
  net::Routing routing(topo);
  std::vector<net::VertexId> group(static_cast<std::size_t>(c.gpus()));
  for (int32_t j = 0; j < c.gpus(); ++j) group[j] = topo.gpu(j);
  const int32_t local = members_per_node(topo, group);
  const int32_t auto_local = uniform_nodes(topo, group, local) ? local : 1;

  coll::ScheduleCache cache;
  const auto schedule = cache.get(schedule_key(c, local, auto_local));
  Simulator sim;
  auto network = net::make_network(net::parse_network_mode(c.network()), sim, topo, routing);
  Time finish;
  coll::run_collective(sim, *network, *schedule, group, c.size_bytes(),
                       [&](const coll::RunStats& s) { finish = std::max(finish, s.end); });
  sim.run();

  CollectiveTiming t;
  t.algo = schedule->key().algo;
  t.time = finish;
  const double seconds = finish.as_seconds();
  t.algbw_gbps = seconds > 0 ? static_cast<double>(c.size_bytes()) / seconds * 1e-9 : 0;
  t.busbw_gbps = t.algbw_gbps * coll::bus_bandwidth_factor(schedule->key().op, c.gpus());
  return t;
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
