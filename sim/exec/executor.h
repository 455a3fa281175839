// Runs every rank's program on the simulated cluster: streams, dependencies, rendezvous, stats.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/fluid.h"
#include "sim/coll/nccl_plan.h"
#include "sim/coll/runner.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/core/simulator.h"
#include "sim/exec/all_to_all_plans.h"
#include "sim/exec/all_to_all_v.h"
#include "sim/exec/collective_groups.h"
#include "sim/exec/executor_options.h"
#include "sim/exec/folding.h"
#include "sim/exec/interference.h"
#include "sim/exec/kernel_stretcher.h"
#include "sim/exec/peer_messages.h"
#include "sim/exec/variability.h"
#include "sim/net/network.h"
#include "sim/net/topology.h"
#include "sim/workload/layout.h"
#include "sim/workload/program.h"

namespace cs::exec {

// Where one rank's compute stream spent the step. Idle time is charged to whatever the stream
// was waiting for when it resumed: a pipeline receive (the bubble), a data- or
// context-parallel collective (exposed communication), or nothing at all after its last op.
struct RankStats {
  Time compute;       // kernels alone, recompute and optimizer included
  Time interference;  // compute-stream time added by communication running beside kernels
  Time recompute;     // part of `compute`
  // Compute-stream time added by side-stream kernels holding the GPU (side_stream_contention).
  Time side_stream_hold;
  // Part of `compute`: kernels and host work on other streams than the compute stream (a
  // stack's side-stream copies, offload transfers), which run beside the compute stream's.
  Time side_stream;
  Time pipeline_wait;  // idle, waiting for the previous or next stage
  // Exposed communication by dimension: the compute stream blocked on a collective of its own
  // (tensor-parallel, expert-parallel), or idle waiting for a pipeline transfer already under
  // way or for another stream's collective.
  std::array<Time, workload::kNumDims> comm_wait{};
  // Part of comm_wait: the rank inside a blocking collective, waiting for the members that posted
  // it later (a slower rank, the ranks whose experts got the most tokens).
  std::array<Time, workload::kNumDims> peer_wait{};
  Time end_wait;  // done, waiting for the slowest rank to finish the step
  // Expert-parallel collectives from the rank's post to their end (the exposed part of them, in
  // comm_wait, can be no more): the all-to-alls and the token-count all-gather before a forward's
  // dispatch.
  Time all_to_all;
  // The part of `all_to_all` their wire costs account for (ExecutorOptions::all_to_all_wire): each
  // all-to-all's time in flight times the share its busiest endpoint's time grows by with them
  // (exec::endpoint_seconds).
  Time all_to_all_wire;
  // The part of `all_to_all` DeepEP's token cost accounts for (ExecutorOptions::deepep_tokens).
  Time all_to_all_token_cost;
  // Compute-stream idle with its next kernel's inputs ready, waiting for the host to launch it
  // (ExecutorOptions::host_per_kernel).
  Time host_wait;
  Time finish;  // when the rank's last op completed
  // The part of pipeline_wait before the rank's first compute-stream op: the wait for its first
  // input, which a stage that need not synchronise its optimizer step spends on its previous step.
  Time lead_wait;
  Time& wait_for(workload::Dim d) { return comm_wait[static_cast<std::size_t>(d)]; }
  Time wait_for(workload::Dim d) const { return comm_wait[static_cast<std::size_t>(d)]; }
};

// A kind of collective as a run ran it: its dimension and op, and the algorithm and protocol that
// NCCL's choice (or the one asked for) gave it.
struct CollectiveKind {
  workload::Dim dim;
  coll::Op op;
  coll::Algorithm algo;
  coll::Protocol protocol;
  auto operator<=>(const CollectiveKind&) const = default;
};
// How many calls of a kind ran, every folded copy counted, and their sizes summed.
struct KindCount {
  uint64_t calls = 0;
  Bytes bytes = 0;
};

struct CommTally {
  std::array<Bytes, coll::kNumOps> by_op{};        // indexed by coll::Op (send/recv: kSendRecv)
  std::array<Bytes, workload::kNumDims> by_dim{};  // network bytes sent, all ranks together
  uint64_t collectives = 0;
  uint64_t p2p_messages = 0;
  // NVLink bytes of collectives timed in isolation (they never reach the network's counters).
  Bytes isolated_nvlink_bytes = 0;
  uint64_t isolated_collectives = 0;
  std::map<CollectiveKind, KindCount> by_kind;  // group collectives (not uneven all-to-alls)
};

// An op some rank could not finish: the run ended without it (a deadlock, or a peer that never
// reached the same collective).
struct StuckOp {
  int32_t rank;
  uint32_t op;
  std::string what;
};

// A workload whose ranks do not follow a layout (an imported trace): each rank names its program,
// collectives name a communicator group (Op::comm) and sends / receives an absolute peer
// (Op::peer_rank). A group's collectives match in the order each member posts them, as NCCL's
// do on one communicator; messages between two ranks with one tag match first-in first-out.
struct ExplicitWorkload {
  std::vector<workload::Program> programs;
  std::vector<uint32_t> program_of_rank;     // rank -> index into programs
  std::vector<std::vector<int32_t>> groups;  // communicator id -> member ranks, in ring order
};

class Executor {
 public:
  // `programs[s]` is run by every rank of pipeline stage s. Everything passed must outlive the
  // executor. Rank r runs on GPU gpu_of_rank[r] of the topology (empty: on GPU r), so that
  // several jobs can share one cluster; throws std::invalid_argument unless the placement names
  // one distinct GPU of the topology per rank.
  Executor(Simulator& sim, net::Network& network, const net::Topology& topology,
           const workload::Layout& layout, const std::vector<workload::Program>& programs,
           ExecutorOptions options = {}, std::vector<int32_t> gpu_of_rank = {});
  // Runs an explicit workload: rank r runs workload.programs[workload.program_of_rank[r]].
  Executor(Simulator& sim, net::Network& network, const net::Topology& topology,
           const ExplicitWorkload& workload, ExecutorOptions options = {});

