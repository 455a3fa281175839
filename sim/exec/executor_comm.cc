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
  const Op& o = program_of(rank).ops[op];
  // With folding, a folded group's collective is posted by its simulated rank alone.
  const int32_t posting = posting_[static_cast<int>(o.dim)];
  const uint64_t key = static_cast<uint64_t>(layout_.group_id(rank, o.dim)) << 32 | op;
  if (posting > 1) {
    auto& arrivals = collective_arrivals_[static_cast<int>(o.dim)];
    auto [it, fresh] = arrivals.try_emplace(key, 0);
    if (++it->second < static_cast<uint32_t>(posting)) return;
    arrivals.erase(it);
  }
  const auto& program = program_of(rank);
  if (o.varies < program.all_to_alls.size()) {
    run_all_to_all_v(rank, op, program.all_to_alls[o.varies]);
    return;
  }
  // Every member is here: run the collective's schedule over the network.
  std::vector<int32_t> members = layout_.group_members(rank, o.dim);
  std::vector<net::VertexId> vertices(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) vertices[i] = gpu_of(members[i]);
  const coll::ScheduleKey schedule_spec = schedule_key(o.coll_op, o.dim, o.bytes);
  const std::vector<int32_t>& copy_offsets = copies(o.dim);
  comm_.collectives += copy_offsets.size();
  const CommPath path = path_of(o);
  // TP collectives on the compute stream block it; overlapped chunks are charged only where
  // the compute stream waits for them (charge_idle).
  const bool blocking = o.stream == Stream::kCompute;
  if (options_.isolated_timer && owns_nvlink_[static_cast<int>(o.dim)]) {
    auto it = isolated_.find({schedule_spec, o.bytes});
    if (it == isolated_.end())
      it = isolated_
               .emplace(std::pair{schedule_spec, o.bytes},
                        options_.isolated_timer(*schedules_.get(schedule_spec), vertices, o.bytes))
               .first;
    const IsolatedCollective run = it->second;
    const auto times = static_cast<Bytes>(copy_offsets.size());  // each copy runs alike
    comm_.by_op[static_cast<int>(o.coll_op)] += run.bytes_sent * times;
    comm_.by_dim[static_cast<int>(o.dim)] += run.bytes_sent * times;
    comm_.isolated_nvlink_bytes += run.wire_bytes * times;
    comm_.isolated_collectives += copy_offsets.size();
    const Dim dim = o.dim;
    const int32_t first = members.front(), stride = layout_.stride(dim), count = posting;
    for (int32_t i = 0; i < count; ++i) change_load(first + i * stride, path, +1);
    sim_.schedule_in(run.duration, [this, first, stride, count, op, dim, path, blocking,
                                    duration = run.duration] {
      for (int32_t i = 0; i < count; ++i) change_load(first + i * stride, path, -1);
      for (int32_t i = 0; i < count; ++i) {
        if (blocking) stats_[first + i * stride].wait_for(dim) += duration;
        complete(first + i * stride, op);
      }
    });
    return;
  }
  const Time started = sim_.now();
  // Copy c runs over the GPUs of members + offset c; only the simulated members run the op.
  vertices.resize(members.size() * copy_offsets.size());
  for (std::size_t c = 1; c < copy_offsets.size(); ++c)
    for (std::size_t i = 0; i < members.size(); ++i)
      vertices[c * members.size() + i] = gpu_of(members[i] + copy_offsets[c]);
  std::erase_if(members, [this](int32_t m) { return !is_simulated(m); });
  for (const int32_t m : members) change_load(m, path, +1);
  run_schedule(schedule_spec, vertices, o.bytes, static_cast<int32_t>(copy_offsets.size()),
               [this, members, op, started, dim = o.dim, path, blocking,
                coll_op = o.coll_op](const coll::RunStats& run) {
                 comm_.by_op[static_cast<int>(coll_op)] += run.bytes_sent;
                 comm_.by_dim[static_cast<int>(dim)] += run.bytes_sent;
                 for (const int32_t m : members) change_load(m, path, -1);
                 for (const int32_t m : members) {
                   if (blocking) stats_[m].wait_for(dim) += sim_.now() - started;
                   complete(m, op);
                 }
               });
}

