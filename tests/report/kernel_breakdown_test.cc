// The report's compute breakdown by kernel group: sums per group, mean over stage programs.
#include "sim/report/kernel_breakdown.h"

#include <gtest/gtest.h>

namespace cs::report {
namespace {

workload::Program program_with(const std::vector<std::pair<compute::Kernel, double>>& ops) {
  workload::Program p;
  for (const auto& [kernel, us] : ops) {
    workload::Op op;
    op.kind = workload::OpKind::kCompute;
    op.duration = Time::from_us(us);
    op.kernel = static_cast<uint32_t>(p.kernels.size());
    p.kernels.push_back({kernel, compute::Precision::kBf16});
    p.ops.push_back(op);
  }
  return p;
}

TEST(KernelBreakdown, SumsEachGroupAndAveragesOverStages) {
  const auto norm = compute::memory_bound("ln", 1e6, 0, compute::KernelGroup::kNorm);
  const auto g = compute::gemm("qkv", 128, 128, 128, 2);
  std::vector<workload::Program> stages = {program_with({{g, 10}, {norm, 2}, {g, 10}}),
                                           program_with({{g, 30}})};
  // A compute op without a recorded kernel (host offload) is not a kernel group's time.
  workload::Op host;
  host.kind = workload::OpKind::kCompute;
  host.duration = Time::from_us(1000);
  stages[1].ops.push_back(host);
  const auto by = kernel_time_by_group(stages);
  ASSERT_EQ(by.size(), 2u);
  EXPECT_EQ(by[0].first, "gemm");
  EXPECT_NEAR(by[0].second, 25e-6, 1e-15);
  EXPECT_EQ(by[1].first, "norm");
  EXPECT_NEAR(by[1].second, 1e-6, 1e-15);
  EXPECT_TRUE(kernel_time_by_group({}).empty());
}

}  // namespace
}  // namespace cs::report
