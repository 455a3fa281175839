// Names of the collective operations and algorithms, their buffer semantics and bus-bandwidth
// factors.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "sim/core/units.h"

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
constexpr int kNumOps = 6;

// kRing: ring (reduce-scatter / all-gather / both) and, for broadcast, a pipelined chain.
// kTree: NCCL's double binary tree (all-reduce). kHierarchical: intra-node reduce-scatter,
// inter-node ring all-reduce, intra-node all-gather (all-reduce). kDirect: every pair talks
// directly (all-to-all, send/recv). kNvls: NVLink SHARP all-reduce inside one server (the NVSwitch
// reduces and multicasts). kNvlsTree: NVLS inside each of several servers, a double binary tree
// per rail between them (all-reduce). kPat: NCCL 2.23's log-depth all-gather / reduce-scatter
// for one GPU per server. kChainTree: NCCL's Tree across servers, a chain through each server's
// GPUs and a double binary tree between servers per NIC channel, reduce and broadcast pipelined
// (all-reduce). kAuto: what NCCL would usually pick for the op, see resolve().
enum class Algorithm : uint8_t {
  kRing,
  kTree,
  kHierarchical,
  kDirect,
  kNvls,
  kNvlsTree,
  kPat,
  kChainTree,
  kAuto
};

// Accept exactly the names that to_string returns; throw std::invalid_argument otherwise.
Op parse_op(std::string_view text);
Algorithm parse_algorithm(std::string_view text);
std::string_view to_string(Op op);
std::string_view to_string(Algorithm algo);

// kAuto becomes ring for all-reduce / all-gather / reduce-scatter / broadcast, direct for
// all-to-all and send/recv; other algorithms come back unchanged.
Algorithm resolve(Algorithm algo, Op op);
// What `--algo auto` runs for one size, like NCCL's tuner would with what a caller knows: the
// group size n and how many members share a server (members_per_node >= n: all on one server;
// pass 1 unless every server holds that many consecutive group ranks). All-reduce across
// servers takes the double binary tree below kTreeMaxBytes, where its 2·log2(n) latency-bound
// steps beat the 2(n−1) of a ring; above it hierarchical when members_per_node > 1 divides n
// (NVLink carries the intra-node phases, each NIC only 1/members_per_node of the data), ring
// otherwise and within one server. The threshold is the crossover measured on 64 H100s
// (dgx-h100): tree 17.9 µs vs hierarchical 19.2 µs at 64 KiB but 26.4 vs 19.7 at 128 KiB; and for
// 8 groups of one GPU per server, tree 11.5 vs ring 13.9 µs at 64 KiB, 22.3 vs 20.8 at 256 KiB.
// Other ops follow resolve(kAuto, op).
inline constexpr Bytes kTreeMaxBytes = 128 * kKiB;
Algorithm choose_algorithm(Op op, int32_t n, int32_t members_per_node, Bytes size);

// Members per server of a group of n whose member i sits on server server_of(i), as NCCL's plans
// take it: `local` when every server holds a run of `local` consecutive members, but the last,
// which may hold fewer (72 + 56 GPUs of two NVL72 racks; 8 + 4 of two DGX servers); else 1
// (members spread irregularly, planned as one per server). All on one server: the group's size.
int32_t members_per_server(int32_t n, const std::function<int32_t(int32_t)>& server_of);

// What one plan for `groups` groups of n takes as members per server: members_per_server of each
// when they all agree, else 1. server_of(g, i) is the server of member i of group g. A group laid
// out unlike the first (one offset by whole pipeline stages that starts mid-server) would
// otherwise run the first's plan: NVLS across racks.
int32_t common_members_per_server(int32_t groups, int32_t n,
                                  const std::function<int32_t(int32_t, int32_t)>& server_of);

// Whether build_schedule knows `algo` (after resolve) for `op`: its entry in the algorithm table
// (algorithms/registry.h) has a form for `op`.
bool supports(Algorithm algo, Op op);

// nccl-tests' busbw = algbw * factor, so that busbw is comparable to link bandwidth whatever n:
// all-reduce 2(n-1)/n, all-gather / reduce-scatter / all-to-all (n-1)/n, broadcast / send-recv 1.
double bus_bandwidth_factor(Op op, int n);

}  // namespace cs::coll
