#include "sim/report/kernel_breakdown.h"

#include <array>

namespace cs::report {

std::vector<std::pair<std::string, double>> kernel_time_by_group(
    const std::vector<workload::Program>& programs) {
  constexpr auto kGroups = static_cast<std::size_t>(compute::KernelGroup::kNumGroups);
  std::array<double, kGroups> seconds{};
  for (const auto& program : programs) {
    for (const auto& op : program.ops) {
      if (op.kind != workload::OpKind::kCompute || op.kernel >= program.kernels.size()) continue;
      const auto group = static_cast<std::size_t>(program.kernels[op.kernel].kernel.group);
      seconds[group] += op.duration.as_seconds();
    }
  }
  std::vector<std::pair<std::string, double>> out;
  if (programs.empty()) return out;
  for (std::size_t g = 0; g < kGroups; ++g) {
    if (seconds[g] > 0)
      out.emplace_back(std::string(compute::kKernelGroupNames[g]),
                       seconds[g] / static_cast<double>(programs.size()));
  }
  return out;
}

}  // namespace cs::report