void Executor::run_all_to_all_v(int32_t rank, uint32_t op, const workload::AllToAllV& v) {
  const Op& o = program_of(rank).ops[op];
  std::vector<int32_t> members = layout_.group_members(rank, o.dim);
  // One coupled fluid transfer for every copy of the group (folded TP ranks send theirs too):
  // it lasts as long as its most loaded link needs, then the slowest path's latency.
  const std::vector<int32_t>& copy_offsets = copies(o.dim);
  // A group sends the same transfers for every microbatch (and layer, where the routing is the
  // same): built once per (group, routing row, size).
  const AllToAllKey key{members.front(), o.varies, o.bytes};
  auto cached = all_to_all_cache_.find(key);
  if (cached == all_to_all_cache_.end()) {
    CachedAllToAll made;
    std::vector<EpMember> gpus(members.size());
    for (const int32_t offset : copy_offsets) {
      for (std::size_t i = 0; i < members.size(); ++i) {
        const net::VertexId g = gpu_of(members[i] + offset);
        gpus[i] = {g, topology_.vertex(g).node};
      }
      const auto copy = all_to_all_v_edges(v, o.bytes, gpus);
      made.edges->insert(made.edges->end(), copy.begin(), copy.end());
    }
    for (const auto& e : *made.edges) {
      made.sent += static_cast<Bytes>(std::llround(e.wire_bytes));
      made.latency = std::max(made.latency, network_.path_latency(e.src, e.dst));
    }
    if (options_.all_to_all_wire) {
      // The share of the time the busiest endpoint needs at line rate, for the report's line.
      if (endpoint_bw_.empty()) endpoint_bw_ = endpoint_bandwidth(topology_);
      const double line_rate = endpoint_seconds(*made.edges, topology_, endpoint_bw_);
      apply_wire_model(*made.edges, schedule_key(o.coll_op, o.dim, o.bytes).wire, topology_);
      const double on_wire = endpoint_seconds(*made.edges, topology_, endpoint_bw_);
      if (on_wire > 0) made.line_rate_share = line_rate / on_wire;
    }
    // Kept while the cache stays small (about 24 bytes an edge); larger runs rebuild.
    if (all_to_all_cached_edges_ + made.edges->size() > kMaxCachedAllToAllEdges) {
      all_to_all_scratch_ = std::move(made);
      cached = all_to_all_cache_.end();
    } else {
      all_to_all_cached_edges_ += made.edges->size();
      cached = all_to_all_cache_.emplace(key, std::move(made)).first;
    }
  }
  const CachedAllToAll& plan =
      cached == all_to_all_cache_.end() ? all_to_all_scratch_ : cached->second;
  const Bytes sent = plan.sent;
  const Time latency = plan.latency;
  const double overhead = 1.0 - plan.line_rate_share;
  comm_.collectives += copy_offsets.size();
  comm_.by_op[static_cast<int>(o.coll_op)] += sent;
  comm_.by_dim[static_cast<int>(o.dim)] += sent;
  const CommPath path = path_of(o);
  std::erase_if(members, [this](int32_t m) { return !is_simulated(m); });
  for (const int32_t m : members) change_load(m, path, +1);
  const Time launch = schedule_key(o.coll_op, o.dim, o.bytes).wire.launch_latency;
  auto done = [this, members, op, path, started = sim_.now(), overhead,
               blocking = o.stream == Stream::kCompute, dim = o.dim] {
    for (const int32_t m : members) change_load(m, path, -1);
    const Time in_flight = sim_.now() - started;
    const Time wire = Time::ps(std::llround(static_cast<double>(in_flight.count_ps()) * overhead));
    for (const int32_t m : members) {
      stats_[m].all_to_all += in_flight;
      stats_[m].all_to_all_wire += wire;
      if (blocking) stats_[m].wait_for(dim) += sim_.now() - started;
      complete(m, op);
    }
  };
  sim_.schedule_in(
      launch, [this, edges = plan.edges, slot = plan.slot, copies = copy_offsets.size(), latency,
               done = std::move(done)]() mutable {
        network_.send_fluid(
            *edges, static_cast<int32_t>(copies), Time{},
            [this, latency, done = std::move(done)]() mutable {
              sim_.schedule_in(latency, std::move(done));
            },
            slot.get());
      });
}