  // Ranks each simulated rank stands for (1: every rank runs).
  int32_t fold() const { return static_cast<int32_t>(folding_.represented().size()); }
  const workload::Program& program_of_rank(int32_t rank) const { return program_of(rank); }

  // Starts every rank at sim.now(); then call sim.run().
  void start();
  // Also false while a delivered message has met no receive (explicit workloads).
  bool all_finished() const;
  // At most `limit` stuck ops, in rank order, for error messages.
  std::vector<StuckOp> stuck_ops(std::size_t limit) const;
  // Throws std::runtime_error "<what>; stuck:" and one line per stuck op (at most `limit`) unless
  // every rank finished.
  void require_finished(const std::string& what, std::size_t limit) const;

  // The share of the simulated ranks' ops completed so far, for progress lines.
  double progress() const {
    return ops_total_ > 0 ? static_cast<double>(ops_done_) / static_cast<double>(ops_total_) : 0;
  }

  // Memory the executor holds per rank of a layout whose largest program has `max_ops` ops.
  static std::size_t bytes_per_rank(std::size_t max_ops) {
    return sizeof(RankState) + sizeof(RankStats) + KernelStretcher::bytes_per_rank() +
           (max_ops + 63) / 64 * 8;
  }

  const std::vector<RankStats>& rank_stats() const { return stats_; }
  const CommTally& comm() const { return comm_; }
  Time step_end() const { return step_end_; }

