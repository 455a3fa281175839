// What an algorithm's fluid form is built from (run_fluid_collective runs it, fluid.h): lanes of
// coupled connections, phases of lanes that run side by side, and the context that turns group
// ranks into edges and latencies.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/coll/runner.h"
#include "sim/coll/schedule.h"
#include "sim/core/units.h"
#include "sim/net/network.h"

namespace cs::coll {

// Coupled connections that move at one pace, then wait `walk` (their latency critical path).
// `runs` > 1 says that `edges` are that many equal runs, run k the image of run 0 on the k-th
// server (a ring's per-server segments over servers that are all alike), which a run over alike
// servers may pass on as mirrors (Network::send_fluid, run_fluid_plan).
struct FluidLane {
  std::vector<net::FluidEdge> edges;
  Time walk;
  int32_t runs = 1;
  mutable net::FluidPlanSlot slot;  // the network's plan for `edges`, kept across sends
};
// Lanes that run side by side (a ring's channels); the next phase starts when all have ended.
using FluidPhase = std::vector<FluidLane>;

// What one group's fluid run needs to turn group ranks into edges and latencies. A form's phases
// fill in `stats` with the bytes and messages its message schedule would have sent; add_ring
// counts the wire bytes.
struct FluidContext {
  net::Network& network;
  const ScheduleKey& key;  // normalized
  std::span<const net::VertexId> vertices;
  Bytes size;
  RunStats& stats;

  bool intra_node(uint32_t a, uint32_t b) const;
  // Latency of the connection a -> b, as a message on it pays: its route's, or NCCL's per-step
  // latency where that is longer (step_after_route).
  Time latency(uint32_t a, uint32_t b) const;
  // Adds the connection a -> b carrying `payload` bytes of data, scaled by the wire model.
  void add_edge(FluidLane& lane, uint32_t a, uint32_t b, double payload) const;
  // Adds the ring's connections (position p -> p+1), each carrying `payload` bytes of data.
  void add_ring(FluidLane& lane, const std::vector<uint32_t>& ring, double payload) const;
  // The largest latency along `length` consecutive connections of the ring, cyclically.
  Time walk(const std::vector<uint32_t>& ring, int64_t length) const;
  // What one message costs on each connection of each lane of `phase` (per lane, one per edge,
  // in order) when every edge carries `messages` equal messages: its transfer time on the
  // network alone (`transfer`), while the edges of the phase that leave the same GPU (or reach
  // it) over the same class of link send at once (`shared`), as many transfers as its own lane
  // has such edges (`own`: the lane alone on the network), its route's latency and what NCCL's
  // per-step latency adds to it (step_after_route).
  struct MessageCost {
    Time transfer, shared, own, route, step;
  };
  std::vector<std::vector<MessageCost>> message_costs(const FluidPhase& phase,
                                                      int64_t messages) const;
};

// A cost's time once per `count` messages sent back to back on a connection.
inline Time repeated(Time t, int64_t count) {
  return Time::ps(count * t.count_ps());
}

// The largest sum of `length` consecutive costs, cyclically (a chain of dependent messages that
// walks round a ring).
Time cyclic_window_max(std::span<const Time> costs, int64_t length);

// An (algorithm, op) form as fluid transfers: `fits` says for which normalized keys the phases
// stand in for the message schedule (same time on an idle network, same link loads), `phases`
// builds them for one group. Both nullptr where the form always runs message by message.
struct FluidForm {
  bool (*fits)(const ScheduleKey& key) = nullptr;
  std::vector<FluidPhase> (*phases)(const FluidContext& ctx) = nullptr;
};

}  // namespace cs::coll
