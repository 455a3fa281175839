// The executor's all-to-all-v launches: expert-parallel all-to-alls of layouts and imported ones.
#include <algorithm>
#include <cmath>
#include <memory>

#include "sim/exec/all_to_all_v.h"
#include "sim/exec/executor.h"

namespace cs::exec {

using workload::Op;

void Executor::launch_all_to_all_v(ReadyCollective group) {
  const Op& o = op_of(group.posts.front());
  const AllToAllPlan& plan =
      explicit_groups_ == nullptr ? layout_all_to_all_plan(group) : explicit_all_to_all_plan(group);
  const auto copies = static_cast<int32_t>(folding_.copies(o.dim).size());
  const Time launch =
      nccl_.plan(o.coll_op, static_cast<int32_t>(group.members.size()), group.per_server, o.bytes)
          .wire.launch_latency;
  // The share of the time in flight the wire costs account for (RankStats::all_to_all_wire).
  const double wire_share = 1.0 - plan.line_rate_share;
  auto launched = std::make_shared<Launched>(begin_collective(std::move(group), copies));
  auto done = [this, launched, sent = plan.sent, wire_share, token_cost = plan.token_cost] {
    end_collective(*launched, sent, wire_share, token_cost);
  };
  // After the launch and the library's token cost, one coupled fluid transfer for every copy of
  // the group: it lasts as long as its most loaded link needs, then the slowest path's latency.
  const Time start = launch + plan.token_cost;
  sim_.schedule_in(start, [this, edges = plan.edges, slot = plan.slot, copies,
                           latency = plan.latency, done = std::move(done)]() mutable {
    if (edges->empty()) {
      sim_.schedule_in(latency, std::move(done));
      return;
    }
    network_.send_fluid(
        *edges, copies, Time{},
        [this, latency, done = std::move(done)]() mutable {
          sim_.schedule_in(latency, std::move(done));
        },
        slot.get());
  });
}

const AllToAllPlan& Executor::layout_all_to_all_plan(const ReadyCollective& group) {
  const workload::Program& program = program_of(group.posts.front().rank);
  const Op& o = program.ops[group.posts.front().op];
  // A group sends the same transfers for every microbatch (and layer, where the routing is the
  // same): built once per (group, routing row, size).
  const AllToAllPlans::Key key{group.members.front(), o.varies, o.bytes};
  if (const AllToAllPlan* kept = all_to_all_plans_.find(key)) return *kept;
  const workload::AllToAllV& v = program.all_to_alls[o.varies];
  AllToAllPlan made;
  std::vector<EpMember> gpus(group.members.size());
  // Folded ranks send theirs too, one copy per offset.
  for (const int32_t offset : folding_.copies(o.dim)) {
    for (std::size_t i = 0; i < group.members.size(); ++i) {
      const net::VertexId g = gpu_of(group.members[i] + offset);
      gpus[i] = {g, topology_.vertex(g).node};
    }
    const auto copy = all_to_all_v_edges(v, o.bytes, gpus);
    made.edges->insert(made.edges->end(), copy.begin(), copy.end());
  }
  for (const auto& e : *made.edges) {
    made.sent += static_cast<Bytes>(std::llround(e.wire_bytes));
    made.latency = std::max(made.latency, network_.path_latency(e.src, e.dst));
  }
  const bool deepep = v.deduplicated;
  if (deepep) made.token_cost = options_.deepep_tokens.of(v.tokens, deepep_peers(gpus));
  if (options_.all_to_all_wire) {
    // The share of the time the busiest endpoint needs at line rate, for the report's line.
    if (endpoint_bw_.empty()) endpoint_bw_ = endpoint_bandwidth(topology_);
    const double line_rate = endpoint_seconds(*made.edges, topology_, endpoint_bw_);
    const coll::ScheduleKey key_of_op = nccl_.plan(
        o.coll_op, static_cast<int32_t>(group.members.size()), group.per_server, o.bytes);
    apply_wire_model(*made.edges, key_of_op.wire, topology_,
                     deepep ? options_.deepep : KernelShares{});
    const double on_wire = endpoint_seconds(*made.edges, topology_, endpoint_bw_);
    if (on_wire > 0) made.line_rate_share = line_rate / on_wire;
  }
  return all_to_all_plans_.store(key, std::move(made));
}

const AllToAllPlan& Executor::explicit_all_to_all_plan(const ReadyCollective& group) {
  const auto& members = group.members;
  const std::size_t n = members.size();
  AllToAllPlan made;
  made.slot = nullptr;  // each imported all-to-all has transfers of its own
  // Each member's row: its own op's bytes x share (equal blocks for a member without one).
  for (const Post& p : group.posts) {
    const workload::Program& program = program_of(p.rank);
    const Op& o = program.ops[p.op];
    const workload::AllToAllV* v =
        o.varies < program.all_to_alls.size() ? &program.all_to_alls[o.varies] : nullptr;
    const auto self = static_cast<std::size_t>(std::find(members.begin(), members.end(), p.rank) -
                                               members.begin());
    for (std::size_t d = 0; d < n; ++d) {
      const double share =
          v ? (d < v->share.size() ? v->share[d] : 0.0) : 1.0 / static_cast<double>(n);
      const double b = static_cast<double>(o.bytes) * share;
      if (d == self || b <= 0) continue;
      net::VertexId from = gpu_of(p.rank), to = gpu_of(members[d]);
      if (v && v->reverse) std::swap(from, to);
      made.edges->push_back({from, to, b});
      made.sent += static_cast<Bytes>(std::llround(b));
      made.latency = std::max(made.latency, network_.path_latency(from, to));
    }
  }
  return all_to_all_plans_.one_off(std::move(made));
}

}  // namespace cs::exec
