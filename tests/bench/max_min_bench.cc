// Cost of one max-min solve where flows stand for many alike connections: each crosses many links
// of its own, as tight as each other, and they all share one link that binds them.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "sim/net/max_min.h"

namespace cs::net {
namespace {

// Arg 0: flows; arg 1: links of its own per flow. Each iteration replaces one flow by a new one
// over the same links and solves: what a step does as one collective's lane ends and the next
// begins.
void BM_FlowsOverLinksOfTheirOwn(benchmark::State& state) {
  const auto flows = static_cast<std::size_t>(state.range(0));
  const auto own = static_cast<std::size_t>(state.range(1));
  MaxMin solver;
  // Half of each flow's own rate: the shared link binds them all.
  const LinkId shared = solver.add_link(5.0 * static_cast<double>(flows));
  std::vector<std::vector<LinkId>> links(flows);
  for (auto& route : links) {
    route.push_back(shared);
    for (std::size_t l = 0; l < own; ++l) route.push_back(solver.add_link(10));
  }
  const std::vector<double> unit(own + 1, 1.0);
  std::vector<MaxMin::FlowId> ids;
  for (const auto& route : links) ids.push_back(solver.add_flow(route, unit));
  solver.solve();
  const uint64_t filled_before = solver.filled_links();
  const uint64_t solves_before = solver.solves();
  std::size_t next = 0;
  for (auto _ : state) {
    solver.remove_flow(ids[next]);
    ids[next] = solver.add_flow(links[next], unit);
    solver.solve();
    next = (next + 1) % flows;
  }
  benchmark::DoNotOptimize(solver.rate(ids.front()));
  state.counters["links_filled_per_solve"] =
      static_cast<double>(solver.filled_links() - filled_before) /
      static_cast<double>(solver.solves() - solves_before);
}
BENCHMARK(BM_FlowsOverLinksOfTheirOwn)
    ->Args({64, 1})
    ->Args({64, 256})
    ->Args({512, 256})
    ->Args({64, 4'096})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace cs::net
