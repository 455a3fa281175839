// How much longer the planner's estimate makes compute kernels that run beside communication, by
// the law the simulated step's kernel stretcher applies (sim/exec/interference.h).
#pragma once

#include <optional>
#include <vector>

#include "proto/config.pb.h"
#include "sim/compute/gpu_profile.h"
#include "sim/exec/interference.h"
#include "sim/plan/collective_cost.h"
#include "sim/workload/program_builder.h"

namespace cs::plan {

// A span during which one communication op is in flight on the GPU, with the load it puts there.
struct CommSpan {
  double start = 0, end = 0;
  exec::CommLoad load;
};

// A compute-stream kernel where the replay placed it, at its time alone.
struct KernelSpan {
  double start = 0, end = 0;
  const workload::Op* op = nullptr;
};

class ComputeInterference {
 public:
  // Off (nothing slows) with effects.comm_compute_interference off, as in the simulation.
  ComputeInterference(const clustersim::RunConfig& config, const compute::GpuProfile& gpu);

  bool on() const { return model_.has_value(); }
  // The load communication op `op` of `work` puts on its GPU, by the path the executor gives it
  // (exec::LayoutGroups::path_of): a TP stream's userbuffers ring exchange, a send / receive,
  // DeepEP's kernels, or an NCCL collective inside one server or across servers.
  exec::CommLoad load(const workload::StageWork& work, const workload::Op& op,
                      CollectiveCost& comm) const;
  // Seconds `kernels` (in time order, none overlapping) run longer beside `spans` than alone:
  // each kernel's time beside a load, times its slowdown under that load less one.
  double extra_seconds(const workload::StageWork& work, const std::vector<KernelSpan>& kernels,
                       const std::vector<CommSpan>& spans) const;
  // The factor by which the compute-stream kernels of `phase` slow together under `load`, each
  // weighted by its seconds.
  double mean_slowdown(const workload::StageWork& work, const workload::PhaseOps& phase,
                       const exec::CommLoad& load) const;

 private:
  double slowdown(const workload::StageWork& work, const workload::Op& op, double seconds,
                  const exec::CommLoad& load) const;

  std::optional<exec::InterferenceModel> model_;
};

}  // namespace cs::plan
