// Runs a collective schedule on a simulated network: each message becomes a Network::send.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "sim/coll/schedule.h"
#include "sim/core/simulator.h"
#include "sim/core/units.h"
#include "sim/net/network.h"
#include "sim/net/topology.h"

namespace cs::coll {

struct RunStats {
  Time start;
  Time end;
  Bytes bytes_sent = 0;   // network bytes, all ranks together (local copies excluded)
  Bytes wire_bytes = 0;   // the same as the links carry them (schedule's WireModel applied)
  uint32_t messages = 0;  // network messages
};

// Starts the collective at sim.now(): every message whose dependencies have completed is sent
// from rank_to_vertex[src] to rank_to_vertex[dst] with schedule.message_bytes(m, size) bytes;
// local copies complete at once. `done` runs, as a simulator event, after the last message.
// `schedule` must outlive the run (hold the ScheduleCache's shared_ptr); rank_to_vertex is
// copied. The run keeps one counter per message and frees itself before `done` returns control
// to the simulator, so thousands of concurrent runs stay cheap. Throws std::invalid_argument if
// rank_to_vertex does not have one vertex per rank or size is negative.
void run_collective(Simulator& sim, net::Network& network, const Schedule& schedule,
                    std::span<const net::VertexId> rank_to_vertex, Bytes size,
                    std::function<void(const RunStats&)> done);
void run_collective(Simulator& sim, net::Network& network, const Schedule& schedule,
                    std::span<const net::VertexId> rank_to_vertex, Bytes size,
                    std::function<void()> done);

}  // namespace cs::coll
