// Runs every rank's program on the simulated cluster: streams, dependencies, rendezvous, stats.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/core/simulator.h"
#include "sim/net/network.h"
#include "sim/net/topology.h"
#include "sim/workload/layout.h"
#include "sim/workload/program.h"

namespace cs::exec {

// Where one rank's compute stream spent the step. Idle time is charged to whatever the stream
// was waiting for when it resumed: a pipeline receive (the bubble), a data- or
// context-parallel collective (exposed communication), or nothing at all after its last op.
struct RankStats {
  Time compute;        // kernels, recompute and optimizer included
  Time recompute;      // part of `compute`
  Time tp_comm;        // tensor-parallel collectives, which block the compute stream
  Time pipeline_wait;  // idle, waiting for the previous or next stage
  Time pp_comm_wait;   // idle, waiting for a pipeline transfer already under way
  Time dp_wait;        // idle, waiting on data-parallel communication
  Time cp_wait;        // idle, waiting on context-parallel communication
  Time end_wait;       // done, waiting for the slowest rank to finish the step
  Time finish;         // when the rank's last op completed
};

// Time and network bytes of a collective run alone on its GPUs.
struct IsolatedCollective {
  Time duration;
  Bytes bytes_sent = 0;
};
using IsolatedCollectiveTimer = std::function<IsolatedCollective(
    const coll::Schedule&, std::span<const net::VertexId> vertices, Bytes size)>;

struct CommTally {
  std::array<Bytes, 6> by_op{};                    // indexed by coll::Op (send/recv: kSendRecv)
  std::array<Bytes, workload::kNumDims> by_dim{};  // network bytes sent, all ranks together
  uint64_t collectives = 0;
  uint64_t p2p_messages = 0;
  // NVLink bytes of collectives timed in isolation (they never reach the network's counters).
  Bytes isolated_nvlink_bytes = 0;
  uint64_t isolated_collectives = 0;
};

// An op some rank could not finish: the run ended without it (a deadlock, or a peer that never
// reached the same collective).
struct StuckOp {
  int32_t rank;
  uint32_t op;
  std::string what;
};

class Executor {
 public:
  // `programs[s]` is run by every rank of pipeline stage s. Everything passed must outlive the
  // executor. Rank r runs on GPU r of the topology.
  Executor(Simulator& sim, net::Network& network, const net::Topology& topology,
           const workload::Layout& layout, const std::vector<workload::Program>& programs);

  // Collectives of a dimension whose groups each fill part of one server's NVSwitch domain, while
  // no other dimension has two members on one server, have those NVLink ports to themselves:
  // nothing else can slow them. Such a collective's time then depends only on its schedule and
  // size, so `timer` runs it once alone (on the same network model) and the executor reuses the
  // result for every group and every later call, instead of simulating each message again. For
  // TP 8 this removes most of the events of a large run.
  void set_isolated_collective_timer(IsolatedCollectiveTimer timer) {
    isolated_timer_ = std::move(timer);
  }

  // Called as each op of a rank in `ranks` completes, with the time it started (for a collective
  // or transfer: when this rank posted it). For timelines; costs nothing when not set.
  using OpObserver = std::function<void(int32_t rank, uint32_t op, Time start, Time end)>;
  void set_op_observer(OpObserver observer, std::vector<bool> ranks) {
    observer_ = std::move(observer);
    observed_ = std::move(ranks);
  }
  const workload::Program& program_of_rank(int32_t rank) const { return program_of(rank); }

  // Starts every rank at sim.now(); then call sim.run().
  void start();

  bool all_finished() const { return finished_ranks_ == layout_.world(); }
  // At most `limit` stuck ops, in rank order, for error messages.
  std::vector<StuckOp> stuck_ops(std::size_t limit) const;

  const std::vector<RankStats>& rank_stats() const { return stats_; }
  const CommTally& comm() const { return comm_; }
  Time step_end() const { return step_end_; }

 private:
  struct RankState {
    std::array<uint32_t, workload::kNumStreams> head{};  // next position in each stream
    std::array<bool, workload::kNumStreams> busy{};
    std::array<Time, workload::kNumStreams> started{};  // of the op running on each stream
    Time compute_free_since;                            // when the compute stream last went idle
    workload::OpClass last_done_class = workload::OpClass::kForward;
    workload::OpKind last_done_kind = workload::OpKind::kCompute;
    workload::Dim last_done_dim = workload::Dim::kTp;
    Time last_transfer_start;  // of the latest pipeline receive to complete
    uint32_t ops_left = 0;
  };
  struct PendingP2p {
    int32_t rank;
    uint32_t op;
  };

  const workload::Program& program_of(int32_t rank) const {
    return programs_[static_cast<std::size_t>(layout_.coord(rank, workload::Dim::kPp))];
  }
  bool is_done(int32_t rank, uint32_t op) const;
  void set_done(int32_t rank, uint32_t op);
  void try_start(int32_t rank);
  void start_op(int32_t rank, uint32_t op);
  void complete(int32_t rank, uint32_t op);
  void arrive_collective(int32_t rank, uint32_t op);
  void arrive_p2p(int32_t rank, uint32_t op);
  void charge_idle(int32_t rank, Time from, Time to);
  // The schedule NCCL would run for this collective: algorithm, chunks and window by size and
  // by how the group sits on servers.
  coll::ScheduleKey schedule_key(coll::Op op, workload::Dim dim, Bytes bytes) const;

  Simulator& sim_;
  net::Network& network_;
  const net::Topology& topology_;
  const workload::Layout& layout_;
  const std::vector<workload::Program>& programs_;
  coll::ScheduleCache schedules_;
  // Per dimension: consecutive group members that share a server (layouts are regular, so the
  // first group tells for all).
  std::array<int32_t, workload::kNumDims> members_per_node_{};
  std::array<bool, workload::kNumDims> owns_nvlink_{};
  IsolatedCollectiveTimer isolated_timer_;
  OpObserver observer_;
  std::vector<bool> observed_;  // by rank
  std::map<std::pair<coll::ScheduleKey, Bytes>, IsolatedCollective> isolated_;

  std::vector<RankState> ranks_;
  std::vector<RankStats> stats_;
  std::vector<uint64_t> done_bits_;  // one bit per (rank, op)
  std::size_t words_per_rank_ = 0;
  std::unordered_map<uint64_t, uint32_t> collective_arrivals_;
  std::unordered_map<uint64_t, PendingP2p> p2p_pending_;
  CommTally comm_;
  int32_t finished_ranks_ = 0;
  Time step_end_;
};

}  // namespace cs::exec
