// NVLink SHARP all-reduce inside one server (NCCL's NVLS): the NVSwitch reduces and multicasts.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/coll/algorithms/entries.h"
#include "sim/coll/fluid_form.h"

namespace cs::coll {
namespace {

// Rank r owns shard r; per chunk the NVSwitch sums shard r from every rank into r
// (multimem.ld_reduce) and r's sum is multicast back to all (multimem.st). As messages between
// GPUs that is every d sending its piece of shard r to r (reduce), then r sending the sum to
// every d (copy); the wire model's byte factor gives each GPU link the traffic the switch really
// puts on it.
Schedule build_nvls(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  const auto c = static_cast<uint32_t>(key.chunks);
  ScheduleBuilder b(key, n * c);
  std::vector<Connection> up(n * n), down(n * n);  // [src * n + dst]
  std::vector<uint32_t> deps, into;
  for (uint32_t j = 0; j < c; ++j) {
    for (uint32_t r = 0; r < n; ++r) {
      const uint32_t unit = r * c + j;
      into.clear();
      for (uint32_t o = 1; o < n; ++o) {
        const uint32_t d = (r + o) % n;
        deps.clear();
        up[d * n + r].add_window_dep(key.window, deps);
        const uint32_t m = b.add(Message{d, r, unit, unit, 1, Action::kReduce}, deps);
        up[d * n + r].sends.push_back(m);
        into.push_back(m);
      }
      for (uint32_t o = 1; o < n; ++o) {
        const uint32_t d = (r + o) % n;
        deps = into;
        down[r * n + d].add_window_dep(key.window, deps);
        down[r * n + d].sends.push_back(b.add(Message{r, d, unit, unit, 1, Action::kCopy}, deps));
      }
    }
  }
  return std::move(b).build();
}

// S/n shards in chunks of one NCCL ring step.
Pipelining nvls_pipelining(const PipelineShape& s) {
  return {s.size / s.n, kRingChunk};
}

// An NVLS all-reduce as fluid transfers: shard r's lane is every GPU's reduction into r and r's
// multicast back, each edge carrying the shard once over all chunks. Chunks pipeline through
// the two, so on an idle network the message schedule takes the first chunk's reductions (each
// GPU's port shared by the n - 1 it sends), chunks - 1 periods of the lane's slowest connection
// (its transfer and a window's share of its latencies, or its transfer while every reduction and
// multicast of the phase shares its GPU's port) and the last chunk's multicasts. The walk is
// what that adds to the lane's time alone (tests/coll/fluid_test.cc bounds the whole).
std::vector<FluidPhase> nvls_fluid_phases(const FluidContext& ctx) {
  const ScheduleKey& key = ctx.key;
  const auto n = static_cast<uint32_t>(key.n);
  const double payload = static_cast<double>(ctx.size) / n;
  FluidPhase phase(n);
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t o = 1; o < n; ++o) ctx.add_edge(phase[r], (r + o) % n, r, payload);
    for (uint32_t o = 1; o < n; ++o) ctx.add_edge(phase[r], r, (r + o) % n, payload);
  }
  const auto costs = ctx.message_costs(phase, key.chunks);
  for (uint32_t r = 0; r < n; ++r) {
    Time reduced, multicast, period, alone;
    for (uint32_t e = 0; e < costs[r].size(); ++e) {
      const auto& c = costs[r][e];
      const Time latency = c.route + c.step;
      // Only the reductions load the ports at the start, only the multicasts at the end.
      Time& end = e < n - 1 ? reduced : multicast;
      end = std::max(end, Time::ps(c.shared.count_ps() / 2) + latency);
      period = std::max({period, c.transfer + Time::ps(latency.count_ps() / key.window), c.shared});
      alone = std::max(alone, repeated(c.own, key.chunks));
    }
    const Time total = reduced + repeated(period, key.chunks - 1) + multicast;
    phase[r].walk = std::max(Time{}, total - alone);
  }
  ctx.stats.bytes_sent = 2 * static_cast<Bytes>(n - 1) * static_cast<Bytes>(ctx.size);
  ctx.stats.messages =
      static_cast<uint32_t>(std::min<int64_t>(int64_t{key.chunks} * n * 2 * (n - 1), UINT32_MAX));
  return {std::move(phase)};
}

// Every NVLS all-reduce runs inside one NVLink domain.
bool nvls_fluid_fits(const ScheduleKey& key) {
  return key.n >= 2;
}

}  // namespace

// What the NVSwitch really puts on each GPU's links, over what the schedule's messages carry.
// Per shard r: multimem.ld_reduce reads shard r from all n GPUs (every GPU's uplink sends S/n,
// r's downlink gets the S/n sum), and multimem.st sends r's S/n up once for the switch to
// multicast to all n (every downlink gets S/n). Over the n shards each link carries (n+1)/n of
// the buffer per direction, where the messages between GPUs carry 2(n-1)/n. NCCL's NVLS search
// (search.cc ncclTopoSearchTryNvls) books the same load: each head's channel at twice the speed on
// its own GPU's links and once on the others', (n+1) channel speeds per GPU over n channels.
double nvls_wire_factor(int32_t n) {
  return (n + 1.0) / (2.0 * (n - 1));
}

AlgorithmInfo nvls_algorithm() {
  AlgorithmInfo a;
  a.value = Algorithm::kNvls;
  a.name = "nvls";
  a.nccl = NcclAlgo::kNvls;
  a.nvlink_wire_factor = nvls_wire_factor;
  OpForm all_reduce;
  all_reduce.op = Op::kAllReduce;
  all_reduce.build = build_nvls;
  all_reduce.pipelining = nvls_pipelining;
  all_reduce.fluid = {nvls_fluid_fits, nvls_fluid_phases};
  a.ops.push_back(all_reduce);
  return a;
}

}  // namespace cs::coll
