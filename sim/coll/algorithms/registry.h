// The collective algorithms by name: one table with an entry per algorithm, each entry defined in
// its own file in this folder, and the lookups that replace switches over the algorithms.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/coll/collective.h"
#include "sim/coll/fluid_form.h"
#include "sim/coll/nccl_model.h"
#include "sim/coll/schedule.h"
#include "sim/core/units.h"

namespace cs::coll {

// What auto_chunks cuts into chunks for a call of some size: the block of the buffer that one
// message moves when unchunked (a ring shard, a tree half, a channel's share of a broadcast), and
// the piece it aims for; auto_window keeps about 64 KiB of block / chunks in flight, or `window`
// sends where that is set. With `fixed_pieces`, the pieces are `piece` long but the last, which
// is shorter (auto_tail); otherwise the block is cut into equal chunks. Past `max_chunks` pieces
// (0: kMaxAutoChunks) the block is cut into that many equal chunks.
struct Pipelining {
  Bytes block = 0;
  Bytes piece = 0;
  bool fixed_pieces = false;
  int32_t window = 0;
  int64_t max_chunks = 0;
};

// What a form's pipelining depends on: n ranks, `local` of them per server (1 when unknown or
// spread; only forms laid out on servers read it), `channels` parallel channels (forms that take
// them), `size` bytes, and the protocol NCCL runs the call with (kAuto: not known; taken as
// Simple), whose buffers set NCCL's chunks.
struct PipelineShape {
  int32_t n = 1;
  int32_t local = 1;
  int32_t channels = 1;
  Bytes size = 0;
  Protocol protocol = Protocol::kAuto;
};

// How one algorithm runs one op.
struct OpForm {
  Op op{};
  // The message schedule of a normalized key of this algorithm and op (see normalize).
  Schedule (*build)(const ScheduleKey& key) = nullptr;
  // What auto_chunks and auto_window cut for a call of this shape. nullptr: every send waits for
  // nothing, so neither pipelining nor a window applies (normalize sets chunks and window to 1).
  Pipelining (*pipelining)(const PipelineShape& shape) = nullptr;
  // Takes parallel rings (ScheduleKey::channels; normalize sets 1 otherwise). Several channels
  // over servers of local_size > 1 ranks are rail-aligned (channel_ring), and local_size must
  // then divide the group.
  bool channels = false;
  // For a schedule laid out on servers of local_size consecutive ranks, which must divide the
  // group: what normalize's error calls it ("hierarchical all-reduce"). Empty for the others,
  // whose local_size normalize resets to 0 unless rail-aligned rings use it.
  std::string_view server_layout;
  // The op as coupled flows instead of messages (run_fluid_collective), for the keys it fits;
  // none: always message by message.
  FluidForm fluid;

  bool on_servers() const { return !server_layout.empty(); }
};

// Everything the simulator needs to know about one algorithm. Adding an algorithm: its value in
// Algorithm (collective.h, before kAuto), a file here whose function returns its entry (declared
// in entries.h), and that function's line in the table (registry.cc).
struct AlgorithmInfo {
  Algorithm value{};
  std::string_view name;    // to_string / parse_algorithm: --algo, configs, reports ("ring")
  std::vector<OpForm> ops;  // the ops it implements, one form each

  // NCCL's algorithm that this one stands for in NCCL's cost model (nccl_model.h): the one a
  // request for this algorithm fixes (as NCCL_ALGO does), and whose per-hop and per-call
  // latencies its messages pay. Only read for the ops NCCL's model covers (nccl_tuned).
  NcclAlgo nccl = NcclAlgo::kRing;
  // Under NCCL's wire model (NcclTuning::plan with GPU data), the factor on its NVLink messages'
  // wire bytes beyond the protocol's, for `local` GPUs of a server in the group; nullptr: 1.
  double (*nvlink_wire_factor)(int32_t local) = nullptr;

  // The form for `op`, or nullptr where the algorithm does not implement it.
  const OpForm* form(Op op) const;
};

// Every algorithm, in Algorithm order (kAuto, which resolve() turns into one of them, has no
// entry). Built on first use, so it is safe to call from any initialiser.
const std::vector<AlgorithmInfo>& algorithm_table();

// The entry of an algorithm; throws std::invalid_argument for kAuto or a value with none.
const AlgorithmInfo& algorithm_info(Algorithm algo);

// The form of `algo` for `op`, or nullptr where there is none (kAuto included: resolve first).
const OpForm* find_form(Algorithm algo, Op op);

}  // namespace cs::coll
