// The executor's explicit workloads (imported traces): communicators and peers named by the trace.
#include "sim/exec/executor.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

namespace cs::exec {

using workload::Dim;
using workload::Op;
using workload::OpKind;

void Executor::arrive_explicit_collective(int32_t rank, uint32_t op) {
  const Op& o = program_of(rank).ops[op];
  if (o.comm < 0 || static_cast<std::size_t>(o.comm) >= groups_->size()) {
    block(rank, op, "communicator " + std::to_string(o.comm) + " does not exist");
    return;
  }
  const auto& members = (*groups_)[static_cast<std::size_t>(o.comm)];
  if (std::find(members.begin(), members.end(), rank) == members.end()) {
    block(rank, op,
          "rank " + std::to_string(rank) + " is not a member of communicator " +
              std::to_string(o.comm));
    return;
  }
  // The n-th collective a rank posts on a communicator meets the n-th of every other member.
  const uint32_t seq = coll_seq_[pair_key(rank, o.comm)]++;
  const uint64_t key = pair_key(o.comm, seq);
  auto& entry = coll_posts_[key];
  if (!entry.posts.empty()) {
    const auto [first_rank, first_op] = entry.posts.front();
    const Op& first = program_of(first_rank).ops[first_op];
    // All-to-all-v members send sizes of their own (Op::varies), so only the type must agree.
    const bool sized = o.varies != UINT32_MAX || first.varies != UINT32_MAX;
    if (first.coll_op != o.coll_op || (!sized && first.bytes != o.bytes)) {
      block(rank, op,
            "collective #" + std::to_string(seq) + " of communicator " + std::to_string(o.comm) +
                ": this rank posts " + std::string(coll::to_string(o.coll_op)) + " of " +
                std::to_string(o.bytes) + " bytes, rank " + std::to_string(first_rank) +
                " posted " + std::string(coll::to_string(first.coll_op)) + " of " +
                std::to_string(first.bytes) + " bytes");
      return;
    }
  }
  entry.posts.emplace_back(rank, op);
  if (entry.posts.size() < members.size()) return;
  std::vector<std::pair<int32_t, uint32_t>> posts = std::move(entry.posts);
  coll_posts_.erase(key);
  const bool any_v = std::any_of(posts.begin(), posts.end(), [this](const auto& p) {
    return program_of(p.first).ops[p.second].varies != UINT32_MAX;
  });
  if (any_v) {
    run_explicit_all_to_all_v(std::move(posts), o.comm);
    return;
  }
  std::vector<net::VertexId> vertices(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) vertices[i] = gpu_of(members[i]);
  const coll::ScheduleKey plan =
      nccl_.plan(o.coll_op, static_cast<int32_t>(members.size()),
                 group_local_[static_cast<std::size_t>(o.comm)], o.bytes);
  ++comm_.collectives;
  const Time started = sim_.now();
  const CommPath path = path_of_group(static_cast<std::size_t>(o.comm));
  for (const auto& [m, mop] : posts) change_load(m, path, +1);
  run_schedule(plan, vertices, o.bytes, 1,
               [this, posts = std::move(posts), started, dim = o.dim, path,
                coll_op = o.coll_op](const coll::RunStats& run) {
                 comm_.by_op[static_cast<int>(coll_op)] += run.bytes_sent;
                 comm_.by_dim[static_cast<int>(dim)] += run.bytes_sent;
                 for (const auto& [m, mop] : posts) change_load(m, path, -1);
                 for (const auto& [m, mop] : posts) {
                   if (dim == Dim::kTp) stats_[m].wait_for(Dim::kTp) += sim_.now() - started;
                   complete(m, mop);
                 }
               });
}

void Executor::run_explicit_all_to_all_v(std::vector<std::pair<int32_t, uint32_t>> posts,
                                         int32_t comm) {
  const auto& members = (*groups_)[static_cast<std::size_t>(comm)];
  const std::size_t n = members.size();
  // Each member's row: its own op's bytes x share (equal blocks for a member without one).
  std::vector<net::FluidEdge> edges;
  Bytes sent = 0;
  Time latency;
  for (const auto& [m, mop] : posts) {
    const workload::Program& program = program_of(m);
    const Op& o = program.ops[mop];
    const workload::AllToAllV* v =
        o.varies < program.all_to_alls.size() ? &program.all_to_alls[o.varies] : nullptr;
    const auto self =
        static_cast<std::size_t>(std::find(members.begin(), members.end(), m) - members.begin());
    for (std::size_t d = 0; d < n; ++d) {
      const double share =
          v ? (d < v->share.size() ? v->share[d] : 0.0) : 1.0 / static_cast<double>(n);
      const double b = static_cast<double>(o.bytes) * share;
      if (d == self || b <= 0) continue;
      net::VertexId from = gpu_of(m), to = gpu_of(members[d]);
      if (v && v->reverse) std::swap(from, to);
      edges.push_back({from, to, b});
      sent += static_cast<Bytes>(std::llround(b));
      latency = std::max(latency, network_.path_latency(from, to));
    }
  }
  ++comm_.collectives;
  const Op& first = program_of(posts.front().first).ops[posts.front().second];
  comm_.by_op[static_cast<int>(first.coll_op)] += sent;
  comm_.by_dim[static_cast<int>(first.dim)] += sent;
  const CommPath path = path_of_group(static_cast<std::size_t>(comm));
  for (const auto& [m, mop] : posts) change_load(m, path, +1);
  const Time launch = nccl_
                          .plan(first.coll_op, static_cast<int32_t>(n),
                                group_local_[static_cast<std::size_t>(comm)], first.bytes)
                          .wire.launch_latency;
  auto done = [this, posts = std::move(posts), path, started = sim_.now()] {
    for (const auto& [m, mop] : posts) change_load(m, path, -1);
    for (const auto& [m, mop] : posts) {
      stats_[m].all_to_all += sim_.now() - started;
      complete(m, mop);
    }
  };
  auto shared = std::make_shared<std::vector<net::FluidEdge>>(std::move(edges));
  sim_.schedule_in(launch, [this, shared, latency, done = std::move(done)]() mutable {
    if (shared->empty()) {
      sim_.schedule_in(latency, std::move(done));
      return;
    }
    network_.send_fluid(
        *shared, 1, Time{},
        [this, shared, latency, done = std::move(done)]() mutable {
          sim_.schedule_in(latency, std::move(done));
        },
        nullptr);
  });
}

void Executor::arrive_explicit_p2p(int32_t rank, uint32_t op) {
  const Op& o = program_of(rank).ops[op];
  const int32_t peer = o.peer_rank;
  if (peer < 0 || peer >= layout_.world()) {
    block(rank, op, "peer rank " + std::to_string(peer) + " does not exist");
    return;
  }
  const bool sending = o.kind == OpKind::kSend;
  const P2pKey key{sending ? rank : peer, sending ? peer : rank, o.tag};
  P2pChannel& channel = p2p_queues_[key];
  auto mismatch = [&](int32_t send_rank, uint32_t send_op, int32_t recv_rank, uint32_t recv_op) {
    const Bytes sent = program_of(send_rank).ops[send_op].bytes;
    const Bytes expected = program_of(recv_rank).ops[recv_op].bytes;
    if (sent == expected) return false;
    const std::string why = "send of " + std::to_string(sent) + " bytes from rank " +
                            std::to_string(send_rank) + " met a receive of " +
                            std::to_string(expected) + " bytes on rank " +
                            std::to_string(recv_rank);
    block(recv_rank, recv_op, why);
    return true;
  };
  if (!sending) {
    if (channel.sends.empty()) {
      channel.recvs.push_back({rank, op});
      return;
    }
    // First in, first out: the oldest message on the channel is this receive's.
    const auto msg = channel.sends.front();
    channel.sends.pop_front();
    if (channel.sends.empty() && channel.recvs.empty()) p2p_queues_.erase(key);
    if (mismatch(msg->sender, msg->send_op, rank, op)) return;
    msg->recv_op = op;
    if (msg->arrived) sim_.schedule_in(Time{}, [this, rank, op] { complete(rank, op); });
    return;
  }
  auto msg = std::make_shared<P2pMessage>(P2pMessage{rank, op, peer});
  if (!channel.recvs.empty()) {
    const PendingP2p recv = channel.recvs.front();
    channel.recvs.pop_front();
    if (!mismatch(rank, op, recv.rank, recv.op)) msg->recv_op = recv.op;
  } else {
    channel.sends.push_back(msg);
  }
  if (channel.sends.empty() && channel.recvs.empty()) p2p_queues_.erase(key);
  ++comm_.p2p_messages;
  comm_.by_op[static_cast<int>(coll::Op::kSendRecv)] += o.bytes;
  comm_.by_dim[static_cast<int>(o.dim)] += o.bytes;
  change_load(rank, CommPath::kPointToPoint, +1);
  if (peer != rank) change_load(peer, CommPath::kPointToPoint, +1);
  auto arrived = [this, msg, started = sim_.now()] {
    change_load(msg->sender, CommPath::kPointToPoint, -1);
    if (msg->receiver != msg->sender) change_load(msg->receiver, CommPath::kPointToPoint, -1);
    msg->arrived = true;
    ranks_[msg->receiver].last_transfer_start = started;
    complete(msg->sender, msg->send_op);
    if (msg->recv_op != UINT32_MAX) complete(msg->receiver, msg->recv_op);
  };
  if (peer == rank)
    sim_.schedule_in(Time{}, std::move(arrived));  // a copy within one GPU: no network
  else
    network_.send(gpu_of(rank), gpu_of(peer), o.bytes, std::move(arrived));
}

}  // namespace cs::exec
