// What each algorithm file in this folder exports for the table (registry.cc), and the pieces
// that several algorithms build on: connections with a send window, ring steps (ring.cc) and
// NCCL's pipeline sizes. Not for use outside the folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/registry.h"
#include "sim/coll/schedule.h"
#include "sim/core/units.h"

namespace cs::coll {

AlgorithmInfo ring_algorithm();          // ring.cc
AlgorithmInfo tree_algorithm();          // tree.cc
AlgorithmInfo hierarchical_algorithm();  // hierarchical.cc
AlgorithmInfo direct_algorithm();        // direct.cc
AlgorithmInfo nvls_algorithm();          // nvls.cc
AlgorithmInfo nvls_tree_algorithm();     // nvls_tree.cc
AlgorithmInfo pat_algorithm();           // pat.cc
AlgorithmInfo chain_tree_algorithm();    // chain_tree.cc

// NCCL's tree pipelining: halves of the buffer in pieces (down to 64 KiB) until there are 8 per
// level of a tree over n ranks, so that the pipeline fills. (tree.cc)
Pipelining tree_pipelining(const PipelineShape& shape);

// One of the two binary trees of NCCL's double binary tree over `members` (double_binary_tree):
// each member's node, and the members root first, by depth, so that children come after their
// parents. (tree.cc)
struct TreeOrder {
  std::vector<TreeNode> nodes;
  std::vector<int32_t> order;
};
TreeOrder tree_order(int32_t members, int tree);

// What the NVSwitch puts on each GPU's NVLinks in an NVLS reduction and multicast over `local`
// GPUs, over what the schedule's messages between GPUs carry: (local + 1) / (2 (local - 1)).
// (nvls.cc)
double nvls_wire_factor(int32_t local);

// NCCL's pipeline slot, NCCL_BUFFSIZE / NCCL_STEPS = 4 MiB / 8, and the ALLREDUCE_CHUNKSTEPS = 4
// slots of one NCCL ring step: the pieces auto_chunks aims for.
inline constexpr Bytes kSlot = 512 * kKiB;
inline constexpr Bytes kRingChunk = 4 * kSlot;

// A message index not set yet.
inline constexpr int64_t kNone = -1;

// Messages after which a rank's data for the next phase is in place, indexed by group rank.
using Ready = std::vector<std::vector<uint32_t>>;

// The sends of one connection in program order. A new send may start once the send `window`
// places earlier has completed: that frees the receive slot it used (NCCL_STEPS slots per
// connection), so at most `window` sends are in flight.
struct Connection {
  std::vector<uint32_t> sends;

  void add_window_dep(int32_t window, std::vector<uint32_t>& deps) const {
    const auto w = static_cast<std::size_t>(window);
    if (sends.size() >= w) deps.push_back(sends[sends.size() - w]);
  }
};

// One ring connection per position: sends leave each position in program order.
struct Ring {
  std::vector<uint32_t> ranks;  // group rank at each position; position p sends to p+1
  std::vector<Connection> out;  // position p's connection to p+1
  int32_t window = 1;

  Ring(std::vector<uint32_t> r, int32_t w) : ranks(std::move(r)), out(ranks.size()), window(w) {}
  std::size_t size() const { return ranks.size(); }
};

// Unit offset of block b; blocks are `len` units long.
using BlockUnit = std::function<uint32_t(std::size_t b)>;

// Runs the L−1 steps of a ring reduce-scatter (reduce) or all-gather (!reduce) and returns,
// per rank, the messages after which its result is complete: the last receive of a
// reduce-scatter (it carries everyone else's sum), every receive of an all-gather (with several
// sends in flight, the last one to be sent need not be the last to land). Reduce-scatter:
// position p ends with the sum of block p, sending block p−s−1 at step s. All-gather: position p
// starts with block p and sends block p−s at step s. Sends also wait until sender and receiver
// are ready (the receiver posts its receive only when it reaches this phase): explicitly for the
// first `window` steps, through the connection's window for later ones. (ring.cc)
Ready ring_steps(ScheduleBuilder& b, Ring& ring, bool reduce, const BlockUnit& block_unit,
                 uint32_t len, const Ready& ready);

}  // namespace cs::coll
