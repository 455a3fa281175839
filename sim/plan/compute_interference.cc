#include "sim/plan/compute_interference.h"

#include <algorithm>

#include "sim/plan/stream_replay.h"

namespace cs::plan {

ComputeInterference::ComputeInterference(const clustersim::RunConfig& config,
                                         const compute::GpuProfile& gpu) {
  if (!config.effects().comm_compute_interference()) return;
  model_ = exec::interference_model(gpu);
  model_->wave_quantization = config.effects().interference_wave_quantization();
}

exec::CommLoad ComputeInterference::load(const workload::StageWork& work, const workload::Op& op,
                                         CollectiveCost& comm) const {
  if (!model_ || op.kind == workload::OpKind::kCompute) return {};
  if (op.stream == workload::Stream::kTp) return model_->ring_exchange;
  if (op.kind != workload::OpKind::kCollective || op.coll_op == coll::Op::kSendRecv)
    return model_->point_to_point;
  const bool one_server = comm.within_server(op.dim);
  if (op.varies < work.all_to_alls.size() && work.all_to_alls[op.varies].deduplicated)
    return one_server ? model_->deepep_nvlink : model_->deepep_network;
  return one_server ? model_->nvlink_collective : model_->network_collective;
}

double ComputeInterference::slowdown(const workload::StageWork& work, const workload::Op& op,
                                     double seconds, const exec::CommLoad& load) const {
  if (op.kernel >= work.kernels.size())  // as the executor takes a kernel it has no shape of
    return exec::kernel_slowdown(*model_, compute::KernelKind::kGemm, seconds, 0, load);
  const compute::Kernel& kernel = work.kernels[op.kernel].kernel;
  return exec::kernel_slowdown(*model_, kernel.kind, seconds, kernel.bytes, load,
                               exec::kernel_ctas(*model_, kernel));
}

double ComputeInterference::extra_seconds(const workload::StageWork& work,
                                          const std::vector<KernelSpan>& kernels,
                                          const std::vector<CommSpan>& spans) const {
  if (!model_ || kernels.empty() || spans.empty()) return 0;
  // Sweep the loads' starts and ends (+1 / -1) alongside the kernels.
  struct Change {
    double at;
    const exec::CommLoad* load;
    int sign;
  };
  std::vector<Change> changes;
  changes.reserve(2 * spans.size());
  for (const CommSpan& s : spans) {
    changes.push_back({s.start, &s.load, +1});
    changes.push_back({s.end, &s.load, -1});
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const Change& a, const Change& b) { return a.at < b.at; });
  exec::CommLoad load;
  std::size_t next = 0;
  const auto advance_to = [&](double t) {
    for (; next < changes.size() && changes[next].at <= t; ++next)
      changes[next].sign > 0 ? load += *changes[next].load : load -= *changes[next].load;
  };
  double extra = 0;
  for (const KernelSpan& k : kernels) {
    const double seconds = k.end - k.start;
    for (double t = k.start; t < k.end;) {
      advance_to(t);
      const double until = next < changes.size() ? std::min(k.end, changes[next].at) : k.end;
      if (load.kernels > 0) extra += (slowdown(work, *k.op, seconds, load) - 1) * (until - t);
      t = until;
    }
  }
  return extra;
}

double ComputeInterference::mean_slowdown(const workload::StageWork& work,
                                          const workload::PhaseOps& phase,
                                          const exec::CommLoad& load) const {
  if (!model_) return 1;
  double alone = 0, beside = 0;
  for (const auto& e : phase.ops) {
    if (e.op.kind != workload::OpKind::kCompute || e.op.stream != workload::Stream::kCompute)
      continue;
    const double s = compute_seconds(work, e.op);
    alone += s;
    beside += s * slowdown(work, e.op, s, load);
  }
  return alone > 0 ? beside / alone : 1;
}

}  // namespace cs::plan
