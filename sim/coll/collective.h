// Names of the collective operations and algorithms, their buffer semantics and bus-bandwidth
// factors.
#pragma once

#include <cstdint>
#include <string_view>

namespace cs::coll {

// Buffer semantics, for a group of n ranks and a size S given like nccl-tests (the full buffer):
// - kAllReduce: every rank starts with a vector of S bytes and ends with the elementwise sum of
//   all ranks' vectors.
// - kAllGather: the output is S bytes; rank r starts with shard r (its S/n bytes, already at
//   offset r in the output, i.e. in place) and ends with every rank's shard.
// - kReduceScatter: every rank starts with S bytes; rank r ends with shard r (the r-th of n
//   contiguous blocks) of the elementwise sum. Its other blocks are scratch afterwards.
// - kAllToAll: every rank sends S bytes, split into n blocks; rank r's block d ends in rank d's
//   receive slot r. A rank's own block is a local copy, not network traffic.
// - kBroadcast: every rank ends with the root's S bytes.
// - kSendRecv: like nccl-tests' sendrecv, every rank r sends its S bytes to rank (r+1) mod n and
//   receives rank (r-1) mod n's. (A one-way pipeline-parallel send is a single Network::send.)
// Non-divisible sizes split exactly: blocks differ by at most a byte and always add up to S.
enum class Op : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kSendRecv
};

// kRing: ring (reduce-scatter / all-gather / both) and, for broadcast, a pipelined chain.
// kTree: NCCL's double binary tree (all-reduce). kHierarchical: intra-node reduce-scatter,
// inter-node ring all-reduce, intra-node all-gather (all-reduce). kDirect: every pair talks
// directly (all-to-all, send/recv). kAuto: what NCCL would usually pick for the op, see resolve().
enum class Algorithm : uint8_t { kRing, kTree, kHierarchical, kDirect, kAuto };

// Accept exactly the names that to_string returns; throw std::invalid_argument otherwise.
Op parse_op(std::string_view text);
Algorithm parse_algorithm(std::string_view text);
std::string_view to_string(Op op);
std::string_view to_string(Algorithm algo);

// kAuto becomes ring for all-reduce / all-gather / reduce-scatter / broadcast, direct for
// all-to-all and send/recv; other algorithms come back unchanged.
Algorithm resolve(Algorithm algo, Op op);
// Whether build_schedule knows `algo` (after resolve) for `op`.
bool supports(Algorithm algo, Op op);

// nccl-tests' busbw = algbw * factor, so that busbw is comparable to link bandwidth whatever n:
// all-reduce 2(n-1)/n, all-gather / reduce-scatter / all-to-all (n-1)/n, broadcast / send-recv 1.
double bus_bandwidth_factor(Op op, int n);

}  // namespace cs::coll