void Executor::run_schedule(const coll::ScheduleKey& key,
                            const std::vector<net::VertexId>& vertices, Bytes bytes, int32_t copies,
                            std::function<void(const coll::RunStats&)> done) {
  if (options_.fluid_collectives && coll::fluid_supported(key)) {
    // Folded data-parallel replicas stand for servers that load their links alike: a ring's
    // segments on the other servers may then fold too. With experts, DP folds only under
    // balanced routing (choose_folding), which loads every server's NICs alike; under skewed
    // routing only whole EDP replicas fold, and fold_[kDp] stays 1.
    const bool alike_servers = fold_[static_cast<int>(Dim::kDp)] > 1;
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
  const Op& o = program_of(rank).ops[op];
  const int32_t peer = layout_.with_stage(rank, o.peer_stage);
  const bool sending = o.kind == OpKind::kSend;
  const int32_t sender = sending ? rank : peer;
  const uint64_t key = static_cast<uint64_t>(sender) << 32 | o.tag;
  auto [it, fresh] = p2p_pending_.try_emplace(key, PendingP2p{rank, op});
  if (fresh) return;
  // Both ends have posted: the transfer starts now, and both ops end when it arrives (with
  // folding: when every member's copy has arrived).
  const PendingP2p other = it->second;
  p2p_pending_.erase(it);
  const int32_t receiver = sending ? peer : rank;
  const uint32_t send_op = sending ? op : other.op;
  const uint32_t recv_op = sending ? other.op : op;
  change_load(sender, CommPath::kPointToPoint, +1);
  change_load(receiver, CommPath::kPointToPoint, +1);
  const auto folded = static_cast<int32_t>(represented_.size());
  comm_.p2p_messages += static_cast<uint64_t>(folded);
  comm_.by_op[static_cast<int>(coll::Op::kSendRecv)] += o.bytes * folded;
  comm_.by_dim[static_cast<int>(Dim::kPp)] += o.bytes * folded;
  auto arrived = [this, sender, receiver, send_op, recv_op, started = sim_.now()] {
    change_load(sender, CommPath::kPointToPoint, -1);
    change_load(receiver, CommPath::kPointToPoint, -1);
    ranks_[receiver].last_transfer_start = started;
    complete(sender, send_op);
    complete(receiver, recv_op);
  };
  if (folded == 1) {
    network_.send(gpu_of(sender), gpu_of(receiver), o.bytes, std::move(arrived));
    return;
  }
  // Folded: every represented rank's copy, as one mirrored transfer that lands with its slowest
  // path.
  std::vector<net::FluidEdge> edges;
  Time latency;
  for (const int32_t offset : represented_) {
    const net::VertexId from = gpu_of(sender + offset), to = gpu_of(receiver + offset);
    edges.push_back({from, to, static_cast<double>(o.bytes)});
    latency = std::max(latency, network_.path_latency(from, to));
  }
  network_.send_fluid(
      edges, folded, Time{},
      [this, latency, arrived = std::move(arrived)]() mutable {
        sim_.schedule_in(latency, std::move(arrived));
      },
      nullptr);
}

}  // namespace cs::exec
