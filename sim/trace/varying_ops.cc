#include "sim/trace/varying_ops.h"

#include <cmath>

#include "sim/trace/trace_format.h"

namespace cs::trace {

namespace pb = clustersim::trace;

namespace {

std::string entry(const char* table, std::size_t i) {
  return std::string(table) + "[" + std::to_string(i) + "]";
}

}  // namespace

std::optional<std::string> all_to_all_v_problem(const workload::AllToAllV& v) {
  if (v.share.empty()) return "share is empty";
  double sum = 0;
  for (std::size_t d = 0; d < v.share.size(); ++d) {
    if (!std::isfinite(v.share[d]) || v.share[d] < 0)
      return "share[" + std::to_string(d) + "] is " + std::to_string(v.share[d]) +
             ", not a finite share >= 0";
    sum += v.share[d];
  }
  if (std::abs(sum - 1.0) > kShareSumTolerance)
    return "share sums to " + std::to_string(sum) + ", not 1";
  if (!std::isfinite(v.copies_per_token) || v.copies_per_token <= 0)
    return "copies_per_token is " + std::to_string(v.copies_per_token) + ", not > 0";
  if (v.top_k < 1) return "top_k is " + std::to_string(v.top_k) + ", not >= 1";
  if (v.max_nodes < 0) return "max_nodes is " + std::to_string(v.max_nodes) + ", not >= 0";
  if (v.tokens < 0) return "tokens is " + std::to_string(v.tokens) + ", not >= 0";
  return std::nullopt;
}

std::string op_name(const workload::Program& program, uint32_t op) {
  const auto& o = program.ops[op];
  std::string name = "op " + std::to_string(op);
  if (o.label < program.labels.size()) name += " (" + program.labels[o.label] + ")";
  return name;
}

bool has_varying_ops(const workload::Program& program) {
  return !program.rank_times.empty() || !program.all_to_alls.empty();
}

void varying_to_proto(const workload::Program& program, pb::Program& out) {
  for (const auto& row : program.rank_times) {
    auto* r = out.add_rank_times();
    r->mutable_duration_ps()->Reserve(static_cast<int>(row.size()));
    for (const Time t : row) r->add_duration_ps(t.count_ps());
  }
  for (const auto& v : program.all_to_alls) {
    auto* a = out.add_all_to_alls();
    a->mutable_share()->Add(v.share.begin(), v.share.end());
    if (v.reverse) a->set_reverse(true);
    if (v.copies_per_token != 1) a->set_copies_per_token(v.copies_per_token);
    if (v.top_k != 1) a->set_top_k(v.top_k);
    if (v.max_nodes != 0) a->set_max_nodes(v.max_nodes);
    if (v.deduplicated) a->set_deduplicated(true);
    if (v.tokens != 0) a->set_tokens(v.tokens);
  }
}

void varying_from_proto(const pb::Program& in, workload::Program& program,
                        const std::string& where) {
  program.rank_times.reserve(static_cast<std::size_t>(in.rank_times_size()));
  for (int i = 0; i < in.rank_times_size(); ++i) {
    std::vector<Time> row;
    row.reserve(static_cast<std::size_t>(in.rank_times(i).duration_ps_size()));
    for (const int64_t ps : in.rank_times(i).duration_ps()) {
      if (ps < 0)
        throw TraceError(where + ": " + entry("rank_times", static_cast<std::size_t>(i)) +
                         ".duration_ps holds " + std::to_string(ps) + ", a negative duration");
      row.push_back(Time::ps(ps));
    }
    program.rank_times.push_back(std::move(row));
  }
  program.all_to_alls.reserve(static_cast<std::size_t>(in.all_to_alls_size()));
  for (const auto& a : in.all_to_alls()) {
    workload::AllToAllV v;
    v.share.assign(a.share().begin(), a.share().end());
    v.reverse = a.reverse();
    v.copies_per_token = a.copies_per_token();
    v.top_k = a.top_k();
    v.max_nodes = a.max_nodes();
    v.deduplicated = a.deduplicated();
    v.tokens = a.tokens();
    program.all_to_alls.push_back(std::move(v));
  }
}

void check_varying(const workload::Program& program, const std::string& where) {
  auto fail = [&](const std::string& why) { throw TraceError(where + ": " + why); };
  for (std::size_t i = 0; i < program.rank_times.size(); ++i) {
    if (program.rank_times[i].empty()) fail(entry("rank_times", i) + " is empty");
    for (const Time t : program.rank_times[i])
      if (t < Time{}) fail(entry("rank_times", i) + " holds a negative duration");
  }
  for (std::size_t i = 0; i < program.all_to_alls.size(); ++i)
    if (const auto problem = all_to_all_v_problem(program.all_to_alls[i]))
      fail(entry("all_to_alls", i) + "." + *problem);
  for (uint32_t i = 0; i < program.ops.size(); ++i) {
    const auto& o = program.ops[i];
    if (o.varies == UINT32_MAX) continue;
    const std::string name = op_name(program, i) + ": varies " + std::to_string(o.varies);
    switch (o.kind) {
      case workload::OpKind::kCompute:
        if (o.varies >= program.rank_times.size())
          fail(name + " is out of range (" + std::to_string(program.rank_times.size()) +
               " rank_times rows)");
        break;
      case workload::OpKind::kCollective:
        if (o.coll_op != coll::Op::kAllToAll)
          fail(name + " on a " + std::string(coll::to_string(o.coll_op)) +
               ": only an ALL_TO_ALL runs as all-to-all-v");
        if (o.varies >= program.all_to_alls.size())
          fail(name + " is out of range (" + std::to_string(program.all_to_alls.size()) +
               " all_to_alls entries)");
        break;
      case workload::OpKind::kSend:
      case workload::OpKind::kRecv:
        fail(name + " on a send or receive, whose size cannot vary");
    }
  }
}

void check_varying_sizes(const workload::Program& program, const std::string& where,
                         std::size_t row_length, const std::string& row_reason,
                         const std::function<std::size_t(const workload::Op&)>& group_size) {
  auto fail = [&](const std::string& why) { throw TraceError(where + ": " + why); };
  for (std::size_t i = 0; i < program.rank_times.size(); ++i)
    if (program.rank_times[i].size() != row_length)
      fail(entry("rank_times", i) + " has " + std::to_string(program.rank_times[i].size()) +
           " durations, not " + std::to_string(row_length) + " (" + row_reason + ")");
  for (uint32_t i = 0; i < program.ops.size(); ++i) {
    const auto& o = program.ops[i];
    if (o.kind != workload::OpKind::kCollective || o.varies >= program.all_to_alls.size()) continue;
    const std::size_t n = group_size(o);
    const auto& share = program.all_to_alls[o.varies].share;
    if (share.size() != n)
      fail(op_name(program, i) + ": " + entry("all_to_alls", o.varies) + ".share has " +
           std::to_string(share.size()) + " entries for a group of " + std::to_string(n));
  }
}

}  // namespace cs::trace
