#include "sim/exec/executor.h"

#include <algorithm>
#include <stdexcept>

#include "sim/coll/runner.h"

namespace cs::exec {

using workload::Dim;
using workload::Op;
using workload::OpClass;
using workload::OpKind;
using workload::Stream;

Executor::Executor(Simulator& sim, net::Network& network, const net::Topology& topology,
                   const workload::Layout& layout, const std::vector<workload::Program>& programs)
    : sim_(sim), network_(network), topology_(topology), layout_(layout), programs_(programs) {
  if (static_cast<int32_t>(programs.size()) != layout.size(Dim::kPp))
    throw std::invalid_argument("need one program per pipeline stage");
  if (static_cast<int64_t>(topology.num_gpus()) < layout.world())
    throw std::invalid_argument("the topology has fewer GPUs than the layout has ranks");
  std::size_t max_ops = 0;
  for (const auto& p : programs) max_ops = std::max(max_ops, p.ops.size());
  words_per_rank_ = (max_ops + 63) / 64;
  const auto world = static_cast<std::size_t>(layout.world());
  ranks_.resize(world);
  stats_.resize(world);
  done_bits_.assign(world * words_per_rank_, 0);
  for (int32_t r = 0; r < layout.world(); ++r)
    ranks_[r].ops_left = static_cast<uint32_t>(program_of(r).ops.size());
  for (int d = 0; d < workload::kNumDims; ++d) {
    const auto members = layout.group_members(0, static_cast<Dim>(d));
    const int32_t node = topology.vertex(topology.gpu(members[0])).node;
    int32_t local = 0;
    while (local < static_cast<int32_t>(members.size()) &&
           topology.vertex(topology.gpu(members[local])).node == node)
      ++local;
    members_per_node_[d] = local;
  }
  for (int d = 0; d < workload::kNumDims; ++d) {
    const auto dim = static_cast<Dim>(d);
    bool alone = layout.size(dim) > 1 && members_per_node_[d] == layout.size(dim);
    for (int e = 0; e < workload::kNumDims; ++e)
      if (e != d && members_per_node_[e] > 1) alone = false;
    owns_nvlink_[d] = alone;
  }
}

coll::ScheduleKey Executor::schedule_key(coll::Op op, Dim dim, Bytes bytes) const {
  coll::ScheduleKey key;
  key.op = op;
  key.n = layout_.size(dim);
  const int32_t local = members_per_node_[static_cast<int>(dim)];
  key.algo = coll::choose_algorithm(op, key.n, local, bytes);
  key.chunks = coll::auto_chunks(op, key.algo, key.n, bytes);
  key.window = coll::auto_window(op, key.algo, key.n, key.chunks, bytes);
  if (key.algo == coll::Algorithm::kHierarchical) key.local_size = local;
  return key;
}

bool Executor::is_done(int32_t rank, uint32_t op) const {
  return (done_bits_[rank * words_per_rank_ + op / 64] >> (op % 64)) & 1u;
}

void Executor::set_done(int32_t rank, uint32_t op) {
  done_bits_[rank * words_per_rank_ + op / 64] |= uint64_t{1} << (op % 64);
}

void Executor::start() {
  for (int32_t r = 0; r < layout_.world(); ++r) {
    ranks_[r].compute_free_since = sim_.now();
    if (ranks_[r].ops_left == 0) ++finished_ranks_;
    try_start(r);
  }
}

void Executor::try_start(int32_t rank) {
  RankState& st = ranks_[rank];
  const auto& program = program_of(rank);
  for (int s = 0; s < workload::kNumStreams; ++s) {
    const auto& stream = program.streams[s];
    if (st.busy[s] || st.head[s] >= stream.size()) continue;
    const uint32_t op = stream[st.head[s]];
    const Op& o = program.ops[op];
    bool ready = true;
    for (uint32_t d = o.deps_begin; d < o.deps_end && ready; ++d)
      ready = is_done(rank, program.deps[d]);
    if (ready) start_op(rank, op);
  }
}

void Executor::charge_idle(int32_t rank, Time from, Time to) {
  if (to <= from) return;
  RankState& st = ranks_[rank];
  RankStats& stats = stats_[rank];
  if (st.last_done_kind == OpKind::kCollective && st.last_done_dim == Dim::kDp) {
    stats.dp_wait += to - from;
  } else if (st.last_done_kind == OpKind::kCollective && st.last_done_dim == Dim::kCp) {
    stats.cp_wait += to - from;
  } else if (st.last_done_kind == OpKind::kRecv) {
    // Until the transfer began the stage waited for its neighbour (the bubble); after that, for
    // the bytes to arrive (exposed pipeline communication).
    const Time split = std::max(from, st.last_transfer_start);
    stats.pipeline_wait += split - from;
    stats.pp_comm_wait += to - split;
  } else {
    stats.pipeline_wait += to - from;
  }
}

void Executor::start_op(int32_t rank, uint32_t op) {
  RankState& st = ranks_[rank];
  const Op& o = program_of(rank).ops[op];
  const int s = static_cast<int>(o.stream);
  st.busy[s] = true;
  st.started[s] = sim_.now();
  if (o.stream == Stream::kCompute) charge_idle(rank, st.compute_free_since, sim_.now());
  switch (o.kind) {
    case OpKind::kCompute: {
      RankStats& stats = stats_[rank];
      stats.compute += o.duration;
      if (o.op_class == OpClass::kRecompute) stats.recompute += o.duration;
      sim_.schedule_in(o.duration, [this, rank, op] { complete(rank, op); });
      break;
    }
    case OpKind::kCollective:
      arrive_collective(rank, op);
      break;
    case OpKind::kSend:
    case OpKind::kRecv:
      arrive_p2p(rank, op);
      break;
  }
}

void Executor::complete(int32_t rank, uint32_t op) {
  RankState& st = ranks_[rank];
  const Op& o = program_of(rank).ops[op];
  const int s = static_cast<int>(o.stream);
  set_done(rank, op);
  st.busy[s] = false;
  if (observer_ && static_cast<std::size_t>(rank) < observed_.size() &&
      observed_[static_cast<std::size_t>(rank)])
    observer_(rank, op, st.started[s], sim_.now());
  ++st.head[s];
  st.last_done_class = o.op_class;
  st.last_done_kind = o.kind;
  st.last_done_dim = o.dim;
  if (o.stream == Stream::kCompute) st.compute_free_since = sim_.now();
  if (--st.ops_left == 0) {
    stats_[rank].finish = sim_.now();
    step_end_ = std::max(step_end_, sim_.now());
    ++finished_ranks_;
    if (finished_ranks_ == layout_.world()) {
      for (int32_t r = 0; r < layout_.world(); ++r)
        stats_[r].end_wait = step_end_ - stats_[r].finish;
    }
  }
  try_start(rank);
}

void Executor::arrive_collective(int32_t rank, uint32_t op) {
  const Op& o = program_of(rank).ops[op];
  const int32_t n = layout_.size(o.dim);
  const uint64_t key = static_cast<uint64_t>(o.dim) << 62 |
                       static_cast<uint64_t>(layout_.group_id(rank, o.dim)) << 32 | op;
  uint32_t arrived = 1;
  if (n > 1) {
    auto [it, fresh] = collective_arrivals_.try_emplace(key, 0);
    arrived = ++it->second;
    if (arrived < static_cast<uint32_t>(n)) return;
    collective_arrivals_.erase(it);
  }
  // Every member is here: run the collective's schedule over the network.
  const std::vector<int32_t> members = layout_.group_members(rank, o.dim);
  std::vector<net::VertexId> vertices(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) vertices[i] = topology_.gpu(members[i]);
  const coll::ScheduleKey schedule_spec = schedule_key(o.coll_op, o.dim, o.bytes);
  const auto schedule = schedules_.get(schedule_spec);
  ++comm_.collectives;
  if (isolated_timer_ && owns_nvlink_[static_cast<int>(o.dim)]) {
    auto it = isolated_.find({schedule_spec, o.bytes});
    if (it == isolated_.end())
      it = isolated_
               .emplace(std::pair{schedule_spec, o.bytes},
                        isolated_timer_(*schedule, vertices, o.bytes))
               .first;
    const IsolatedCollective run = it->second;
    comm_.by_op[static_cast<int>(o.coll_op)] += run.bytes_sent;
    comm_.by_dim[static_cast<int>(o.dim)] += run.bytes_sent;
    comm_.isolated_nvlink_bytes += run.bytes_sent;
    ++comm_.isolated_collectives;
    const Dim dim = o.dim;
    const int32_t first = members.front(), stride = layout_.stride(dim), count = n;
    sim_.schedule_in(run.duration, [this, first, stride, count, op, dim, duration = run.duration] {
      for (int32_t i = 0; i < count; ++i) {
        if (dim == Dim::kTp) stats_[first + i * stride].tp_comm += duration;
        complete(first + i * stride, op);
      }
    });
    return;
  }
  const Time started = sim_.now();
  coll::run_collective(sim_, network_, *schedule, vertices, o.bytes,
                       [this, members, op, started, schedule, dim = o.dim,
                        coll_op = o.coll_op](const coll::RunStats& run) {
                         comm_.by_op[static_cast<int>(coll_op)] += run.bytes_sent;
                         comm_.by_dim[static_cast<int>(dim)] += run.bytes_sent;
                         for (const int32_t m : members) {
                           if (dim == Dim::kTp) stats_[m].tp_comm += sim_.now() - started;
                           complete(m, op);
                         }
                       });
}

void Executor::arrive_p2p(int32_t rank, uint32_t op) {
  const Op& o = program_of(rank).ops[op];
  const int32_t peer = layout_.with_stage(rank, o.peer_stage);
  const bool sending = o.kind == OpKind::kSend;
  const int32_t sender = sending ? rank : peer;
  const uint64_t key = static_cast<uint64_t>(sender) << 32 | o.tag;
  auto [it, fresh] = p2p_pending_.try_emplace(key, PendingP2p{rank, op});
  if (fresh) return;
  // Both ends have posted: the transfer starts now, and both ops end when it arrives.
  const PendingP2p other = it->second;
  p2p_pending_.erase(it);
  const int32_t receiver = sending ? peer : rank;
  const uint32_t send_op = sending ? op : other.op;
  const uint32_t recv_op = sending ? other.op : op;
  ++comm_.p2p_messages;
  comm_.by_op[static_cast<int>(coll::Op::kSendRecv)] += o.bytes;
  comm_.by_dim[static_cast<int>(Dim::kPp)] += o.bytes;
  network_.send(topology_.gpu(sender), topology_.gpu(receiver), o.bytes,
                [this, sender, receiver, send_op, recv_op, started = sim_.now()] {
                  ranks_[receiver].last_transfer_start = started;
                  complete(sender, send_op);
                  complete(receiver, recv_op);
                });
}

std::vector<StuckOp> Executor::stuck_ops(std::size_t limit) const {
  std::vector<StuckOp> stuck;
  for (int32_t r = 0; r < layout_.world() && stuck.size() < limit; ++r) {
    const RankState& st = ranks_[r];
    const auto& program = program_of(r);
    for (int s = 0; s < workload::kNumStreams && stuck.size() < limit; ++s) {
      if (st.head[s] >= program.streams[s].size()) continue;
      const uint32_t op = program.streams[s][st.head[s]];
      const Op& o = program.ops[op];
      std::string what = program.labels.empty() ? "op" : program.labels[o.label];
      what += st.busy[s] ? " (started, waiting for its peers)" : " (waiting for its dependencies)";
      stuck.push_back({r, op, what});
    }
  }
  return stuck;
}

}  // namespace cs::exec
