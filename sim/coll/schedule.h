// An immutable collective schedule: messages over buffer slices with dependencies, in CSR form.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "sim/coll/collective.h"
#include "sim/coll/nccl_model.h"
#include "sim/core/units.h"

namespace cs::coll {

// How a schedule's messages meet the wire, as NCCL's protocols and NVLink make them (the runner
// applies it; the defaults are an ideal wire). A message's bytes are scaled by byte_factor
// (protocol flags, NVLS traffic) and, between ranks of one server, divided by nvlink_efficiency,
// between servers by net_efficiency (NCCL's share of the NIC rate);
// NCCL's per-hop hwLat (step_latency) is a whole hop's latency, the wire's included: its
// receiver forwards it once both the path's latency and step_latency have passed (see
// step_after_route); the collective starts after launch_latency (baseLat).
struct WireModel {
  double byte_factor = 1.0;
  double nvlink_efficiency = 1.0;
  double net_efficiency = 1.0;
  Time intra_step_latency;
  Time inter_step_latency;
  Time launch_latency;
  auto operator<=>(const WireModel&) const = default;
};

// What a hop's step latency adds after its message has crossed a path of latency `route`: NCCL
// measured hwLat end to end (DeepEP issue #303: 8 Hopper GPUs' all-reduce at 4 B-4 KB takes
// 12.5-16.7 us, NCCL's own LL ring model 15.0 us), so the wire counts once.
inline Time step_after_route(Time step, Time route) {
  return step > route ? step - route : Time{};
}

// What identifies a schedule; schedules are shared by every group with an equal key.
struct ScheduleKey {
  Op op = Op::kAllReduce;
  Algorithm algo = Algorithm::kAuto;
  int32_t n = 1;           // group size; ranks are group-local 0..n-1
  int32_t chunks = 1;      // pipeline chunks per block a message moves (ring shard, tree half,
                           // broadcast buffer); more chunks overlap more, see auto_chunks
  int32_t local_size = 0;  // hierarchical, rail rings: consecutive group ranks per node (rail
                           // rings: the last node may hold fewer)
  int32_t root = 0;        // broadcast only
  // Sends a connection (one sender, one receiver, one phase) keeps in flight, as NCCL_STEPS
  // buffer slots do: a send also waits for the connection's send `window` positions earlier to
  // complete, so latency overlaps instead of adding up per chunk. 1 sends strictly one at a time.
  int32_t window = 8;
  // Ring only: parallel rings (NCCL channels), each carrying 1/channels of every shard. With
  // local_size > 1 ranks per server and several servers, channel c is rail-aligned: every hop
  // between servers joins GPUs of one local index, so each NIC carries one channel.
  int32_t channels = 1;
  // Ring only, on one server whose GPUs join by direct NVLink links (no NVSwitch): channel c runs
  // the c-th ordering of the GPUs (mesh_ring), so that the channels load every link alike.
  bool mesh = false;
  Protocol protocol = Protocol::kSimple;  // for the record; its cost is in `wire`
  // Ranks per server for the wire model (0: unknown, every message counts as across servers).
  int32_t node_size = 0;
  WireModel wire{};
  // Broadcast only: 0 when its `chunks` pieces are alike; else the last piece's length in
  // 1/kTailParts of the others, 1 to kTailParts - 1 (NCCL forwards fixed-size pieces and a short
  // last one, see auto_tail).
  int32_t tail = 0;
  auto operator<=>(const ScheduleKey&) const = default;
};

// What ScheduleKey::tail counts in: a last piece's length is rounded up to 1/256 of a piece, so a
// broadcast's other pieces lie within 1/257 of the length asked for.
inline constexpr int32_t kTailParts = 256;

// What the receiver does with the slice: overwrite its own, or add into it.
enum class Action : uint8_t { kCopy, kReduce };

// One transfer. Buffers are counted in units, a grid the runner maps to bytes once the size is
// known, so that one schedule serves every size. The slice is read from the sender's buffer at
// [src_unit, src_unit + units) when the message starts and lands in the receiver's buffer at
// [dst_unit, dst_unit + units) when it completes.
struct Message {
  uint32_t src = 0;
  uint32_t dst = 0;
  uint32_t src_unit = 0;
  uint32_t dst_unit = 0;
  uint32_t units = 0;
  Action action = Action::kCopy;
  // A rank's copy within its own memory (all-to-all's own block): no network traffic.
  bool local() const { return src == dst; }
};

class ScheduleBuilder;

// Messages are stored in a topological order: every dependency has a smaller index.
class Schedule {
 public:
  const ScheduleKey& key() const { return key_; }
  int32_t num_ranks() const { return key_.n; }
  uint32_t num_units() const { return units_; }
  // A rank's working buffer holds buffer_scale * S bytes: 2 where send and receive buffers are
  // distinct (all-to-all, send/recv; the send buffer comes first), else 1.
  uint32_t buffer_scale() const { return scale_; }

