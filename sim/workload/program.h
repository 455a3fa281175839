// The program one pipeline stage runs: ops on in-order streams, with cross-stream dependencies.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/coll/collective.h"
#include "sim/compute/kernel.h"
#include "sim/core/units.h"
#include "sim/workload/layout.h"

namespace cs::workload {

enum class OpKind : uint8_t { kCompute, kCollective, kSend, kRecv };

// What an op's time counts as in reports.
enum class OpClass : uint8_t {
  kForward,
  kBackward,    // input gradients (the whole backward unless split for ZB-H1)
  kWeightGrad,  // weight gradients, split out for ZB-H1
  kRecompute,
  kOptimizer,
  kComm,
};

struct Op {
  OpKind kind = OpKind::kCompute;
  Stream stream = Stream::kCompute;
  OpClass op_class = OpClass::kForward;
  Dim dim = Dim::kTp;                       // collectives: the group; send / recv: kPp
  coll::Op coll_op = coll::Op::kAllReduce;  // collectives
  Time duration;                            // compute
  Bytes bytes = 0;                          // communication
  double flops = 0;                         // compute: hardware FLOPs (recompute included)
  int32_t peer_stage = -1;                  // send / recv: the other end's pipeline stage
  uint32_t tag = 0;                         // send / recv: equal on both ends
  int32_t microbatch = -1;
  uint32_t label = 0;                     // index into Program::labels
  uint32_t kernel = UINT32_MAX;           // compute: index into Program::kernels, for re-timing
  uint32_t deps_begin = 0, deps_end = 0;  // explicit dependencies in Program::deps
  // Workloads with explicit groups (imported traces), where ranks do not follow a layout:
  int32_t peer_rank = -1;  // send / recv: the other end's rank; when >= 0 it wins over peer_stage
  int32_t comm = -1;       // collectives: index into the executor's group table; < 0: by `dim`
  int32_t layer = -1;      // the transformer layer (in model order) an op belongs to, for timelines
  // Expert-parallel ops whose size differs by EP rank: compute, a row of Program::rank_times;
  // an EP all-to-all, an entry of Program::all_to_alls. UINT32_MAX: none.
  uint32_t varies = UINT32_MAX;
};

// An all-to-all-v over the expert-parallel group whose sizes follow the routing. Dispatch: every
// member sends `bytes` x share[d] to member d (the tokens routed to d's experts). Combine
// (reverse): the same transfers the other way. With node-limited routing (max_nodes > 0) a
// token crosses the network once per server it is routed to, at most max_nodes, and NVLink
// forwards it to that server's experts (DeepSeek-V3, section 3.2.2).
struct AllToAllV {
  std::vector<double> share;  // per member, sums to 1
  bool reverse = false;
  double copies_per_token = 1;  // expert copies of a token in `bytes` (top_k x kept share)
  int32_t top_k = 1;
  int32_t max_nodes = 0;
  // DeepEP's kernels (the flex dispatcher): a token crosses the network once per server and
  // NVLink once per GPU that holds one of its experts. Otherwise (NCCL's all-to-all of the
  // permuted copies) every expert copy travels to its GPU on its own.
  bool deduplicated = false;
  // Tokens each member routes through the call (a dispatch's or its combine's), for a library's
  // cost per token (gpu.proto deepep_ns_per_token_peer); 0: not known (a trace written before).
  int64_t tokens = 0;
  friend bool operator==(const AllToAllV&, const AllToAllV&) = default;
};

// What a compute op runs, kept so that a program can be re-timed for another GPU.
struct KernelCall {
  compute::Kernel kernel;
  compute::Precision precision = compute::Precision::kBf16;
};

// Shared by every rank of one pipeline stage: TP, CP and DP peers run the same ops.
struct Program {
  std::vector<KernelCall> kernels;
  std::vector<Op> ops;
  std::vector<uint32_t> deps;  // op indices, each smaller than the op that lists it
  std::array<std::vector<uint32_t>, kNumStreams> streams;  // op indices in stream order
  std::vector<std::string> labels;
  std::vector<std::vector<Time>> rank_times;  // per row: the op's duration by EP coordinate
  std::vector<AllToAllV> all_to_alls;
  std::unordered_map<std::string, uint32_t> label_index;
  // Dataflow programs (imported traces have no streams): every op other than compute starts as
  // soon as its dependencies are done; compute ops still queue on the compute stream, one kernel
  // at a time, in the order `streams` gives.
  bool dataflow = false;
  // Owns the text that kernels' `name` views point into, for programs read back from a file
  // (built-in programs point at static labels). Shared so that copies stay valid.
  std::shared_ptr<const std::vector<std::string>> kernel_names;

  // Appends `op` on its stream after the ops already there, depending on `after` as well.
  uint32_t add(Op op, std::initializer_list<uint32_t> after = {});
  uint32_t add(Op op, const std::vector<uint32_t>& after);
  uint32_t label(const std::string& text);
  std::size_t memory_bytes() const;
};

// Send/recv tags: one per (microbatch, model chunk, direction), equal on both ends.
inline uint32_t p2p_tag(int32_t microbatch, int32_t chunk, bool backward) {
  return (static_cast<uint32_t>(microbatch) << 9) | (static_cast<uint32_t>(chunk) << 1) |
         (backward ? 1u : 0u);
}

}  // namespace cs::workload
