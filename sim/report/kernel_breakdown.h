// Compute time per GPU per step split by kernel group (GEMM, attention, norms, ...), for the
// report's breakdown.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/workload/program.h"

namespace cs::report {

// Seconds of compute-stream kernels per step, by compute::KernelGroup in its order, averaged over
// `programs` (one per pipeline stage, each run by the same number of GPUs). Ops without a
// recorded kernel (host offload) are left out; groups with no time are left out.
std::vector<std::pair<std::string, double>> kernel_time_by_group(
    const std::vector<workload::Program>& programs);

}  // namespace cs::report
