// Builds the message schedule of a collective (each algorithm's in its own file in algorithms/)
// and shares equal ones through a cache.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "sim/coll/schedule.h"

namespace cs::coll {

// Resolves kAuto, resets the fields the algorithm ignores (so equal shapes share a key) and
// validates the rest. Throws std::invalid_argument for an unsupported (algorithm, op) pair, a
// group size below 1, chunks or window below 1 (auto chunks are the caller's: see auto_chunks),
// a broadcast root outside the group, or a hierarchical
// local_size that is below 1 or does not divide n (no silent fallback: the caller should pick
// another algorithm, e.g. ring, for ragged groups).
ScheduleKey normalize(ScheduleKey key);

// Pipeline chunks for `size` when the caller leaves them to us (the CLI's --chunks 0), in the
// spirit of NCCL, whose pipelines move NCCL_BUFFSIZE / NCCL_STEPS = 4 MiB / 8 = 512 KiB slots:
// tree halves go in 512 KiB pieces, shrunk towards 64 KiB until there are 8 per tree level (as
// NCCL shrinks tree chunks), each channel's share of a broadcast in the pieces that cost its
// chain least (Simple's never shorter than its 512 KiB slice, the last one short: auto_tail),
// hierarchical S/n pieces in 2 MiB chunks (the 4 slots, ALLREDUCE_CHUNKSTEPS, of one NCCL ring
// step) so that its three phases overlap, the chain-tree's channel halves in NCCL's tree chunks
// for the protocol NCCL runs (`protocol`; kAuto: Simple's) and the depth of its chains and trees,
// grown past a message budget (chain_tree.cc). A flat ring gets 1: it is pipelined across its n
// shards already, and the flow model has no staging buffer to bound, so chunks would only add
// latency per chunk (8 H100s, 1 GiB: busbw 449 GB/s in 1 chunk, 406 in 64 2 MiB chunks).
// Capped at kMaxAutoChunks (a broadcast: about a million sends) to keep schedules small, so
// pieces of huge sizes grow; direct algorithms and single ranks get 1. `algo` is resolved first;
// each (algorithm, op) form says its block and piece (OpForm::pipelining), and a pair the
// algorithm does not implement gets 1 (normalize rejects it). `local`, the group's GPUs per
// server, is for forms laid out on servers (the chain-tree's depth), and `channels` (0: one per
// GPU of a server) for forms that split over channels (the chain-tree's share per channel, a
// broadcast's per channel); the others ignore them.
inline constexpr int32_t kMaxAutoChunks = 64;
int32_t auto_chunks(Op op, Algorithm algo, int32_t n, Bytes size, int32_t local = 1,
                    int32_t channels = 0, Protocol protocol = Protocol::kAuto);

// ScheduleKey::tail for the chunks auto_chunks cut: for forms that step through their block in
// fixed-size pieces as NCCL does (broadcast), the last piece's length in 1/kTailParts of a piece,
// rounded up; 0 where the pieces are alike (one piece, a block that is a whole number of them,
// forms that cut it evenly, or more pieces than the form takes, which then cuts it evenly).
int32_t auto_tail(Op op, Algorithm algo, int32_t n, Bytes size, int32_t local = 1,
                  int32_t channels = 0, Protocol protocol = Protocol::kAuto);

// The in-flight window for messages of `size` cut into `chunks` (the CLI's --window 0): about
// 64 KiB in flight per connection, so NCCL's NCCL_STEPS = kMaxWindow for messages up to 8 KiB
// and 1 from 64 KiB. Why not always 8: the flow model shares a link fairly among a connection's
// messages in flight instead of sending them in FIFO order, so a window of W messages of
// transfer time τ delays every pipeline hop by (W − 1)·τ, which only pays where τ is well below
// the latency it hides (tree all-reduce of 1 MiB in 8 chunks on 64 H100s: 57 µs with window 1,
// 145 µs with 8; of 4 KiB in 64 chunks: the other way round). Single ranks, direct sends and
// pairs the algorithm does not implement get 1.
inline constexpr int32_t kMaxWindow = 8;
int32_t auto_window(Op op, Algorithm algo, int32_t n, int32_t chunks, Bytes size, int32_t local = 1,
                    int32_t channels = 0, Protocol protocol = Protocol::kAuto);

// Builds the schedule of normalize(key), by the form of its algorithm for its op in the algorithm
// table (algorithms/registry.h); each algorithm's file in algorithms/ says how it moves the data
// (see collective.h for buffer semantics).
std::shared_ptr<const Schedule> build_schedule(const ScheduleKey& key);

// first, first + stride, ... (count ranks): a ring in rank order, or one rank per server.
std::vector<uint32_t> iota_ranks(uint32_t first, uint32_t count, uint32_t stride = 1);

// Group ranks in ring order for channel ch of a ring over n ranks in servers of `local`
// consecutive ranks. One server (or local <= 1): rank order. Several: each server is entered and
// left by GPUs of two adjacent local indices, ch and ch+1, swapped on every other server, so that
// every hop between servers joins GPUs of one local index (one rail, one NIC each end) and the
// ring closes on the rail it left from when the server count is even (with an odd count, one hop
// per ring crosses rails). NCCL keeps its rings on rails with PXN instead (the last GPU of a
// server hands the data over NVLink to the GPU on the next server's rail); the NIC load is the
// same, one channel per NIC. A last server of fewer ranks (n not a multiple of local) is entered
// and left the same way on its own indices, ch and ch+1 modulo its size. With `mesh` (one server
// of direct links): mesh_ring(n, ch).
// (algorithms/ring.cc)
std::vector<uint32_t> channel_ring(uint32_t n, uint32_t local, uint32_t ch, bool mesh = false);

// The GPUs of one server whose GPUs join each other by direct links, in the order of ring c of
// the (n - 1)! rings that start at rank 0: all of them together use every directed link equally
// often, as NCCL's rings do on such a server (each GPU's channels go to each of its peers alike).
int32_t mesh_ring_count(int32_t n);
std::vector<uint32_t> mesh_ring(uint32_t n, uint32_t c);

// One node of one of the two binary trees of NCCL's double binary tree over n ranks
// (ncclGetDtree): tree 0 is a binary tree rooted at rank 0 whose leaves are the odd ranks; tree 1
// mirrors it (rank -> n-1-rank) for even n and shifts it by one rank for odd n, so that most
// ranks are a leaf in one tree and an inner node in the other. -1 marks a missing neighbour.
// (algorithms/tree.cc)
struct TreeNode {
  int32_t parent = -1;
  int32_t child0 = -1;
  int32_t child1 = -1;
};
TreeNode double_binary_tree(int32_t n, int tree, int32_t rank);

// Hands out one shared schedule per normalized key, so that many groups of the same shape (say
// 128 data-parallel groups) hold one copy. Owned by whoever runs collectives; thread-safe.
class ScheduleCache {
 public:
  std::shared_ptr<const Schedule> get(const ScheduleKey& key);
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<ScheduleKey, std::shared_ptr<const Schedule>> schedules_;
};

}  // namespace cs::coll
