// Collectives as fluid transfers: a ring or hierarchical collective moves as coupled flows over
// its connections instead of message by message, so that its cost is O(ranks) at any size.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/coll/fluid_form.h"
#include "sim/coll/runner.h"
#include "sim/coll/schedule.h"
#include "sim/core/simulator.h"
#include "sim/net/network.h"

namespace cs::coll {

// Whether run_fluid_collective stands in for `key`'s message schedule: whether the form of its
// algorithm for its op has a fluid form that fits the key (OpForm::fluid in
// algorithms/registry.h; each algorithm's file says when and why). Today: ring all-reduce,
// reduce-scatter and all-gather whose hops are all alike (one server, or one member per server:
// node_size 1 or >= n) with one chunk or a window of one, rings over servers of several members
// in one chunk (within a tested bound of their message schedule, ring.cc), hierarchical
// all-reduce in one chunk, direct send/recv (every rank to the next, as ring attention's hops),
// NCCL's NVLS all-reduce inside an NVLink domain (nvls.cc), and NCCL's Tree (over servers of up
// to 8 GPUs) and NVLS-tree all-reduces across servers (chain_tree.cc, nvls_tree.cc), each within a
// tested bound. Other schedules run message by message (run_collective).
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

// What run_fluid_collective runs, built once: the phases of every copy, merged lane by lane, and
// the bytes and messages the message schedule would have sent.
struct FluidPlan {
  std::vector<FluidPhase> phases;
  Time launch;
  RunStats stats;
};
FluidPlan plan_fluid_collective(net::Network& network, const ScheduleKey& key,
                                std::span<const net::VertexId> rank_to_vertex, Bytes size,
                                int32_t mirrors = 1);
// Runs a plan at sim.now(), as run_fluid_collective does. With `alike_servers` (a run whose
// servers all load their own links alike: folded data-parallel replicas), a lane of several
// per-server runs (FluidLane::runs) is sent as that many mirrors, so that a congestion-aware
// network keeps one server's GPU and NIC links of a ring instead of every server's: the same
// pace, at a cost that does not grow with the ring.
void run_fluid_plan(Simulator& sim, net::Network& network, std::shared_ptr<const FluidPlan> plan,
                    int32_t mirrors, std::function<void(const RunStats&)> done,
                    bool alike_servers = false);

// Plans by (key, vertices, size, copies), for a run that calls the same collective of the same
// group again and again (every bucket, layer and microbatch): a ring's plan costs O(ranks) route
// and latency look-ups to build. Holds at most about kMaxCachedEdges edges (24 bytes each, so 200
// MB, reached only by rings of tens of thousands of GPUs); beyond that it plans each call afresh.
class FluidPlanCache {
 public:
  static constexpr std::size_t kMaxCachedEdges = std::size_t{1} << 23;
  std::shared_ptr<const FluidPlan> plan(net::Network& network, const ScheduleKey& key,
                                        std::span<const net::VertexId> vertices, Bytes size,
                                        int32_t mirrors);

 private:
  struct Entry {
    ScheduleKey key;
    Bytes size;
    int32_t mirrors;
    std::vector<net::VertexId> vertices;
    std::shared_ptr<const FluidPlan> plan;
  };
  std::unordered_map<std::size_t, std::vector<Entry>> plans_;
  std::size_t cached_edges_ = 0;
};

}  // namespace cs::coll
