#include "sim/exec/executor.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "sim/coll/fluid.h"
#include "sim/coll/runner.h"
#include "sim/exec/all_to_all_v.h"

namespace cs::exec {

using workload::Dim;
using workload::Op;
using workload::OpClass;
using workload::OpKind;
using workload::Stream;

namespace {

uint64_t pair_key(int64_t a, int64_t b) {
  return static_cast<uint64_t>(a) << 32 | static_cast<uint32_t>(b);
}

}  // namespace

Executor::Executor(Simulator& sim, net::Network& network, const net::Topology& topology,
                   const workload::Layout& layout, const std::vector<workload::Program>& programs,
                   std::vector<int32_t> gpu_of_rank)
    : sim_(sim),
      network_(network),
      topology_(topology),
      layout_(layout),
      programs_(programs),
      gpu_index_(std::move(gpu_of_rank)) {
  if (static_cast<int32_t>(programs.size()) != layout.size(Dim::kPp))
    throw std::invalid_argument("need one program per pipeline stage");
  if (static_cast<int64_t>(topology.num_gpus()) < layout.world())
    throw std::invalid_argument("the topology has fewer GPUs than the layout has ranks");
  check_placement();
  init_ranks();
  for (int d = 0; d < workload::kNumDims; ++d) {
    if (!layout.uses(static_cast<Dim>(d))) continue;
    const auto members = layout.group_members(0, static_cast<Dim>(d));
    const int32_t node = topology.vertex(gpu_of(members[0])).node;
    int32_t local = 0;
    while (local < static_cast<int32_t>(members.size()) &&
           topology.vertex(gpu_of(members[local])).node == node)
      ++local;
    members_per_node_[d] = local;
  }
  // An expert dimension's groups share their servers with the dense groups they are carved
  // from, so neither they nor those are alone, unless the groups are the same ranks.
  for (int d = 0; d < workload::kNumDims; ++d) {
    const auto dim = static_cast<Dim>(d);
    bool alone = layout.size(dim) > 1 && members_per_node_[d] == layout.size(dim) &&
                 !workload::info(dim).expert;
    for (int e = 0; e < workload::kNumDims; ++e)
      if (e != d && members_per_node_[e] > 1 &&
          layout.group_members(0, static_cast<Dim>(e)) != layout.group_members(0, dim))
        alone = false;
    owns_nvlink_[d] = alone;
  }
}

Executor::Executor(Simulator& sim, net::Network& network, const net::Topology& topology,
                   const ExplicitWorkload& workload)
    : sim_(sim),
      network_(network),
      topology_(topology),
      own_layout_(std::in_place, 1, 1, 1,
                  static_cast<int32_t>(std::max<std::size_t>(workload.program_of_rank.size(), 1))),
      layout_(*own_layout_),
      programs_(workload.programs),
      rank_program_(workload.program_of_rank),
      groups_(&workload.groups) {
  const auto world = static_cast<int32_t>(rank_program_.size());
  if (world == 0) throw std::invalid_argument("the workload has no ranks");
  for (const uint32_t p : rank_program_)
    if (p >= programs_.size()) throw std::invalid_argument("a rank names a program that is absent");
  if (static_cast<int64_t>(topology.num_gpus()) < world)
    throw std::invalid_argument("the topology has fewer GPUs (" +
                                std::to_string(topology.num_gpus()) +
                                ") than the workload has ranks (" + std::to_string(world) + ")");
  for (const auto& program : programs_) {
    const auto n = static_cast<uint32_t>(program.ops.size());
    for (const uint32_t d : program.deps)
      if (d >= n) throw std::invalid_argument("a dependency names an op that is absent");
  }
  // Collectives pick NCCL's algorithm by how many consecutive members share a server; groups that
  // are not regular (every server holding the same run of members) count as one per server.
  group_local_.assign(groups_->size(), 1);
  for (std::size_t g = 0; g < groups_->size(); ++g) {
    const auto& members = (*groups_)[g];
    for (const int32_t m : members)
      if (m < 0 || m >= world) throw std::invalid_argument("a communicator names an absent rank");
    if (members.empty()) continue;
    auto node_of = [&](int32_t r) { return topology.vertex(topology.gpu(r)).node; };
    std::size_t local = 1;
    while (local < members.size() && node_of(members[local]) == node_of(members[0])) ++local;
    bool regular = members.size() % local == 0;
    for (std::size_t i = 0; i < members.size() && regular; ++i)
      regular = node_of(members[i]) == node_of(members[i - i % local]) &&
                (i % local != 0 || i == 0 || node_of(members[i]) != node_of(members[i - 1]));
    group_local_[g] = regular ? static_cast<int32_t>(local) : 1;
  }
  init_ranks();
  // Dataflow programs: who waits on each op, and per rank how many dependencies each op awaits.
  dependents_begin_.resize(programs_.size());
  dependents_.resize(programs_.size());
  for (std::size_t p = 0; p < programs_.size(); ++p) {
    const auto& program = programs_[p];
    if (!program.dataflow) continue;
    auto& begin = dependents_begin_[p];
    auto& list = dependents_[p];
    begin.assign(program.ops.size() + 1, 0);
    for (const uint32_t d : program.deps) ++begin[d + 1];
    for (std::size_t i = 1; i < begin.size(); ++i) begin[i] += begin[i - 1];
    list.resize(program.deps.size());
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (uint32_t op = 0; op < program.ops.size(); ++op) {
      const auto& o = program.ops[op];
      for (uint32_t d = o.deps_begin; d < o.deps_end; ++d) list[fill[program.deps[d]]++] = op;
    }
  }
  op_offset_.resize(static_cast<std::size_t>(world) + 1, 0);
  for (int32_t r = 0; r < world; ++r) op_offset_[r + 1] = op_offset_[r] + program_of(r).ops.size();
  pending_deps_.assign(op_offset_.back(), 0);
  posted_.assign(op_offset_.back(), false);
  for (int32_t r = 0; r < world; ++r) {
    const auto& program = program_of(r);
    for (uint32_t op = 0; op < program.ops.size(); ++op)
      pending_deps_[op_offset_[r] + op] = program.ops[op].deps_end - program.ops[op].deps_begin;
  }
}

void Executor::check_placement() const {
  if (gpu_index_.empty()) return;
  if (static_cast<int64_t>(gpu_index_.size()) != layout_.world())
    throw std::invalid_argument("the placement names " + std::to_string(gpu_index_.size()) +
                                " GPUs for " + std::to_string(layout_.world()) + " ranks");
  std::vector<bool> taken(topology_.num_gpus(), false);
  for (const int32_t g : gpu_index_) {
    if (g < 0 || static_cast<std::size_t>(g) >= taken.size())
      throw std::invalid_argument("the placement names GPU " + std::to_string(g) +
                                  ", outside the topology's " +
                                  std::to_string(topology_.num_gpus()));
    if (taken[static_cast<std::size_t>(g)])
      throw std::invalid_argument("the placement names GPU " + std::to_string(g) + " twice");
    taken[static_cast<std::size_t>(g)] = true;
  }
}

void Executor::init_ranks() {
  std::size_t max_ops = 0;
  for (const auto& p : programs_) max_ops = std::max(max_ops, p.ops.size());
  words_per_rank_ = (max_ops + 63) / 64;
  const auto world = static_cast<std::size_t>(layout_.world());
  ranks_.resize(world);
  stats_.resize(world);
  done_bits_.assign(world * words_per_rank_, 0);
  static_assert(workload::kNumStreams <= 32, "RankState::startable holds a bit per stream");
  rank_programs_.resize(world);
  ep_coord_.resize(world);
  for (int32_t r = 0; r < layout_.world(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    rank_programs_[i] = rank_program_.empty()
                            ? &programs_[static_cast<std::size_t>(layout_.coord(r, Dim::kPp))]
                            : &programs_[rank_program_[i]];
    ep_coord_[i] = layout_.coord(r, Dim::kEp);
    const auto& program = program_of(r);
    ranks_[r].ops_left = static_cast<uint32_t>(program.ops.size());
    for (int s = 0; s < workload::kNumStreams; ++s) {
      if (program.streams[s].empty()) continue;
      ranks_[r].startable |= 1u << s;
      load_head_deps(r, s);
    }
  }
}

void Executor::load_head_deps(int32_t rank, int s) {
  RankState& st = ranks_[rank];
  const auto& program = program_of(rank);
  const Op& o = program.ops[program.streams[s][st.head[s]]];
  st.dep_next[s] = o.deps_begin;
  st.dep_end[s] = o.deps_end;
}

coll::ScheduleKey Executor::schedule_key(coll::Op op, Dim dim, Bytes bytes) const {
  return nccl_.plan(op, layout_.size(dim), members_per_node_[static_cast<int>(dim)], bytes);
}

bool Executor::is_done(int32_t rank, uint32_t op) const {
  return (done_bits_[rank * words_per_rank_ + op / 64] >> (op % 64)) & 1u;
}

void Executor::set_done(int32_t rank, uint32_t op) {
  done_bits_[rank * words_per_rank_ + op / 64] |= uint64_t{1} << (op % 64);
}

namespace {

// Whether every expert-parallel rank runs alike: each EP-varying compute row holds one duration
// and each all-to-all routes an equal share to every member.
bool expert_ranks_alike(const std::vector<workload::Program>& programs) {
  auto flat = [](const auto& row) {
    return std::adjacent_find(row.begin(), row.end(), std::not_equal_to<>()) == row.end();
  };
  for (const auto& program : programs) {
    for (const auto& row : program.rank_times)
      if (!flat(row)) return false;
    for (const auto& v : program.all_to_alls)
      if (!flat(v.share)) return false;
  }
  return true;
}

}  // namespace

void Executor::choose_folding() {
  const int tp = static_cast<int>(Dim::kTp), dp = static_cast<int>(Dim::kDp);
  fold_.fill(1);
  for (int d = 0; d < workload::kNumDims; ++d) fold_step_[d] = layout_.stride(static_cast<Dim>(d));
  const bool alike = !variability_ || variability_->uniform();
  if (fold_tp_requested_ && alike && !groups_ && isolated_timer_ && layout_.size(Dim::kTp) > 1 &&
      owns_nvlink_[tp] && layout_.stride(Dim::kTp) == 1)
    fold_[tp] = layout_.size(Dim::kTp);
  if (fold_dp_requested_ && alike && !groups_) {
    if (layout_.size(Dim::kEp) == 1 || expert_ranks_alike(programs_)) {
      // Under balanced routing every EP rank computes alike and every server's NICs carry the
      // same all-to-all load, so an EP group's all-to-all is sent whole by its one simulated
      // member (run_all_to_all_v builds every member's edges from one routing row).
      fold_[dp] = layout_.size(Dim::kDp);
    } else {
      // Expert-parallel groups span data-parallel replicas, so only whole expert-data-parallel
      // replicas fold: every one runs the same programs with the same routing. Replica c is
      // every rank's image c x (ETP x EP) places further in its stage, a constant rank offset
      // when those places are whole data-parallel coordinates.
      const int32_t places = layout_.expert_tp() * layout_.size(Dim::kEp);
      const int32_t per_dp = layout_.size(Dim::kTp) * layout_.size(Dim::kCp);
      const int edp = static_cast<int>(Dim::kEdp);
      if (places % per_dp == 0 && layout_.size(Dim::kEdp) > 1) {
        fold_[edp] = layout_.size(Dim::kEdp);
        fold_step_[edp] = places / per_dp * layout_.stride(Dim::kDp);
      }
    }
  }
  // Every combination of the folded dimensions' coordinates, as a rank offset.
  represented_ = {0};
  for (int d = 0; d < workload::kNumDims; ++d) {
    std::vector<int32_t> grown;
    for (int32_t c = 0; c < fold_[d]; ++c)
      for (const int32_t offset : represented_) grown.push_back(offset + c * fold_step_[d]);
    represented_ = std::move(grown);
  }
  // A collective of dimension d is sent once per distinct group among the represented ranks (its
  // own group spans the rest); a group waits for its simulated members.
  for (int d = 0; d < workload::kNumDims; ++d) {
    const auto dim = static_cast<Dim>(d);
    copies_[d].clear();
    std::unordered_set<int32_t> seen;
    for (const int32_t offset : represented_)
      if (seen.insert(layout_.group_id(offset, dim)).second) copies_[d].push_back(offset);
    posting_[d] = 0;
    if (!layout_.uses(dim)) continue;
    for (const int32_t m : layout_.group_members(0, dim)) posting_[d] += is_simulated(m) ? 1 : 0;
  }
}

bool Executor::is_simulated(int32_t rank) const {
  for (int d = 0; d < workload::kNumDims; ++d)
    if (fold_[d] > 1 && layout_.coord(rank, static_cast<Dim>(d)) != 0) return false;
  return true;
}

int32_t Executor::simulated_rank_of(int32_t rank) const {
  int32_t simulated = rank;
  for (int d = 0; d < workload::kNumDims; ++d)
    if (fold_[d] > 1) simulated -= layout_.coord(rank, static_cast<Dim>(d)) * fold_step_[d];
  return simulated;
}

void Executor::start() {
  choose_folding();
  if (interference_) {
    kernel_ctas_.resize(programs_.size());
    for (std::size_t p = 0; p < programs_.size(); ++p)
      for (const auto& call : programs_[p].kernels)
        kernel_ctas_[p].push_back(kernel_ctas(*interference_, call.kernel));
  }
  const auto folded = static_cast<int32_t>(represented_.size());
  for (int32_t r = 0; r < layout_.world(); ++r) {
    if (!is_simulated(r)) {
      ranks_[r].ops_left = 0;  // runs as the rank that stands for it
      continue;
    }
    ranks_[r].compute_free_since = sim_.now();
    ops_total_ += ranks_[r].ops_left;
    if (ranks_[r].ops_left == 0) finished_ranks_ += folded;
    try_start(r);
    const auto& program = program_of(r);
    if (!program.dataflow) continue;
    for (uint32_t op = 0; op < program.ops.size(); ++op)
      if (is_free(program, program.ops[op]) && pending_deps_[op_offset_[r] + op] == 0)
        start_op(r, op);
  }
}

void Executor::try_start(int32_t rank) {
  RankState& st = ranks_[rank];
  const auto& program = program_of(rank);
  // The streams in order, each read afresh after the one before has started.
  for (int s = 0; s < workload::kNumStreams; ++s) {
    const uint32_t later = st.startable >> s;
    if (later == 0) break;
    s += std::countr_zero(later);
    uint32_t& d = st.dep_next[s];
    while (d < st.dep_end[s] && is_done(rank, program.deps[d])) ++d;
    if (d == st.dep_end[s]) start_op(rank, program.streams[s][st.head[s]]);
  }
}

void Executor::charge_idle(int32_t rank, Time from, Time to) {
  if (to <= from) return;
  RankState& st = ranks_[rank];
  RankStats& stats = stats_[rank];
  // By stream: gradient synchronisation runs on the DP stream even where a step of it reduces
  // over another group (context-parallel ranks), and it is DP communication that was exposed.
  // A chunk of an overlapped TP collective the next GEMM piece needs is exposed TP time.
  const workload::DimInfo* waited = nullptr;
  if (st.last_done_kind == OpKind::kCollective && st.last_done_stream != Stream::kCompute)
    for (const auto& d : workload::kDims)
      if (d.comm_stream == st.last_done_stream && waited == nullptr) waited = &d;
  if (waited != nullptr) {
    stats.wait_for(waited->dim) += to - from;
  } else if (st.last_done_kind == OpKind::kSend) {
    // Only at the end of the step: the last activation gradient still on its way.
    stats.wait_for(Dim::kPp) += to - from;
  } else if (st.last_done_kind == OpKind::kRecv) {
    // Until the transfer began the stage waited for its neighbour (the bubble); after that, for
    // the bytes to arrive (exposed pipeline communication).
    const Time split = std::max(from, st.last_transfer_start);
    stats.pipeline_wait += split - from;
    stats.wait_for(Dim::kPp) += to - split;
  } else {
    stats.pipeline_wait += to - from;
  }
}

void Executor::start_op(int32_t rank, uint32_t op) {
  RankState& st = ranks_[rank];
  const auto& program = program_of(rank);
  const Op& o = program.ops[op];
  if (!posted_.empty()) posted_[op_offset_[rank] + op] = true;
  if (!is_free(program, o)) {
    const int s = static_cast<int>(o.stream);
    st.busy[s] = true;
    st.startable &= ~(1u << s);
    st.started[s] = sim_.now();
    if (o.stream == Stream::kCompute) {
      const Time waited = stats_[rank].pipeline_wait;
      charge_idle(rank, st.compute_free_since, sim_.now());
      // No compute-stream op has completed: this idle was the wait for the first input.
      if (st.head[s] == 0) stats_[rank].lead_wait = stats_[rank].pipeline_wait - waited;
    }
  }
  const bool explicit_groups = groups_ != nullptr;
  switch (o.kind) {
    case OpKind::kCompute: {
      RankStats& stats = stats_[rank];
      const Time duration = compute_duration(rank, op);
      stats.compute += duration;
      if (o.op_class == OpClass::kRecompute) stats.recompute += duration;
      // GPU kernels of the compute stream (host work such as CPU Adam has no kernel) share the
      // GPU with communication.
      const bool gpu_kernel = o.kernel < program.kernels.size() || program.dataflow;
      if (interference_ && o.stream == Stream::kCompute && gpu_kernel)
        start_kernel(rank, op, duration);
      else
        sim_.schedule_in(duration, [this, rank, op] { complete(rank, op); });
      break;
    }
    case OpKind::kCollective:
      if (explicit_groups)
        arrive_explicit_collective(rank, op);
      else
        arrive_collective(rank, op);
      break;
    case OpKind::kSend:
    case OpKind::kRecv:
      if (explicit_groups)
        arrive_explicit_p2p(rank, op);
      else
        arrive_p2p(rank, op);
      break;
  }
}

Time Executor::compute_duration(int32_t rank, uint32_t op) const {
  const auto& program = program_of(rank);
  const Op& o = program.ops[op];
  const bool gpu_kernel = o.kernel < program.kernels.size() || program.dataflow;
  // Expert work runs as long as the tokens this rank's experts got.
  const Time nominal = o.varies < program.rank_times.size()
                           ? program.rank_times[o.varies][static_cast<std::size_t>(ep_coord_[rank])]
                           : o.duration;
  if (!variability_ || !gpu_kernel) return nominal;
  return variability_->duration(nominal, rank, op);
}

void Executor::start_kernel(int32_t rank, uint32_t op, Time isolated) {
  const auto& program = program_of(rank);
  const Op& o = program.ops[op];
  RunningKernel& k = running_[static_cast<std::size_t>(rank)];
  k.rank = rank;
  k.op = op;
  k.kind = compute::KernelKind::kGemm;  // imported trace kernels: taken as tensor-core work
  k.hbm_bytes = 0;
  k.ctas = 0;
  if (o.kernel < program.kernels.size()) {
    const compute::Kernel& kernel = program.kernels[o.kernel].kernel;
    k.kind = kernel.kind;
    k.hbm_bytes = kernel.bytes;
    k.ctas = kernel_ctas_[static_cast<std::size_t>(&program - programs_.data())][o.kernel];
  }
  k.isolated = isolated;
  k.started = k.since = sim_.now();
  k.left_ps = static_cast<double>(k.isolated.count_ps());
  k.slowdown = 1;
  k.event = {};
  reschedule(k);
}

void Executor::reschedule(RunningKernel& k) {
  const double slowdown =
      kernel_slowdown(*interference_, k.kind, k.isolated.as_seconds(), k.hbm_bytes,
                      ranks_[static_cast<std::size_t>(k.rank)].comm_load, k.ctas);
  if (k.event.valid() && slowdown == k.slowdown) return;
  // Work done since the last change ran at 1 / k.slowdown of the isolated rate.
  k.left_ps -= static_cast<double>((sim_.now() - k.since).count_ps()) / k.slowdown;
  k.left_ps = std::max(k.left_ps, 0.0);
  k.since = sim_.now();
  k.slowdown = slowdown;
  if (k.event.valid()) sim_.cancel(k.event);
  const int32_t rank = k.rank;
  k.event = sim_.schedule_in(Time::ps(std::llround(k.left_ps * slowdown)), [this, rank] {
    RunningKernel& done = running_[static_cast<std::size_t>(rank)];
    stats_[rank].interference += (sim_.now() - done.started) - done.isolated;
    done.rank = -1;
    complete(rank, done.op);
  });
}

void Executor::change_load(int32_t rank, CommPath path, int sign) {
  if (!interference_) return;
  CommLoad& load = ranks_[static_cast<std::size_t>(rank)].comm_load;
  if (sign > 0)
    load += interference_->load_of(path);
  else
    load -= interference_->load_of(path);
  RunningKernel& k = running_[static_cast<std::size_t>(rank)];
  if (k.rank >= 0) reschedule(k);
}

CommPath Executor::path_of(const Op& o) const {
  // Overlapped TP collectives run as userbuffers ring-exchange steps, not NCCL kernels.
  if (o.stream == Stream::kTp) return CommPath::kRingExchange;
  // Ring attention's K/V hops are NCCL send/recvs.
  if (o.coll_op == coll::Op::kSendRecv) return CommPath::kPointToPoint;
  return members_per_node_[static_cast<int>(o.dim)] >= layout_.size(o.dim)
             ? CommPath::kNvlinkCollective
             : CommPath::kNetworkCollective;
}

CommPath Executor::path_of_group(std::size_t group) const {
  return static_cast<std::size_t>(group_local_[group]) >= (*groups_)[group].size()
             ? CommPath::kNvlinkCollective
             : CommPath::kNetworkCollective;
}

void Executor::complete(int32_t rank, uint32_t op) {
  RankState& st = ranks_[rank];
  const auto& program = program_of(rank);
  const Op& o = program.ops[op];
  const int s = static_cast<int>(o.stream);
  const bool free = is_free(program, o);
  set_done(rank, op);
  if (!free) {
    st.busy[s] = false;
    if (observer_) notify_observer(rank, op, st.started[s]);
    if (++st.head[s] < program.streams[s].size()) {
      st.startable |= 1u << s;
      load_head_deps(rank, s);
    }
  }
  ++ops_done_;
  st.last_done_class = o.op_class;
  st.last_done_kind = o.kind;
  st.last_done_stream = o.stream;
  if (o.stream == Stream::kCompute) st.compute_free_since = sim_.now();
  if (--st.ops_left == 0) {
    // The compute stream finished earlier and waited for this last op (a ZeRO parameter
    // gather, the last gradient bucket): exposed communication, charged like any other wait.
    if (o.stream != Stream::kCompute) charge_idle(rank, st.compute_free_since, sim_.now());
    rank_finished(rank);
  }
  if (program.dataflow) release_dependents(rank, op);
  try_start(rank);
}

void Executor::notify_observer(int32_t rank, uint32_t op, Time start) {
  for (const int32_t offset : represented_) {
    const auto m = static_cast<std::size_t>(rank + offset);
    if (m < observed_.size() && observed_[m]) observer_(rank + offset, op, start, sim_.now());
  }
}

void Executor::rank_finished(int32_t rank) {
  stats_[rank].finish = sim_.now();
  step_end_ = std::max(step_end_, sim_.now());
  finished_ranks_ += static_cast<int32_t>(represented_.size());
  if (finished_ranks_ != layout_.world()) return;
  for (int32_t r = 0; r < layout_.world(); ++r) {
    if (!is_simulated(r)) stats_[r] = stats_[simulated_rank_of(r)];
    stats_[r].end_wait = step_end_ - stats_[r].finish;
  }
  if (on_finished_) on_finished_();
}

void Executor::release_dependents(int32_t rank, uint32_t op) {
  const auto p = static_cast<std::size_t>(rank_program_.empty()
                                              ? layout_.coord(rank, Dim::kPp)
                                              : rank_program_[static_cast<std::size_t>(rank)]);
  if (dependents_begin_.size() <= p || dependents_begin_[p].empty()) return;
  const auto& program = programs_[p];
  const std::size_t base = op_offset_[rank];
  for (uint32_t i = dependents_begin_[p][op]; i < dependents_begin_[p][op + 1]; ++i) {
    const uint32_t d = dependents_[p][i];
    if (--pending_deps_[base + d] == 0 && is_free(program, program.ops[d])) start_op(rank, d);
  }
}

void Executor::block(int32_t rank, uint32_t op, std::string reason) {
  blocked_[pair_key(rank, op)] = std::move(reason);
}

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
  if (isolated_timer_ && owns_nvlink_[static_cast<int>(o.dim)]) {
    auto it = isolated_.find({schedule_spec, o.bytes});
    if (it == isolated_.end())
      it = isolated_
               .emplace(std::pair{schedule_spec, o.bytes},
                        isolated_timer_(*schedules_.get(schedule_spec), vertices, o.bytes))
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
    if (all_to_all_wire_) {
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
  if (fluid_ && coll::fluid_supported(key)) {
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

bool Executor::all_finished() const {
  if (finished_ranks_ != layout_.world()) return false;
  for (const auto& [key, channel] : p2p_queues_)
    if (!channel.sends.empty()) return false;
  return true;
}

std::string Executor::describe(int32_t rank, uint32_t op) const {
  const auto& program = program_of(rank);
  const Op& o = program.ops[op];
  std::string what = o.label < program.labels.size() ? program.labels[o.label] : "op";
  what += " [op " + std::to_string(op);
  switch (o.kind) {
    case OpKind::kCompute:
      what += ", compute";
      break;
    case OpKind::kCollective:
      what += ", " + std::string(coll::to_string(o.coll_op)) + " of " + std::to_string(o.bytes) +
              " bytes";
      if (groups_) what += " on communicator " + std::to_string(o.comm);
      break;
    case OpKind::kSend:
    case OpKind::kRecv: {
      const int32_t peer =
          o.peer_rank >= 0 || groups_ ? o.peer_rank : layout_.with_stage(rank, o.peer_stage);
      what += std::string(o.kind == OpKind::kSend ? ", send of " : ", recv of ") +
              std::to_string(o.bytes) + " bytes " + (o.kind == OpKind::kSend ? "to" : "from") +
              " rank " + std::to_string(peer) + " tag " + std::to_string(o.tag);
      break;
    }
  }
  return what + "]";
}

void Executor::require_finished(const std::string& what, std::size_t limit) const {
  if (all_finished()) return;
  std::string msg = what + "; stuck:";
  for (const auto& s : stuck_ops(limit))
    msg += "\n  rank " + std::to_string(s.rank) + ": " + s.what;
  throw std::runtime_error(msg);
}

std::vector<StuckOp> Executor::stuck_ops(std::size_t limit) const {
  std::vector<StuckOp> stuck;
  auto add = [&](int32_t r, uint32_t op, bool started) {
    std::string what = describe(r, op);
    const auto reason = blocked_.find(pair_key(r, op));
    if (reason != blocked_.end())
      what += " (cannot proceed: " + reason->second + ")";
    else
      what += started ? " (started, waiting for its peers)" : " (waiting for its dependencies)";
    stuck.push_back({r, op, std::move(what)});
  };
  // Messages delivered that no receive ever took, oldest channel first.
  std::vector<std::pair<int32_t, uint32_t>> unreceived;
  for (const auto& [key, channel] : p2p_queues_)
    for (const auto& msg : channel.sends) unreceived.emplace_back(msg->sender, msg->send_op);
  std::sort(unreceived.begin(), unreceived.end());
  for (const auto& [r, op] : unreceived) {
    if (stuck.size() >= limit) break;
    stuck.push_back({r, op, describe(r, op) + " (sent, but no matching receive was posted)"});
  }
  for (int32_t r = 0; r < layout_.world() && stuck.size() < limit; ++r) {
    const RankState& st = ranks_[r];
    const auto& program = program_of(r);
    if (st.ops_left == 0) continue;
    const std::size_t before = stuck.size();
    for (int s = 0; s < workload::kNumStreams && stuck.size() < limit; ++s) {
      if (st.head[s] >= program.streams[s].size()) continue;
      add(r, program.streams[s][st.head[s]], st.busy[s]);
    }
    if (!program.dataflow) continue;
    // Off-stream ops: those posted and unfinished are the ones waiting on another rank.
    for (uint32_t op = 0; op < program.ops.size() && stuck.size() < limit; ++op)
      if (is_free(program, program.ops[op]) && posted_[op_offset_[r] + op] && !is_done(r, op))
        add(r, op, true);
    if (stuck.size() != before) continue;
    for (uint32_t op = 0; op < program.ops.size() && stuck.size() < limit; ++op)
      if (!is_done(r, op)) {
        add(r, op, false);
        break;
      }
  }
  return stuck;
}

}  // namespace cs::exec