  std::size_t num_messages() const { return messages_.size(); }
  std::span<const Message> messages() const { return messages_; }
  const Message& message(uint32_t m) const { return messages_[m]; }
  // Messages that must complete before m may start.
  std::span<const uint32_t> deps(uint32_t m) const {
    return {deps_.data() + dep_begin_[m], deps_.data() + dep_begin_[m + 1]};
  }
  // Messages that list m among their deps.
  std::span<const uint32_t> dependents(uint32_t m) const {
    return {dependents_.data() + dependent_begin_[m], dependents_.data() + dependent_begin_[m + 1]};
  }
  uint32_t max_deps() const { return max_deps_; }

  // Bytes of units [begin, end) of a working buffer for collective size `size`:
  // floor(end·W/U) − floor(begin·W/U) with W = buffer_scale·size, so adjacent ranges add up
  // exactly to W and no two units differ by more than a byte.
  Bytes unit_bytes(uint32_t begin, uint32_t end, Bytes size) const;
  Bytes message_bytes(uint32_t m, Bytes size) const {
    const Message& msg = messages_[m];
    return unit_bytes(msg.src_unit, msg.src_unit + msg.units, size);
  }
  // Network bytes each rank sends (local copies excluded).
  std::vector<Bytes> bytes_sent_per_rank(Bytes size) const;
  // Heap bytes the schedule holds, to show what sharing saves.
  std::size_t memory_bytes() const;

 private:
  friend class ScheduleBuilder;
  ScheduleKey key_;
  uint32_t units_ = 0;
  uint32_t scale_ = 1;
  uint32_t max_deps_ = 0;
  std::vector<Message> messages_;
  std::vector<uint32_t> dep_begin_{0};
  std::vector<uint32_t> deps_;
  std::vector<uint32_t> dependent_begin_;
  std::vector<uint32_t> dependents_;
};

// The most messages one schedule may hold: about 400 MB (24 bytes a message and some 24 of
// dependency lists), and a few seconds to build. A ring over thousands of ranks, or an
// all-to-all over tens of thousands, would take gigabytes and minutes message by message; their
// fluid forms (fluid.h) or smaller groups are the way to run them.
inline constexpr std::size_t kMaxScheduleMessages = std::size_t{1} << 23;

// Appends messages in an order where every dependency already exists, which makes cycles
// impossible by construction.
class ScheduleBuilder {
 public:
  ScheduleBuilder(const ScheduleKey& key, uint32_t num_units, uint32_t buffer_scale = 1);

  // Throws std::invalid_argument for ranks or units out of range or a dependency that does not
  // exist yet. Duplicate dependencies are dropped. Returns the message's index.
  uint32_t add(const Message& m, std::span<const uint32_t> deps);
  uint32_t add(const Message& m, std::initializer_list<uint32_t> deps = {}) {
    return add(m, std::span<const uint32_t>(deps.begin(), deps.size()));
  }
  uint32_t size() const { return static_cast<uint32_t>(s_.messages_.size()); }
  Schedule build() &&;

 private:
  [[noreturn]] void refuse_too_many_messages() const;
  Schedule s_;
};

}  // namespace cs::coll