 private:
  struct RankState {
    std::array<uint32_t, workload::kNumStreams> head{};  // next position in each stream
    // Per stream, the head op's dependencies still to check: [dep_next, dep_end) in the program's
    // deps (those before dep_next are done). Kept here so that a stream waiting on another rank
    // rechecks one dependency without reading its op again.
    std::array<uint32_t, workload::kNumStreams> dep_next{}, dep_end{};
    std::array<bool, workload::kNumStreams> busy{};
    // Bit s: stream s is idle with ops left, so try_start visits only those streams.
    uint32_t startable = 0;
    std::array<Time, workload::kNumStreams> started{};  // of the op running on each stream
    Time compute_free_since;                            // when the compute stream last went idle
    workload::OpClass last_done_class = workload::OpClass::kForward;
    workload::OpKind last_done_kind = workload::OpKind::kCompute;
    workload::Stream last_done_stream = workload::Stream::kCompute;
    Time last_transfer_start;  // of the latest pipeline receive to complete
    uint32_t ops_left = 0;
    // The compute stream's head op is ready but not yet launched by the host: since when, and
    // whether a wake-up at its launch is already scheduled.
    Time host_gated_since;
    bool host_gated = false;
  };
  const workload::Program& program_of(int32_t rank) const {
    return *rank_programs_[static_cast<std::size_t>(rank)];
  }
  ProgramOfRank rank_program_fn() const {
    return [this](int32_t rank) -> const workload::Program& { return program_of(rank); };
  }
  // Points the head op of `rank`'s stream `s` at its dependencies (RankState::dep_next).
  void load_head_deps(int32_t rank, int s);
  // The topology vertex of `rank`'s GPU under the placement.
  net::VertexId gpu_of(int32_t rank) const {
    return topology_.gpu(gpu_index_.empty() ? rank : gpu_index_[static_cast<std::size_t>(rank)]);
  }
  void check_placement() const;
  void init_ranks();
  // Dataflow programs: ops off the compute stream start when their last dependency completes.
  bool is_free(const workload::Program& program, const workload::Op& o) const {
    return program.dataflow && o.stream != workload::Stream::kCompute;
  }
  void release_dependents(int32_t rank, uint32_t op);
  // Marks (rank, op) as unable to proceed, with the reason stuck_ops() will give.
  void block(int32_t rank, uint32_t op, std::string reason);
  // One key for a pair of ids (rank and op, communicator and sequence number).
  static uint64_t pair_key(int64_t a, int64_t b) {
    return static_cast<uint64_t>(a) << 32 | static_cast<uint32_t>(b);
  }
  std::string describe(int32_t rank, uint32_t op) const;
  bool is_done(int32_t rank, uint32_t op) const;
  void set_done(int32_t rank, uint32_t op);
  void try_start(int32_t rank);
  // Whether the host has launched compute op `op` of `rank` by now; if not, wakes the rank then.
  bool launched(int32_t rank, uint32_t op);
  // When the host finishes launching each compute op of each program, from the step's start: a
  // kernel's launch after the one before, and a layer pass's hooks as the pass begins.
  void plan_host_launches();
  void start_op(int32_t rank, uint32_t op);
  // How long compute op `op` takes on `rank` alone on its GPU.
  Time compute_duration(int32_t rank, uint32_t op) const;
  void complete(int32_t rank, uint32_t op);
  void arrive_collective(int32_t rank, uint32_t op);
  void arrive_p2p(int32_t rank, uint32_t op);
  // Moves a matched message's bytes; its ops end as they arrive.
  void start_transfer(std::shared_ptr<PeerMessage> msg);
  void charge_idle(int32_t rank, Time from, Time to);
  void notify_observer(int32_t rank, uint32_t op, Time start);
  void rank_finished(int32_t rank);
  // Starts a compute-stream kernel that lasts `isolated` (compute_duration) while alone.
  void start_kernel(int32_t rank, uint32_t op, Time isolated);
  // Whether op `o` is a kernel of another stream that holds the GPU from the compute stream's
  // (ExecutorOptions::side_stream_contention).
  bool holds_gpu(const workload::Program& program, const workload::Op& o) const;
  // Communication of `path` starts (+1) or ends (-1) on `rank`'s GPU.
  void change_load(int32_t rank, CommPath path, int sign);
  // Runs `copies` of a collective, copy c over vertices [c n, (c + 1) n): as one mirrored fluid
  // transfer where the schedule has a fluid form, else message by message from the shared
  // schedule. `done` gets the copies' summed bytes once the last has ended.
  void run_schedule(const coll::ScheduleKey& key, const std::vector<net::VertexId>& vertices,
                    Bytes bytes, int32_t copies, std::function<void(const coll::RunStats&)> done);
  const workload::Op& op_of(const Post& p) const { return program_of(p.rank).ops[p.op]; }
  // A collective once its group is ready: load on its GPUs from launch to end.
  struct Launched {
    std::vector<Post> posts;
    workload::Dim dim;
    coll::Op coll_op;
    CommPath path;
    bool blocking;
    Time started;
  };
  Launched begin_collective(ReadyCollective&& group, std::size_t copies);
  // Every collective ends here: its `sent` bytes tallied, its load off the members' GPUs, each
  // member's exposed time charged and its op completed. `wire_share` >= 0 marks an all-to-all
  // (RankStats::all_to_all) with that share of its time spent on wire costs, `token_cost` of its
  // time spent on its library's token cost (RankStats::all_to_all_token_cost) outside that share.
  void end_collective(const Launched& c, Bytes sent, double wire_share = -1, Time token_cost = {});
  // When member `p` of a collective launched at `launched` posted it: a member that came before
  // the others waited for them on its stream, inside the collective's kernel as a profiler shows
  // it, so a blocking collective's exposed time runs from there.
  Time arrival(const Post& p, Time launched) const;
  // Runs a ready collective's schedule (or its isolated time) over every folded copy.
  void launch_collective(ReadyCollective group);
  // The time of a collective alone on its NVLink ports, measured once per schedule and size.
  IsolatedCollective isolated_run(const coll::ScheduleKey& key,
                                  std::span<const net::VertexId> vertices, Bytes bytes);
  // An all-to-all-v (all_to_all_v.h): expert-parallel all-to-alls of layout programs, and an
  // explicit workload's (imported ALL_TO_ALL with split sizes, GATHER, SCATTER), where every
  // member sends its own op's bytes x share[d] to member d (reversed: receives them).
  void launch_all_to_all_v(ReadyCollective group);

