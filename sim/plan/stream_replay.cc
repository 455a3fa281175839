#include "sim/plan/stream_replay.h"

#include <algorithm>

#include "sim/workload/pair_turns.h"

namespace cs::plan {

double compute_seconds(const workload::StageWork& work, const workload::Op& op) {
  if (op.varies == UINT32_MAX) return op.duration.as_seconds();
  const auto& times = work.rank_times[op.varies];
  return std::max_element(times.begin(), times.end())->as_seconds();
}

double StreamReplay::run(const workload::PhaseOps& phase,
                         const std::vector<workload::GradSync>& syncs) {
  const double start = free_[0];
  begin_phase(start);
  Cursor c = cursor(phase, start);
  while (!c.done()) place_next(c, false);
  sync(c, syncs);
  end_phase();
  return free_[0] - start;
}

double StreamReplay::run_pair(const workload::PhaseOps& forward, const workload::PhaseOps& backward,
                              const workload::PhaseOps& weight,
                              const std::vector<workload::GradSync>& syncs) {
  const double start = free_[0];
  begin_phase(start);
  Cursor f = cursor(forward, start), b = cursor(backward, start), w = cursor(weight, start);
  workload::PhaseOps second = backward;  // the backward half's ops in order, for its turns
  second.ops.insert(second.ops.end(), weight.ops.begin(), weight.ops.end());
  const auto turns = workload::pair_turns({&forward, &second});
  std::size_t second_placed = 0;
  for (std::size_t t = 0; t < turns[0].size(); ++t) {
    while (f.ends.size() < turns[0][t]) place_next(f, true);
    for (; second_placed < turns[1][t]; ++second_placed) {
      if (!b.done()) {
        place_next(b, true);
        continue;
      }
      // The weight gradients follow the backward's last compute op, as they do unpaired.
      if (w.ends.empty()) w.start = b.last_compute;
      place_next(w, true);
    }
  }
  sync(weight.ops.empty() ? b : w, syncs);
  end_phase();
  return free_[0] - start;
}

double StreamReplay::streams_ahead() const {
  return *std::max_element(free_.begin(), free_.end()) - free_[0];
}

StreamReplay::Cursor StreamReplay::cursor(const workload::PhaseOps& phase, double start) const {
  Cursor c;
  c.phase = &phase;
  c.start = c.last_compute = start;
  c.ends.reserve(phase.ops.size());
  return c;
}

void StreamReplay::place_next(Cursor& c, bool overlapped) {
  const std::size_t i = c.ends.size();
  const workload::PhaseOp& e = c.phase->ops[i];
  auto end_of = [&](int32_t dep) {
    if (dep >= 0) return c.ends[static_cast<std::size_t>(dep)];
    return dep == workload::PhaseOp::kPrevious && i > 0 ? c.ends[i - 1] : c.start;
  };
  double ready = end_of(e.after);
  if (e.also_after != workload::PhaseOp::kNone) ready = std::max(ready, end_of(e.also_after));
  const auto stream =
      overlapped && workload::is_expert_all_to_all(e.op) ? workload::Stream::kEp : e.op.stream;
  c.ends.push_back(place(e.op, stream, ready));
  if (stream == workload::Stream::kCompute) c.last_compute = c.ends.back();
}

double StreamReplay::place(const workload::Op& op, workload::Stream stream, double ready) {
  const double seconds = op.kind == workload::OpKind::kCompute ? compute_seconds(work_, op)
                         : op.kind == workload::OpKind::kCollective
                             ? comm_.seconds(op, stages_at_once_)
                             : 0.0;
  double& free = free_[static_cast<std::size_t>(stream)];
  const double begin = std::max(free, ready);
  free = begin + seconds;
  if (interference_.on()) {
    if (op.kind != workload::OpKind::kCompute)
      spans_.push_back({begin, free, interference_.load(work_, op, comm_)});
    else if (stream == workload::Stream::kCompute)
      kernels_.push_back({begin, free, &op});
  }
  return free;
}

void StreamReplay::begin_phase(double start) {
  kernels_.clear();
  std::erase_if(spans_, [start](const CommSpan& s) { return s.end <= start; });
}

void StreamReplay::end_phase() {
  free_[0] += interference_.extra_seconds(work_, kernels_, spans_);
}

void StreamReplay::sync(const Cursor& final_phase, const std::vector<workload::GradSync>& syncs) {
  for (const auto& g : syncs) place(g.op, g.op.stream, final_phase.ends[g.after]);
}

}  // namespace cs::plan
