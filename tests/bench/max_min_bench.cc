// Cost of one max-min solve where flows stand for many alike connections: each crosses many links
// of its own, as tight as each other, and they all share one link that binds them; or, as a
// thousand-server ring's phases on a fabric that hashes each connection over 16 paths do, they
// cross many of the same switch links with hashed shares.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "sim/net/max_min.h"

namespace cs::net {
namespace {

// Adds a flow over each of `links` (flow f's weights: weights(f)) and solves; then, in each
// iteration, replaces one flow by a new one over the same links and solves, as a step does when
// one collective's lane ends and the next begins. Reports the links filled per solve.
template <typename Weights>
void replace_one_flow_per_solve(benchmark::State& state, MaxMin& solver,
                                const std::vector<std::vector<LinkId>>& links, Weights weights) {
  std::vector<MaxMin::FlowId> ids;
  for (std::size_t f = 0; f < links.size(); ++f)
    ids.push_back(solver.add_flow(links[f], weights(f)));
  solver.solve();
  const uint64_t filled_before = solver.filled_links();
  const uint64_t solves_before = solver.solves();
  std::size_t next = 0;
  for (auto _ : state) {
    solver.remove_flow(ids[next]);
    ids[next] = solver.add_flow(links[next], weights(next));
    solver.solve();
    next = (next + 1) % links.size();
  }
  benchmark::DoNotOptimize(solver.rate(ids.front()));
  state.counters["links_filled_per_solve"] =
      static_cast<double>(solver.filled_links() - filled_before) /
      static_cast<double>(solver.solves() - solves_before);
}

// Arg 0: flows; arg 1: links of its own per flow.
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
  replace_one_flow_per_solve(state, solver, links,
                             [&](std::size_t) -> const std::vector<double>& { return unit; });
}
BENCHMARK(BM_FlowsOverLinksOfTheirOwn)
    ->Args({64, 1})
    ->Args({64, 256})
    ->Args({512, 256})
    ->Args({64, 4'096})
    ->Unit(benchmark::kMicrosecond);

// Arg 0: flows; arg 1: switch links; arg 2: links per flow, drawn from them, each carrying k / 16
// of its flow's rate for k from 1 to 13 (a connection's share of a 16-path ECMP spread, summed
// over the edges that cross the link): one phase of one group's ring ending and the next
// beginning while the other groups' phases run (llama3-24k at 98,304 GPUs, TP 4 x PP 8 x DP 3,072:
// up to 32 flows of 90,000 links over 100,000, README "Four abstractions").
void BM_FlowsOverHashedSharedLinks(benchmark::State& state) {
  const auto flows = static_cast<std::size_t>(state.range(0));
  const auto pool = static_cast<std::size_t>(state.range(1));
  const auto per_flow = static_cast<std::size_t>(state.range(2));
  MaxMin solver;
  for (std::size_t l = 0; l < pool; ++l) solver.add_link(50e9);  // 400 Gb/s
  std::mt19937_64 rng(7);
  std::vector<LinkId> all(pool);
  std::iota(all.begin(), all.end(), LinkId{0});
  std::vector<std::vector<LinkId>> links(flows);
  std::vector<std::vector<double>> weights(flows);
  for (std::size_t f = 0; f < flows; ++f) {
    for (std::size_t i = 0; i < per_flow; ++i)
      std::swap(all[i], all[i + rng() % (pool - i)]);  // a partial shuffle: distinct links
    links[f].assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(per_flow));
    std::sort(links[f].begin(), links[f].end());
    for (std::size_t i = 0; i < per_flow; ++i)
      weights[f].push_back(static_cast<double>(1 + rng() % 13) / 16);
  }
  replace_one_flow_per_solve(
      state, solver, links,
      [&](std::size_t f) -> const std::vector<double>& { return weights[f]; });
}
BENCHMARK(BM_FlowsOverHashedSharedLinks)
    ->Args({8, 25'000, 20'000})
    ->Args({32, 100'000, 50'000})
    ->Unit(benchmark::kMillisecond);

// As BM_FlowsOverHashedSharedLinks, but every flow also crosses one link that binds them all at
// an eighth of the switch links' rate (the groups' phases behind the ports they share): most
// switch links can then bind none of their flows, and each solve revisits every flow to read the
// few it can bind (MaxMin keeps each flow's list of them).
void BM_HashedFlowsBehindOneSharedLink(benchmark::State& state) {
  const auto flows = static_cast<std::size_t>(state.range(0));
  const auto pool = static_cast<std::size_t>(state.range(1));
  const auto per_flow = static_cast<std::size_t>(state.range(2));
  MaxMin solver;
  const LinkId shared = solver.add_link(50e9 / 8);
  for (std::size_t l = 0; l < pool; ++l) solver.add_link(50e9);
  std::mt19937_64 rng(7);
  std::vector<LinkId> all(pool);
  std::iota(all.begin(), all.end(), shared + 1);
  std::vector<std::vector<LinkId>> links(flows);
  std::vector<std::vector<double>> weights(flows);
  for (std::size_t f = 0; f < flows; ++f) {
    for (std::size_t i = 0; i < per_flow; ++i) std::swap(all[i], all[i + rng() % (pool - i)]);
    links[f].assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(per_flow));
    std::sort(links[f].begin(), links[f].end());
    links[f].insert(links[f].begin(), shared);
    weights[f].push_back(1.0);
    for (std::size_t i = 0; i < per_flow; ++i)
      weights[f].push_back(static_cast<double>(1 + rng() % 13) / 16);
  }
  replace_one_flow_per_solve(
      state, solver, links,
      [&](std::size_t f) -> const std::vector<double>& { return weights[f]; });
}
BENCHMARK(BM_HashedFlowsBehindOneSharedLink)
    ->Args({16, 100'000, 20'000})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cs::net
