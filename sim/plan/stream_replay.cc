#include "sim/plan/stream_replay.h"

#include <algorithm>

namespace cs::plan {

double compute_seconds(const workload::StageWork& work, const workload::Op& op) {
  if (op.varies == UINT32_MAX) return op.duration.as_seconds();
  const auto& times = work.rank_times[op.varies];
  return std::max_element(times.begin(), times.end())->as_seconds();
}

double StreamReplay::run(const workload::PhaseOps& phase,
                         const std::vector<workload::GradSync>& syncs) {
  const double start = free_[0];
  std::vector<double> ends(phase.ops.size(), start);
  auto end_of = [&](int32_t dep, std::size_t i) {
    if (dep >= 0) return ends[static_cast<std::size_t>(dep)];
    return dep == workload::PhaseOp::kPrevious && i > 0 ? ends[i - 1] : start;
  };
  for (std::size_t i = 0; i < phase.ops.size(); ++i) {
    const auto& e = phase.ops[i];
    double ready = end_of(e.after, i);
    if (e.also_after != workload::PhaseOp::kNone) ready = std::max(ready, end_of(e.also_after, i));
    ends[i] = place(e.op, ready);
  }
  for (const auto& g : syncs) place(g.op, ends[g.after]);
  return free_[0] - start;
}

double StreamReplay::place(const workload::Op& op, double ready) {
  double seconds = 0;
  if (op.kind == workload::OpKind::kCompute) {
    seconds = compute_seconds(work_, op);
  } else if (op.kind == workload::OpKind::kCollective) {
    seconds = comm_.seconds(op, true);
    if (skip_expert_ && op.dim == workload::Dim::kEp) {
      expert_ += seconds;
      seconds = 0;
    }
  }
  double& stream = free_[static_cast<std::size_t>(op.stream)];
  stream = std::max(stream, ready) + seconds;
  return stream;
}

}  // namespace cs::plan
