// Cost of the congestion-aware network: many concurrent flows on a two-level tree.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/core/simulator.h"
#include "sim/net/flow_network.h"
#include "sim/net/routing.h"
#include "sim/net/topology.h"

namespace cs::net {
namespace {

// Leaves of `per_leaf` GPUs under `spines` spines; each leaf has one uplink to every spine, with
// total uplink = total downlink / oversubscription.
Topology two_level_tree(int leaves, int per_leaf, int spines, double oversubscription) {
  Topology topo;
  const Bandwidth down = Bandwidth::gigabits_per_s(400);
  const Bandwidth up =
      Bandwidth::bytes_per_s(down.in_bytes_per_s() * per_leaf / spines / oversubscription);
  std::vector<VertexId> spine_ids;
  for (int s = 0; s < spines; ++s)
    spine_ids.push_back(topo.add_vertex({VertexKind::kSwitch, 1, -1, s}));
  for (int l = 0; l < leaves; ++l) {
    const VertexId leaf = topo.add_vertex({VertexKind::kSwitch, 0, -1, l});
    for (VertexId s : spine_ids)
      topo.add_duplex_link(leaf, s, up, Time::ns(600), LinkClass::kNetwork);
    for (int g = 0; g < per_leaf; ++g) {
      const VertexId gpu = topo.add_vertex({VertexKind::kGpu, -1, l, -1});
      topo.add_duplex_link(gpu, leaf, down, Time::ns(600), LinkClass::kNetwork);
    }
  }
  return topo;
}

struct Rng {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

// All flows start at time zero with staggered sizes, so they end one by one and every end
// triggers a recompute. Arg 0: flows; arg 1: GPUs per flow group (flows only go between GPUs of
// the same group of that many consecutive GPUs, 0 = anywhere), which sets how the flows split
// into independent components; arg 2: leaves of 32 GPUs (64 = 2,048 GPUs, 512 = 16,384); arg 3:
// 1 for incremental recomputes (the default), 0 to re-solve whole components. Group 0 is the
// worst case: one component holds every flow, so each of the ~2 x flows recomputes revisits all
// of them unless it is incremental.
void BM_ConcurrentFlows(benchmark::State& state) {
  const int flows = static_cast<int>(state.range(0));
  const int group = static_cast<int>(state.range(1));
  const Topology topo = two_level_tree(static_cast<int>(state.range(2)), 32, 16, 1.0);
  Routing routing(topo);
  const int gpus = static_cast<int>(topo.num_gpus());
  uint64_t recomputes = 0, revisited = 0, rounds = 0;
  double sim_seconds = 0;
  // The flows, drawn and routed before timing: route lookups are not the flow model's cost.
  struct Message {
    VertexId src, dst;
    Bytes size;
  };
  std::vector<Message> messages;
  Rng rng;
  for (int i = 0; i < flows; ++i) {
    const int src = static_cast<int>(rng.next() % static_cast<uint64_t>(gpus));
    int dst;
    if (group > 0) {
      const int base = src / group * group;
      dst = base + static_cast<int>(rng.next() % static_cast<uint64_t>(group));
    } else {
      dst = static_cast<int>(rng.next() % static_cast<uint64_t>(gpus));
    }
    const Bytes size = kMiB + static_cast<Bytes>(rng.next() % (16 * kMiB));
    messages.push_back({topo.gpu(src), topo.gpu(dst), size});
    if (src != dst) routing.route(messages.back().src, messages.back().dst);
  }
  for (auto _ : state) {
    state.PauseTiming();
    Simulator sim;
    FlowNetwork net(sim, topo, routing);
    net.set_incremental(state.range(3) != 0);
    int completed = 0;
    state.ResumeTiming();
    for (const Message& m : messages) net.send(m.src, m.dst, m.size, [&completed] { ++completed; });
    sim.run();
    benchmark::DoNotOptimize(completed);
    recomputes = net.recomputes();
    revisited = net.recomputed_flows();
    rounds = net.solve_rounds();
    sim_seconds = sim.now().as_seconds();
  }
  state.SetItemsProcessed(state.iterations() * flows);
  state.counters["recomputes"] = static_cast<double>(recomputes);
  state.counters["flows_per_recompute"] =
      static_cast<double>(revisited) / static_cast<double>(recomputes);
  state.counters["ns_per_revisit"] =
      benchmark::Counter(static_cast<double>(revisited) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["sim_ms"] = sim_seconds * 1e3;
  state.counters["fills_per_recompute"] =
      static_cast<double>(rounds) / static_cast<double>(recomputes);
}
BENCHMARK(BM_ConcurrentFlows)
    ->Args({2'000, 0, 64, 0})
    ->Args({5'000, 0, 64, 0})
    ->Args({2'000, 0, 64, 1})
    ->Args({5'000, 0, 64, 1})
    ->Args({10'000, 0, 64, 1})
    ->Args({16'000, 0, 512, 1})
    ->Args({50'000, 0, 1'600, 1})
    ->Args({2'000, 0, 512, 1})
    ->Args({20'000, 0, 512, 1})
    ->Args({50'000, 0, 512, 1})
    ->Args({2'000, 32, 512, 1})
    ->Args({50'000, 32, 512, 1})
    ->Args({20'000, 8, 64, 1})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// Cost of looking up a cached route, which every message does: `pairs` distinct GPU pairs of a
// 2,048-GPU tree, routed before timing, then looked up in a scattered order, as the flows of a
// step's collectives are. Arg: pairs (65,536 is about what a DeepSeek-V3 step caches).
void BM_CachedRouteLookups(benchmark::State& state) {
  const Topology topo = two_level_tree(64, 32, 16, 1.0);
  Routing routing(topo);
  const auto gpus = static_cast<uint64_t>(topo.num_gpus());
  std::vector<std::pair<VertexId, VertexId>> pairs;
  Rng rng;
  while (pairs.size() < static_cast<std::size_t>(state.range(0))) {
    const VertexId src = topo.gpu(static_cast<int>(rng.next() % gpus));
    const VertexId dst = topo.gpu(static_cast<int>(rng.next() % gpus));
    if (src != dst) pairs.emplace_back(src, dst);
  }
  for (const auto& [src, dst] : pairs) routing.route(src, dst);
  std::size_t hops = 0;
  for (auto _ : state) {
    for (const auto& [src, dst] : pairs) hops += routing.route(src, dst).links.size();
  }
  benchmark::DoNotOptimize(hops);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(pairs.size()));
}
BENCHMARK(BM_CachedRouteLookups)->Arg(1'024)->Arg(65'536)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cs::net
