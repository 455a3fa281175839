// Hierarchical all-reduce over servers of local_size consecutive ranks: a reduce-scatter ring
// inside each server, an all-reduce ring among the ranks of one local index across servers, and
// an all-gather ring inside each server again.
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/entries.h"

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

// S/n pieces in chunks of one NCCL ring step, so that the three phases overlap.
Pipelining hierarchical_pipelining(int32_t n, Bytes size) {
  return {size / n, kRingChunk};
}

}  // namespace

AlgorithmInfo hierarchical_algorithm() {
  AlgorithmInfo a;
  a.value = Algorithm::kHierarchical;
  a.name = "hierarchical";
  OpForm all_reduce;
  all_reduce.op = Op::kAllReduce;
  all_reduce.build = build_hierarchical;
  all_reduce.pipelining = hierarchical_pipelining;
  all_reduce.servers = "hierarchical all-reduce";
  a.ops.push_back(all_reduce);
  return a;
}

}  // namespace cs::coll
