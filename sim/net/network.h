// What every transfer model offers the layers above: move bytes between two vertices over time.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "sim/core/units.h"
#include "sim/net/routing.h"
#include "sim/net/topology.h"

namespace cs::net {

// Bytes and messages that crossed each class of link, counted once per message at its widest
// class (a message that touches the network counts as network, NVLink-only as nvlink).
struct TrafficStats {
  std::array<Bytes, 3> bytes_by_class{};  // indexed by LinkClass
  std::array<uint64_t, 3> messages_by_class{};
  uint64_t messages = 0;

  // Counts one message at its route's link class; a message to oneself (no route) only in the
  // total.
  void count(const Route* route, Bytes bytes) {
    ++messages;
    if (route == nullptr) return;
    const auto c = static_cast<std::size_t>(route->link_class);
    bytes_by_class[c] += bytes;
    ++messages_by_class[c];
  }
  void add(const TrafficStats& other) {
    for (std::size_t c = 0; c < bytes_by_class.size(); ++c) {
      bytes_by_class[c] += other.bytes_by_class[c];
      messages_by_class[c] += other.messages_by_class[c];
    }
    messages += other.messages;
  }
};

// One connection of a fluid transfer: `wire_bytes` leave `src` for `dst` over the transfer.
struct FluidEdge {
  VertexId src = 0;
  VertexId dst = 0;
  double wire_bytes = 0;
};

// The caller's note of the plan a network built for an edge list it sends again and again (a
// cached collective's lane, an EP group's all-to-all): the network fills it on the first send and
// reads it on the next, instead of hashing and comparing the whole list. It belongs beside a list
// that never changes.
struct FluidPlanSlot {
  uint64_t network = 0;  // the id of the network that filled it; 0: empty
  uint32_t plan = 0;
  int32_t mirrors = 0;
  // Of the plan's place in a network that may give it to another plan later: a slot whose
  // generation is out of date names a plan the network no longer keeps.
  uint32_t generation = 0;
};

class Network {
 public:
  using Done = std::function<void()>;
  virtual ~Network() = default;

  // Starts moving `bytes` from `src` to `dst` now; `done` runs when the last byte has arrived.
  // A message to oneself or of zero bytes still pays the path latency (zero for oneself).
  virtual void send(VertexId src, VertexId dst, Bytes bytes, Done done) = 0;
  // Moves every edge's bytes at one shared pace, so that all edges finish together and the
  // slowest holds the others back, as the connections of a pipelined ring or of a collective's
  // phases do. `waits` is the time the transfer spends between its steps (a ring's per-step
  // route and NCCL latencies along its critical path): alone on the network it takes its
  // transfer time plus `waits`, and under contention its flow asks for no more than that pace,
  // leaving the gaps between its steps to others, as a step-by-step run does. `done` runs at the
  // end. Edges to oneself and of no bytes carry nothing.
  //
  // `mirrors` > 1 says that `edges` holds that many equal runs, run k the image of run 0 on other
  // GPUs (the members of a folded tensor-parallel group, each on its own GPU and NIC, or the
  // other replicas of a folded data-parallel one). A congestion-aware network may then keep only
  // run 0's links that touch a GPU or NIC, since every run loads its own such links alike, and
  // add up the runs' shares of the switch links: one flow instead of `mirrors`, with the same
  // loads. `slot`, when not null, remembers the network's plan for `edges` (FluidPlanSlot).
  virtual void send_fluid(std::span<const FluidEdge> edges, int32_t mirrors, Time waits, Done done,
                          FluidPlanSlot* slot) = 0;
  // The latency send() adds to a message from `src` to `dst` after its last byte leaves.
  virtual Time path_latency(VertexId src, VertexId dst) = 0;
  // How long `bytes` take to leave `src` for `dst` on an otherwise idle network while `sharing`
  // transfers (this one included) cross the route's slowest link at once, without the latency:
  // what a fluid form charges one message of its critical path (fluid_form.h).
  virtual Time alone_transfer_time(VertexId src, VertexId dst, double bytes, int32_t sharing) = 0;
  virtual std::string_view name() const = 0;
  virtual const TrafficStats& stats() const = 0;

 protected:
  // Names this network in the FluidPlanSlots it fills: unique per process, never 0.
  const uint64_t slot_id_ = next_slot_id();

 private:
  static uint64_t next_slot_id() {
    static std::atomic<uint64_t> last{0};
    return ++last;
  }
};

}  // namespace cs::net
