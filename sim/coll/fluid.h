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
// node_size 1 or >= n) with one chunk or a window of one, hierarchical all-reduce in one chunk,
// and direct send/recv (every rank to the next, as ring attention's hops). Other schedules run
// message by message (run_collective): rings that mix NVLink and network hops (rail-aligned rings),
// trees, NVLS, all-to-all, broadcast, pipelines whose window hides latency between chunks, and
// hierarchical chunks that pipeline through the phases.
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
// - Hierarchical all-reduce (one chunk) runs its three phases one after another, as each rank
//   does: the intra-server reduce-scatter rings, the inter-server all-reduce rings, the
//   intra-server all-gather rings, each phase one fluid transfer followed by its latency walk.
// `done` gets the bytes the message schedule would have sent (exact in total) and the number of
// messages it would have used. With `mirrors` > 1, rank_to_vertex holds that many groups of
// key.n vertices, each the image of the first on other GPUs of the same servers (a folded TP
// group's members, Network::send_fluid): they run as one coupled collective and `done` counts
// them all. Throws std::invalid_argument if !fluid_supported(key) or on a vertex count that is
// not key.n x mirrors.
void run_fluid_collective(Simulator& sim, net::Network& network, const ScheduleKey& key,
                          std::span<const net::VertexId> rank_to_vertex, Bytes size,
                          std::function<void(const RunStats&)> done, int32_t mirrors = 1);

}  // namespace cs::coll
