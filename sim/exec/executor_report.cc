// What the executor says about a step that did not finish: stuck ops and why.
#include "sim/exec/executor.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace cs::exec {

using workload::Op;
using workload::OpKind;

bool Executor::all_finished() const {
  if (finished_ranks_ != layout_.world()) return false;
  return peers_->unreceived().empty();
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
      if (explicit_groups_) what += " on communicator " + std::to_string(o.comm);
      break;
    case OpKind::kSend:
    case OpKind::kRecv: {
      const int32_t peer = o.peer_rank >= 0 || explicit_groups_
                               ? o.peer_rank
                               : layout_.with_stage(rank, o.peer_stage);
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
  for (const Post& p : peers_->unreceived()) {
    if (stuck.size() >= limit) break;
    stuck.push_back(
        {p.rank, p.op, describe(p.rank, p.op) + " (sent, but no matching receive was posted)"});
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