  Simulator& sim_;
  net::Network& network_;
  const net::Topology& topology_;
  std::optional<workload::Layout> own_layout_;  // explicit workloads: 1 x 1 x 1 x world
  const workload::Layout& layout_;
  const std::vector<workload::Program>& programs_;
  std::vector<const workload::Program*> rank_programs_;  // per rank, set by init_ranks
  std::vector<int32_t> ep_coord_;                        // per rank: its expert-parallel index
  // Per program, per kernel: its thread blocks under interference (kernel_ctas), set by start().
  std::vector<std::vector<int64_t>> kernel_ctas_;
  // Per program, per op: when the host has launched it, from step_start_ (plan_host_launches);
  // empty without a host cost.
  std::vector<std::vector<Time>> host_launched_;
  Time step_start_;
  std::vector<int32_t> gpu_index_;  // rank -> GPU index (empty: the identity)
  ExecutorOptions options_;
  coll::ScheduleCache schedules_;
  coll::FluidPlanCache fluid_plans_;
  coll::NcclTuning nccl_;
  // Per dimension: consecutive members of the first group that share its server, and the members
  // per server its collectives' plans take (planned_members_per_server).
  std::array<int32_t, workload::kNumDims> members_per_node_{};
  std::array<int32_t, workload::kNumDims> planned_per_server_{};
  std::array<bool, workload::kNumDims> owns_nvlink_{};
  std::vector<EndpointBandwidth> endpoint_bw_;  // built with the first all-to-all plan
  Folding folding_{layout_};                    // no folding until start()
  std::map<std::pair<coll::ScheduleKey, Bytes>, IsolatedCollective> isolated_;
  const AllToAllPlan& layout_all_to_all_plan(const ReadyCollective& group);
  const AllToAllPlan& explicit_all_to_all_plan(const ReadyCollective& group);
  AllToAllPlans all_to_all_plans_;            // layout programs' (imported ones are sent once)
  std::optional<KernelStretcher> stretcher_;  // with interference only

  std::vector<RankState> ranks_;
  std::vector<RankStats> stats_;
  std::vector<uint64_t> done_bits_;  // one bit per (rank, op)
  std::size_t words_per_rank_ = 0;
  std::unique_ptr<CollectiveGroups> collective_groups_;
  std::unique_ptr<PeerMessages> peers_;
  CommTally comm_;
  int32_t finished_ranks_ = 0;
  uint64_t ops_total_ = 0, ops_done_ = 0;
  Time step_end_;

  // Explicit workloads only.
  std::vector<uint32_t> rank_program_;
  const std::vector<std::vector<int32_t>>* explicit_groups_ = nullptr;
  std::vector<std::vector<uint32_t>> dependents_begin_, dependents_;  // per program, CSR
  std::vector<std::size_t> op_offset_;  // per rank: its first slot in pending_deps_ / posted_
  std::vector<uint32_t> pending_deps_;  // per (rank, op): dependencies not yet done
  std::vector<bool> posted_;            // per (rank, op): started, for stuck_ops
  std::unordered_map<uint64_t, std::string> blocked_;  // (rank, op) -> why it cannot proceed
};

}  // namespace cs::exec
