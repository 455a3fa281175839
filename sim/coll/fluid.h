// Collectives as fluid transfers: a ring or hierarchical collective moves as coupled flows over
// its connections instead of message by message, so that its cost is O(ranks) at any size.
#pragma once

#include <functional>
#include <span>

#include "sim/coll/runner.h"
#include "sim/coll/schedule.h"
#include "sim/core/simulator.h"
#include "sim/net/network.h"

namespace cs::coll {

// Whether run_fluid_collective stands in for `key`'s message schedule: ring all-reduce,
// reduce-scatter and all-gather whose hops are all alike (one server, or one member per server:
// node_size 1 or >= n) and hierarchical all-reduce, with one chunk or a window of one. Other
// schedules run message by message (run_collective): rings that mix NVLink and network hops
// (rail-aligned rings), trees, NVLS, all-to-all, broadcast, and pipelines whose window hides
// latency between chunks.
bool fluid_supported(const ScheduleKey& key);

// Runs the collective of `key` (normalized or not) at sim.now(), with the time its message
// schedule takes on an otherwise idle network and the same link loads under contention:
// - A ring channel is one fluid transfer over its n connections (Network::send_fluid): in a ring
//   every step waits for the step before it, so the slowest connection sets the pace of all. Each
//   connection carries its share of the buffer (steps x block), scaled by the wire model.
// - Latency follows the schedule's critical path. With one send in flight per connection, each
//   step waits for the message of the previous position plus that connection's route latency and
//   step latency, so the path walks chunks x (steps - 1) + 1 consecutive connections: the run
//   charges the largest such sum around the ring, and launch_latency before the first step.
// - Hierarchical all-reduce runs its phases one after another: one chunk of intra-server
//   reduce-scatter, then everything else coupled (the remaining intra-server chunks overlap the
//   inter-server ring, as chunks pipeline through the phases), then one chunk of all-gather;
//   each followed by its rings' latency walk.
// `done` gets the bytes the message schedule would have sent (exact in total) and the number of
// messages it would have used. Throws std::invalid_argument if !fluid_supported(key) or on a
// vertex count that does not match key.n.
void run_fluid_collective(Simulator& sim, net::Network& network, const ScheduleKey& key,
                          std::span<const net::VertexId> rank_to_vertex, Bytes size,
                          std::function<void(const RunStats&)> done);

}  // namespace cs::coll
