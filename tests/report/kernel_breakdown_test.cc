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
    op.flops = kernel.flops;
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

TEST(KernelBreakdown, MatmulFlopsCountGemmsAndAttentionOnlyAveragedOverStages) {
  const auto norm = compute::memory_bound("ln", 1e6, 5e5, compute::KernelGroup::kNorm);
  const auto g = compute::gemm("qkv", 128, 128, 128, 2);
  const auto fa = compute::attention("fa", 4, 256, 256, 64, true, false, 2);
  std::vector<workload::Program> stages = {program_with({{g, 10}, {norm, 2}, {fa, 5}}),
                                           program_with({{g, 30}})};
  workload::Op host;  // host offload: no kernel, no FLOPs on the GPU
  host.kind = workload::OpKind::kCompute;
  host.flops = 1e12;
  stages[1].ops.push_back(host);
  EXPECT_DOUBLE_EQ(matmul_flops_per_gpu(stages), (2 * g.flops + fa.flops) / 2);
  EXPECT_EQ(matmul_flops_per_gpu({}), 0);
}

}  // namespace
}  // namespace cs::report
