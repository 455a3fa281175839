#include "sim/workload/pair_turns.h"

#include <algorithm>

namespace cs::workload {
namespace {

// Turn ends of one half: after every expert all-to-all, and at its end.
std::vector<std::size_t> natural_turns(const PhaseOps& phase) {
  std::vector<std::size_t> ends;
  for (std::size_t i = 0; i < phase.ops.size(); ++i)
    if (is_expert_all_to_all(phase.ops[i].op) && i + 1 < phase.ops.size()) ends.push_back(i + 1);
  ends.push_back(phase.ops.size());
  return ends;
}

int64_t compute_ps(const PhaseOps& phase, std::size_t begin, std::size_t end) {
  int64_t ps = 0;
  for (std::size_t i = begin; i < end; ++i)
    if (phase.ops[i].op.kind == OpKind::kCompute) ps += phase.ops[i].op.duration.count_ps();
  return ps;
}

// Cuts the longest cuttable turn at the op where its compute time reaches half; false when no
// turn has two ops.
bool cut_longest(const PhaseOps& phase, std::vector<std::size_t>& ends) {
  std::size_t best = ends.size();
  int64_t best_ps = -1;
  for (std::size_t t = 0; t < ends.size(); ++t) {
    const std::size_t begin = t == 0 ? 0 : ends[t - 1];
    if (ends[t] - begin < 2) continue;
    const int64_t ps = compute_ps(phase, begin, ends[t]);
    if (ps > best_ps) best = t, best_ps = ps;
  }
  if (best == ends.size()) return false;
  const std::size_t begin = best == 0 ? 0 : ends[best - 1];
  std::size_t cut = begin + 1;
  while (cut + 1 < ends[best] && 2 * compute_ps(phase, begin, cut) < best_ps) ++cut;
  ends.insert(ends.begin() + static_cast<std::ptrdiff_t>(best), cut);
  return true;
}

}  // namespace

bool is_expert_all_to_all(const Op& op) {
  return op.kind == OpKind::kCollective && op.dim == Dim::kEp && op.coll_op == coll::Op::kAllToAll;
}

std::array<std::vector<std::size_t>, 2> pair_turns(const std::array<const PhaseOps*, 2>& halves) {
  std::array<std::vector<std::size_t>, 2> turns = {natural_turns(*halves[0]),
                                                   natural_turns(*halves[1])};
  const std::size_t fewer = turns[0].size() < turns[1].size() ? 0 : 1;
  while (turns[fewer].size() < turns[1 - fewer].size() &&
         cut_longest(*halves[fewer], turns[fewer])) {
  }
  // A half too short to cut ends its turns early: the rest are empty.
  for (auto& t : turns) t.resize(std::max(turns[0].size(), turns[1].size()), t.back());
  return turns;
}

}  // namespace cs::workload
