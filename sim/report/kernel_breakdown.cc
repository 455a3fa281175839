#include "sim/report/kernel_breakdown.h"

#include <algorithm>
#include <array>

namespace cs::report {

namespace {

constexpr auto kGroups = static_cast<std::size_t>(compute::KernelGroup::kNumGroups);
constexpr auto kAttention = static_cast<std::size_t>(compute::KernelGroup::kAttention);

// The softmax term of each of the program's kernels (0 where there is none), once per kernel.
std::vector<double> softmax_seconds(const workload::Program& program,
                                    const compute::KernelCostModel* cost) {
  std::vector<double> out(program.kernels.size(), 0.0);
  if (!cost) return out;
  for (std::size_t k = 0; k < program.kernels.size(); ++k) {
    const auto& call = program.kernels[k];
    out[k] = cost->attention_softmax_seconds(call.kernel, call.precision);
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, double>> kernel_time_by_group(
    const std::vector<workload::Program>& programs, const compute::KernelCostModel* cost) {
  std::array<double, kGroups> seconds{};
  double softmax = 0;
  for (const auto& program : programs) {
    const std::vector<double> part = softmax_seconds(program, cost);
    for (const auto& op : program.ops) {
      if (op.kind != workload::OpKind::kCompute || op.kernel >= program.kernels.size()) continue;
      const auto group = static_cast<std::size_t>(program.kernels[op.kernel].kernel.group);
      const double s = op.duration.as_seconds();
      const double exp_s = std::min(part[op.kernel], s);
      seconds[group] += s - exp_s;
      softmax += exp_s;
    }
  }
  std::vector<std::pair<std::string, double>> out;
  if (programs.empty()) return out;
  const double n = static_cast<double>(programs.size());
  for (std::size_t g = 0; g < kGroups; ++g) {
    if (seconds[g] > 0)
      out.emplace_back(std::string(compute::kKernelGroupNames[g]), seconds[g] / n);
    if (g == kAttention && softmax > 0) out.emplace_back("attention_softmax_exp", softmax / n);
  }
  return out;
}

double matmul_flops_per_gpu(const std::vector<workload::Program>& programs) {
  if (programs.empty()) return 0;
  double flops = 0;
  for (const auto& program : programs) {
    for (const auto& op : program.ops) {
      if (op.kind != workload::OpKind::kCompute || op.kernel >= program.kernels.size()) continue;
      const compute::KernelKind kind = program.kernels[op.kernel].kernel.kind;
      if (kind == compute::KernelKind::kGemm || kind == compute::KernelKind::kAttention)
        flops += op.flops;
    }
  }
  return flops / static_cast<double>(programs.size());
}

}  // namespace cs::report
