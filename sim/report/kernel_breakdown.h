// Compute time per GPU per step split by kernel group (GEMM, attention, norms, ...), and the
// hardware FLOPs the timed kernels do, for the report's breakdown and HFU.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/compute/kernel_cost.h"
#include "sim/workload/program.h"

namespace cs::report {

// Seconds of compute-stream kernels per step, by compute::KernelGroup in its order, averaged over
// `programs` (one per pipeline stage, each run by the same number of GPUs). Ops without a
// recorded kernel (host offload) are left out; groups with no time are left out. With `cost`
// (the model that timed the programs), the attention kernels' softmax-exponential term
// (KernelCostModel::attention_softmax_seconds) is its own line, "attention_softmax_exp", right
// after "attention" and taken out of it, so the lines still sum to the compute time.
std::vector<std::pair<std::string, double>> kernel_time_by_group(
    const std::vector<workload::Program>& programs, const compute::KernelCostModel* cost = nullptr);

// Hardware FLOPs per GPU per step of the matrix kernels (GEMMs and attention, recomputation
// included) the programs time, averaged over `programs` as above: HFU's numerator, from the same
// ops as the step time, so a new kernel or recompute option counts without a second formula.
double matmul_flops_per_gpu(const std::vector<workload::Program>& programs);

}  // namespace cs::report
