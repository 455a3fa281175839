// The executor's layout collectives, expert all-to-alls and pipeline transfers, folded or not.
#include "sim/exec/executor.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "sim/coll/fluid.h"
#include "sim/coll/runner.h"
#include "sim/exec/all_to_all_v.h"

namespace cs::exec {

using workload::Dim;
using workload::Op;
using workload::OpKind;
using workload::Stream;

void Executor::arrive_collective(int32_t rank, uint32_t op) {
  Posted posted = collective_groups_->post(rank, op);
  if (!posted.refused.empty()) {
    block(rank, op, std::move(posted.refused));
    return;
  }
  if (!posted.ready) return;
  // Every member is here.
  if (posted.ready->all_to_all_v)
    launch_all_to_all_v(std::move(*posted.ready));
  else
    launch_collective(std::move(*posted.ready));
}

Executor::Launched Executor::begin_collective(ReadyCollective&& group, std::size_t copies) {
  const Op& first = op_of(group.posts.front());
  comm_.collectives += copies;
  for (const Post& p : group.posts) change_load(p.rank, group.path, +1);
  return {std::move(group.posts), first.dim, first.coll_op, group.path, group.blocking, sim_.now()};
}

Time Executor::arrival(const Post& p, Time launched) const {
  const Op& o = op_of(p);
  // An op that holds no stream (dataflow) is timed from the launch.
  return is_free(program_of(p.rank), o) ? launched
                                        : ranks_[p.rank].started[static_cast<int>(o.stream)];
}

void Executor::end_collective(const Launched& c, Bytes sent, double wire_share, Time token_cost) {
  comm_.by_op[static_cast<int>(c.coll_op)] += sent;
  comm_.by_dim[static_cast<int>(c.dim)] += sent;
  for (const Post& p : c.posts) change_load(p.rank, c.path, -1);
  const Time in_flight = sim_.now() - c.started;
  for (const Post& p : c.posts) {
    RankStats& stats = stats_[p.rank];
    const Time posted = sim_.now() - arrival(p, c.started);
    if (c.dim == workload::Dim::kEp) stats.all_to_all += posted;
    if (wire_share >= 0)
      stats.all_to_all_wire += Time::ps(
          std::llround(static_cast<double>((in_flight - token_cost).count_ps()) * wire_share));
    stats.all_to_all_token_cost += token_cost;
    if (c.blocking) {
      stats.wait_for(c.dim) += posted;
      stats.peer_wait[static_cast<std::size_t>(c.dim)] += posted - in_flight;
    }
    complete(p.rank, p.op);
  }
}

void Executor::launch_collective(ReadyCollective group) {
  const Op& o = op_of(group.posts.front());
  const coll::ScheduleKey key =
      nccl_.plan(o.coll_op, static_cast<int32_t>(group.members.size()), group.per_server, o.bytes);
  const std::vector<int32_t>& copy_offsets = folding_.copies(o.dim);
  const auto copies = static_cast<int32_t>(copy_offsets.size());
  KindCount& kind = comm_.by_kind[{o.dim, o.coll_op, key.algo, key.protocol}];
  kind.calls += static_cast<uint64_t>(copies);
  kind.bytes += o.bytes * copies;
  // Copy c runs over the GPUs of members + offset c.
  const std::size_t n = group.members.size();
  std::vector<net::VertexId> vertices(n * copy_offsets.size());
  for (std::size_t c = 0; c < copy_offsets.size(); ++c)
    for (std::size_t i = 0; i < n; ++i)
      vertices[c * n + i] = gpu_of(group.members[i] + copy_offsets[c]);
  const bool isolated = options_.isolated_timer && group.owns_nvlink;
  auto launched =
      std::make_shared<Launched>(begin_collective(std::move(group), copy_offsets.size()));
  if (isolated) {
    const IsolatedCollective run = isolated_run(key, std::span(vertices).first(n), o.bytes);
    comm_.isolated_nvlink_bytes += run.wire_bytes * copies;  // each copy runs alike
    comm_.isolated_collectives += copy_offsets.size();
    sim_.schedule_in(run.duration, [this, launched, sent = run.bytes_sent * copies] {
      end_collective(*launched, sent);
    });
    return;
  }
  run_schedule(key, vertices, o.bytes, copies, [this, launched](const coll::RunStats& run) {
    end_collective(*launched, run.bytes_sent);
  });
}

IsolatedCollective Executor::isolated_run(const coll::ScheduleKey& key,
                                          std::span<const net::VertexId> vertices, Bytes bytes) {
  auto it = isolated_.find({key, bytes});
  if (it == isolated_.end())
    it = isolated_
             .emplace(std::pair{key, bytes},
                      options_.isolated_timer(*schedules_.get(key), vertices, bytes))
             .first;
  return it->second;
}

void Executor::run_schedule(const coll::ScheduleKey& key,
                            const std::vector<net::VertexId>& vertices, Bytes bytes, int32_t copies,
                            std::function<void(const coll::RunStats&)> done) {
  if (options_.fluid_collectives && coll::fluid_supported(key)) {
    // Folded data-parallel replicas stand for servers that load their links alike: a ring's
    // segments on the other servers may then fold too. With experts, DP folds only under
    // balanced routing (Folding), which loads every server's NICs alike; under skewed
    // routing only whole EDP replicas fold, and DP stays unfolded.
    const bool alike_servers = folding_.fold(Dim::kDp) > 1;
    coll::run_fluid_plan(sim_, network_, fluid_plans_.plan(network_, key, vertices, bytes, copies),
                         copies, std::move(done), alike_servers);
    return;
  }
  // Message by message, one run per copy; `done` once the last has ended, with their sums. The
  // schedule must outlive the runs: the callbacks hold the cache's shared copy.
  struct Copies {
    int32_t left;
    coll::RunStats total;
    std::function<void(const coll::RunStats&)> done;
  };
  auto state = std::make_shared<Copies>(Copies{copies, {}, std::move(done)});
  auto schedule = schedules_.get(key);
  const std::size_t n = vertices.size() / static_cast<std::size_t>(copies);
  for (int32_t c = 0; c < copies; ++c) {
    coll::run_collective(
        sim_, network_, *schedule,
        std::span<const net::VertexId>(vertices).subspan(static_cast<std::size_t>(c) * n, n), bytes,
        [schedule, state](const coll::RunStats& run) {
          state->total.bytes_sent += run.bytes_sent;
          state->total.wire_bytes += run.wire_bytes;
          state->total.messages += run.messages;
          state->total.start = run.start;
          state->total.end = run.end;
          if (--state->left == 0) state->done(state->total);
        });
  }
}

void Executor::arrive_p2p(int32_t rank, uint32_t op) {
  PeerPosted posted = peers_->post(rank, op);
  if (posted.refused) block(posted.refused->rank, posted.refused->op, std::move(posted.why));
  if (posted.ends_now) {
    const Post p = *posted.ends_now;
    sim_.schedule_in(Time{}, [this, p] { complete(p.rank, p.op); });
  }
  if (posted.transfer) start_transfer(std::move(posted.transfer));
}

void Executor::start_transfer(std::shared_ptr<PeerMessage> msg) {
  const Op& o = program_of(msg->sender).ops[msg->send_op];
  const int32_t sender = msg->sender, receiver = msg->receiver;
  const auto folded = static_cast<int32_t>(folding_.represented().size());
  comm_.p2p_messages += static_cast<uint64_t>(folded);
  comm_.by_op[static_cast<int>(coll::Op::kSendRecv)] += o.bytes * folded;
  comm_.by_dim[static_cast<int>(o.dim)] += o.bytes * folded;
  change_load(sender, CommPath::kPointToPoint, +1);
  if (receiver != sender) change_load(receiver, CommPath::kPointToPoint, +1);
  // Both ops end when the bytes arrive (with folding: when every member's copy has arrived); a
  // receive posted later ends at once.
  auto arrived = [this, msg, started = sim_.now()] {
    change_load(msg->sender, CommPath::kPointToPoint, -1);
    if (msg->receiver != msg->sender) change_load(msg->receiver, CommPath::kPointToPoint, -1);
    msg->arrived = true;
    ranks_[msg->receiver].last_transfer_start = started;
    complete(msg->sender, msg->send_op);
    if (msg->recv_op != PeerMessage::kNoOp) complete(msg->receiver, msg->recv_op);
  };
  if (receiver == sender) {
    sim_.schedule_in(Time{}, std::move(arrived));  // a copy within one GPU: no network
    return;
  }
  // The send/recv kernel's launch comes first (NcclTuning::p2p_launch_latency).
  const Time launch = nccl_.p2p_launch_latency();
  if (folded == 1) {
    sim_.schedule_in(launch, [this, from = gpu_of(sender), to = gpu_of(receiver), bytes = o.bytes,
                              arrived = std::move(arrived)]() mutable {
      network_.send(from, to, bytes, std::move(arrived));
    });
    return;
  }
  // Folded: every represented rank's copy, as one mirrored transfer that lands with its slowest
  // path.
  std::vector<net::FluidEdge> edges;
  Time latency;
  for (const int32_t offset : folding_.represented()) {
    const net::VertexId from = gpu_of(sender + offset), to = gpu_of(receiver + offset);
    edges.push_back({from, to, static_cast<double>(o.bytes)});
    latency = std::max(latency, network_.path_latency(from, to));
  }
  sim_.schedule_in(launch, [this, edges = std::move(edges), folded, latency,
                            arrived = std::move(arrived)]() mutable {
    network_.send_fluid(
        edges, folded, Time{},
        [this, latency, arrived = std::move(arrived)]() mutable {
          sim_.schedule_in(latency, std::move(arrived));
        },
        nullptr);
  });
}

}  // namespace cs::exec
