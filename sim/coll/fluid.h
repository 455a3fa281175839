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

// Whether run_fluid_collective stands in for `key`'s message schedule: whether the form of its
// algorithm for its op has a fluid form that fits the key (OpForm::fluid in
// algorithms/registry.h; each algorithm's file says when and why). Today: ring all-reduce,
// reduce-scatter and all-gather whose hops are all alike (one server, or one member per server:
// node_size 1 or >= n) with one chunk or a window of one, hierarchical all-reduce in one chunk,
// and direct send/recv (every rank to the next, as ring attention's hops). Other schedules run
// message by message (run_collective).
bool fluid_supported(const ScheduleKey& key);

// Runs the collective of `key` (normalized or not) at sim.now(), with the time its message
// schedule takes on an otherwise idle network and the same link loads under contention, as the
// phases of its fluid form (fluid_form.h): each lane of coupled connections one fluid transfer
// (Network::send_fluid) followed by its latency walk, the schedule's critical path; each phase
// once every lane of the one before has ended, the first after launch_latency. A ring channel,
// for one, is a lane over its n connections: in a ring every step waits for the step before it,
// so the slowest connection sets the pace of all.
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
