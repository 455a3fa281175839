#include "sim/exec/executor.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include "sim/coll/collective.h"

namespace cs::exec {

using workload::Dim;
using workload::Op;
using workload::OpClass;
using workload::OpKind;
using workload::Stream;

namespace {

// Members per server as the plans of dimension d's collectives take it: groups share their
// schedules (coll::common_members_per_server).
int32_t planned_members_per_server(const workload::Layout& layout, Dim d,
                                   const std::function<int32_t(int32_t)>& server_of_rank) {
  std::vector<std::vector<int32_t>> groups;
  for (int32_t rank = 0; rank < layout.world(); ++rank)
    if (layout.coord(rank, d) == 0) groups.push_back(layout.group_members(rank, d));
  return coll::common_members_per_server(
      static_cast<int32_t>(groups.size()), layout.size(d),
      [&](int32_t g, int32_t i) { return server_of_rank(groups[g][i]); });
}

}  // namespace

Executor::Executor(Simulator& sim, net::Network& network, const net::Topology& topology,
                   const workload::Layout& layout, const std::vector<workload::Program>& programs,
                   ExecutorOptions options, std::vector<int32_t> gpu_of_rank)
    : sim_(sim),
      network_(network),
      topology_(topology),
      layout_(layout),
      programs_(programs),
      gpu_index_(std::move(gpu_of_rank)),
      options_(std::move(options)),
      nccl_(options_.nccl.value_or(compute::nccl_tuning(topology))) {
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
    planned_per_server_[d] = planned_members_per_server(
        layout, static_cast<Dim>(d), [&](int32_t r) { return topology.vertex(gpu_of(r)).node; });
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
  collective_groups_ = std::make_unique<LayoutGroups>(layout_, rank_program_fn(), folding_,
                                                      planned_per_server_, owns_nvlink_);
  peers_ = std::make_unique<LayoutPeers>(layout_, rank_program_fn());
}

Executor::Executor(Simulator& sim, net::Network& network, const net::Topology& topology,
                   const ExplicitWorkload& workload, ExecutorOptions options)
    : sim_(sim),
      network_(network),
      topology_(topology),
      own_layout_(std::in_place, 1, 1, 1,
                  static_cast<int32_t>(std::max<std::size_t>(workload.program_of_rank.size(), 1))),
      layout_(*own_layout_),
      programs_(workload.programs),
      options_(std::move(options)),
      nccl_(options_.nccl.value_or(compute::nccl_tuning(topology))),
      rank_program_(workload.program_of_rank),
      explicit_groups_(&workload.groups) {
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
  collective_groups_ = std::make_unique<ExplicitGroups>(
      *explicit_groups_, world, rank_program_fn(),
      [&topology](int32_t r) { return topology.vertex(topology.gpu(r)).node; });
  peers_ = std::make_unique<ExplicitPeers>(world, rank_program_fn());
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

bool Executor::is_done(int32_t rank, uint32_t op) const {
  return (done_bits_[rank * words_per_rank_ + op / 64] >> (op % 64)) & 1u;
}

void Executor::set_done(int32_t rank, uint32_t op) {
  done_bits_[rank * words_per_rank_ + op / 64] |= uint64_t{1} << (op % 64);
}

void Executor::start() {
  // Folding needs ranks that compute alike, and TP folding collectives timed alone.
  const bool alike = !options_.variability || options_.variability->uniform();
  const bool layout_ranks = explicit_groups_ == nullptr;
  folding_ = Folding(layout_,
                     options_.fold_tensor_parallel && alike && layout_ranks &&
                         options_.isolated_timer && owns_nvlink_[static_cast<int>(Dim::kTp)],
                     options_.fold_data_parallel && alike && layout_ranks, programs_);
  if (options_.interference || options_.side_stream_contention) {
    // Without interference the model adds no load: kernels are only ever held.
    stretcher_.emplace(sim_, options_.interference.value_or(InterferenceModel{}),
                       static_cast<std::size_t>(layout_.world()),
                       [this](int32_t rank, uint32_t op, Time stretched_by, Time held) {
                         stats_[rank].interference += stretched_by - held;
                         stats_[rank].side_stream_hold += held;
                         complete(rank, op);
                       });
    kernel_ctas_.resize(programs_.size());
    for (std::size_t p = 0; p < programs_.size(); ++p)
      for (const auto& call : programs_[p].kernels)
        kernel_ctas_[p].push_back(
            options_.interference ? kernel_ctas(*options_.interference, call.kernel) : 0);
  }
  step_start_ = sim_.now();
  if (options_.host_per_kernel > Time{} || options_.host_per_layer_pass > Time{})
    plan_host_launches();
  const auto folded = static_cast<int32_t>(folding_.represented().size());
  for (int32_t r = 0; r < layout_.world(); ++r) {
    if (!folding_.is_simulated(r)) {
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

void Executor::plan_host_launches() {
  host_launched_.assign(programs_.size(), {});
  for (std::size_t p = 0; p < programs_.size(); ++p) {
    const auto& program = programs_[p];
    if (program.dataflow) continue;  // an imported trace's timings hold its host already
    auto& launched = host_launched_[p];
    launched.assign(program.ops.size(), Time{});
    Time host;
    int64_t pass = -1;  // the layer pass of the last kernel: 2 x layer, + 1 backward
    for (const uint32_t op : program.streams[static_cast<int>(Stream::kCompute)]) {
      const Op& o = program.ops[op];
      if (o.kind != OpKind::kCompute || o.kernel >= program.kernels.size())
        continue;  // collectives and host work launch no compute kernel
      const int64_t this_pass = 2 * int64_t{o.layer} + (o.op_class == OpClass::kForward ? 0 : 1);
      if (o.layer >= 0 && this_pass != pass) {
        host += options_.host_per_layer_pass;
        pass = this_pass;
      }
      host += options_.host_per_kernel;
      launched[op] = host;
    }
  }
}

bool Executor::launched(int32_t rank, uint32_t op) {
  if (host_launched_.empty()) return true;
  const auto& times =
      host_launched_[static_cast<std::size_t>(&program_of(rank) - programs_.data())];
  if (times.empty() || sim_.now() >= step_start_ + times[op]) return true;
  RankState& st = ranks_[rank];
  if (!st.host_gated) {
    st.host_gated = true;
    st.host_gated_since = sim_.now();
    sim_.schedule_at(step_start_ + times[op], [this, rank] { try_start(rank); });
  }
  return false;
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
    if (d != st.dep_end[s]) continue;
    const uint32_t op = program.streams[s][st.head[s]];
    if (s == static_cast<int>(Stream::kCompute) && !launched(rank, op)) continue;
    start_op(rank, op);
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
      // Idle before the op's inputs were ready waited for them; after that, for its launch.
      const Time ready = st.host_gated ? st.host_gated_since : sim_.now();
      charge_idle(rank, st.compute_free_since, ready);
      stats_[rank].host_wait += sim_.now() - ready;
      st.host_gated = false;
      // No compute-stream op has completed: this idle was the wait for the first input.
      if (st.head[s] == 0) stats_[rank].lead_wait = stats_[rank].pipeline_wait - waited;
    }
  }
  switch (o.kind) {
    case OpKind::kCompute: {
      RankStats& stats = stats_[rank];
      const Time duration = compute_duration(rank, op);
      stats.compute += duration;
      if (o.op_class == OpClass::kRecompute) stats.recompute += duration;
      if (o.stream != Stream::kCompute) stats.side_stream += duration;
      // GPU kernels of the compute stream (host work such as CPU Adam has no kernel) share the
      // GPU with communication.
      const bool gpu_kernel = o.kernel < program.kernels.size() || program.dataflow;
      if (stretcher_ && o.stream == Stream::kCompute && gpu_kernel) {
        start_kernel(rank, op, duration);
      } else if (holds_gpu(program, o)) {
        stretcher_->hold(rank, +1);
        sim_.schedule_in(duration, [this, rank, op] {
          stretcher_->hold(rank, -1);
          complete(rank, op);
        });
      } else {
        sim_.schedule_in(duration, [this, rank, op] { complete(rank, op); });
      }
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

Time Executor::compute_duration(int32_t rank, uint32_t op) const {
  const auto& program = program_of(rank);
  const Op& o = program.ops[op];
  const bool gpu_kernel = o.kernel < program.kernels.size() || program.dataflow;
  // Expert work runs as long as the tokens this rank's experts got.
  const Time nominal = o.varies < program.rank_times.size()
                           ? program.rank_times[o.varies][static_cast<std::size_t>(ep_coord_[rank])]
                           : o.duration;
  if (!options_.variability || !gpu_kernel) return nominal;
  return options_.variability->duration(nominal, rank, op);
}

bool Executor::holds_gpu(const workload::Program& program, const Op& o) const {
  // A side stream's kernel of a layout program; an imported trace's kernel times were measured
  // beside whatever else ran.
  return options_.side_stream_contention && o.stream != Stream::kCompute &&
         o.kernel < program.kernels.size() && !program.dataflow;
}

void Executor::start_kernel(int32_t rank, uint32_t op, Time isolated) {
  const auto& program = program_of(rank);
  const Op& o = program.ops[op];
  KernelStretcher::Shape shape;  // imported trace kernels: taken as tensor-core work
  if (o.kernel < program.kernels.size()) {
    const compute::Kernel& kernel = program.kernels[o.kernel].kernel;
    shape.kind = kernel.kind;
    shape.hbm_bytes = kernel.bytes;
    shape.ctas = kernel_ctas_[static_cast<std::size_t>(&program - programs_.data())][o.kernel];
  }
  stretcher_->start(rank, op, shape, isolated);
}

void Executor::change_load(int32_t rank, CommPath path, int sign) {
  if (stretcher_) stretcher_->change_load(rank, path, sign);
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
    if (options_.observer) notify_observer(rank, op, st.started[s]);
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
  for (const int32_t offset : folding_.represented()) {
    const auto m = static_cast<std::size_t>(rank + offset);
    if (m < options_.observed.size() && options_.observed[m])
      options_.observer(rank + offset, program_of(rank), op, start, sim_.now());
  }
}

void Executor::rank_finished(int32_t rank) {
  stats_[rank].finish = sim_.now();
  step_end_ = std::max(step_end_, sim_.now());
  finished_ranks_ += static_cast<int32_t>(folding_.represented().size());
  if (finished_ranks_ != layout_.world()) return;
  for (int32_t r = 0; r < layout_.world(); ++r) {
    if (!folding_.is_simulated(r)) stats_[r] = stats_[folding_.simulated_rank_of(r)];
    stats_[r].end_wait = step_end_ - stats_[r].finish;
  }
  if (options_.on_finished) options_.on_finished();
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

}  // namespace cs::exec
