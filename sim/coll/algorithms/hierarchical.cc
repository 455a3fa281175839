// Hierarchical all-reduce over servers of local_size consecutive ranks: a reduce-scatter ring
// inside each server, an all-reduce ring among the ranks of one local index across servers, and
// an all-gather ring inside each server again.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/entries.h"
#include "sim/coll/fluid_form.h"

namespace cs::coll {
namespace {

// Per chunk the three rings, each phase starting per rank as soon as its data is ready.
Schedule build_hierarchical(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  const auto c = static_cast<uint32_t>(key.chunks);
  const auto local = static_cast<uint32_t>(key.local_size);
  const uint32_t nodes = n / local;
  // unit = local_shard·(c·nodes) + chunk·nodes + inter_piece: a chunk of a local shard is one
  // contiguous run of `nodes` units, which the inter-node ring splits one unit per node.
  ScheduleBuilder b(key, n * c);
  std::vector<Ring> intra_rs, intra_ag, inter;
  for (uint32_t q = 0; q < nodes; ++q) {
    intra_rs.emplace_back(iota_ranks(q * local, local), key.window);
    intra_ag.emplace_back(iota_ranks(q * local, local), key.window);
  }
  for (uint32_t l = 0; l < local; ++l) inter.emplace_back(iota_ranks(l, nodes, local), key.window);
  const Ready none(n);
  for (uint32_t j = 0; j < c; ++j) {
    const BlockUnit shard = [&](std::size_t l) {
      return static_cast<uint32_t>(l) * c * nodes + j * nodes;
    };
    Ready ready = none;
    for (uint32_t q = 0; q < nodes; ++q) {
      const Ready r = ring_steps(b, intra_rs[q], true, shard, nodes, none);
      for (uint32_t g : intra_rs[q].ranks) ready[g] = r[g];
    }
    Ready reduced = ready;
    for (uint32_t l = 0; l < local; ++l) {
      const BlockUnit piece = [&](std::size_t k) {
        return static_cast<uint32_t>(l * c * nodes + j * nodes + k);
      };
      const Ready rs = ring_steps(b, inter[l], true, piece, 1, ready);
      const Ready ag = ring_steps(b, inter[l], false, piece, 1, rs);
      for (uint32_t g : inter[l].ranks) reduced[g] = ag[g];
    }
    for (uint32_t q = 0; q < nodes; ++q) ring_steps(b, intra_ag[q], false, shard, nodes, reduced);
  }
  return std::move(b).build();
}

// One chunk only: the phases then run one after another, as each rank does. With more, chunks
// pipeline through the phases in a way the fluid phases do not follow closely enough (up to 0.8%
// off on 16 H100s at 256 MiB).
bool hierarchical_fluid_fits(const ScheduleKey& key) {
  return key.chunks == 1;
}

// The intra-server reduce-scatter rings, the inter-server all-reduce rings, the intra-server
// all-gather rings: each phase one fluid transfer per ring followed by its latency walk.
std::vector<FluidPhase> hierarchical_fluid_phases(const FluidContext& ctx) {
  const auto& key = ctx.key;
  const auto n = static_cast<uint32_t>(key.n), local = static_cast<uint32_t>(key.local_size);
  const uint32_t nodes = n / local;
  const double size = static_cast<double>(ctx.size);
  std::vector<std::vector<uint32_t>> intra_rings, inter_rings;
  for (uint32_t q = 0; q < nodes; ++q) intra_rings.push_back(iota_ranks(q * local, local));
  for (uint32_t l = 0; l < local; ++l) inter_rings.push_back(iota_ranks(l, nodes, local));
  // Reduce-scatter and all-gather inside each server move (local - 1) / local of the buffer
  // per connection; the inter-server ring all-reduces the 1/local shard over `nodes` ranks.
  // Every ring is a lane of its own, as the rings of one phase do not wait for each other.
  const int64_t inter_steps = 2 * (int64_t{nodes} - 1);
  FluidPhase scatter, across;
  for (const auto& ring : intra_rings) {
    FluidLane& lane = scatter.emplace_back();
    ctx.add_ring(lane, ring, size * (local - 1) / local);
    lane.walk = ctx.walk(ring, local - 1);
  }
  FluidPhase gather = scatter;
  for (const auto& lane : gather)
    for (const auto& e : lane.edges) ctx.stats.wire_bytes += std::llround(e.wire_bytes);
  for (const auto& ring : inter_rings) {
    FluidLane& lane = across.emplace_back();
    ctx.add_ring(lane, ring, size * static_cast<double>(inter_steps) / n);
    lane.walk = ctx.walk(ring, inter_steps);
  }
  ctx.stats.bytes_sent =
      int64_t{nodes} * 2 * (local - 1) * ctx.size + inter_steps * static_cast<Bytes>(ctx.size);
  const int64_t messages =
      int64_t{nodes} * 2 * local * (local - 1) + int64_t{local} * nodes * inter_steps;
  ctx.stats.messages = static_cast<uint32_t>(std::min<int64_t>(messages, UINT32_MAX));
  std::vector<FluidPhase> phases;
  for (FluidPhase* phase : {&scatter, &across, &gather})
    if (local > 1 || phase == &across) phases.push_back(std::move(*phase));
  if (nodes == 1) phases.erase(phases.begin() + 1);  // no inter-server phase
  return phases;
}

// S/n pieces in chunks of one NCCL ring step, so that the three phases overlap.
Pipelining hierarchical_pipelining(const PipelineShape& s) {
  return {s.size / s.n, kRingChunk};
}

}  // namespace

// NCCL's ring: across servers, NCCL's node-ordered rings put the same load on NVLink and NICs.
AlgorithmInfo hierarchical_algorithm() {
  AlgorithmInfo a;
  a.value = Algorithm::kHierarchical;
  a.name = "hierarchical";
  a.nccl = NcclAlgo::kRing;
  OpForm all_reduce;
  all_reduce.op = Op::kAllReduce;
  all_reduce.build = build_hierarchical;
  all_reduce.pipelining = hierarchical_pipelining;
  all_reduce.server_layout = "hierarchical all-reduce";
  all_reduce.fluid = {hierarchical_fluid_fits, hierarchical_fluid_phases};
  a.ops.push_back(all_reduce);
  return a;
}

}  // namespace cs::coll
