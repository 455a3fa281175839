// The grouped expert GEMM (compute/grouped_gemm.h): one expert is the dense GEMM plus its tile
// stores, small experts share the waves a GEMM each would leave idle, and an EP rank's parts run
// grouped or back to back as asked.
#include "sim/compute/grouped_gemm.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/compute/gpu_profile.h"

namespace cs::compute {
namespace {

constexpr double kSms = 132, kTileM = 128, kTileN = 256, kKHalf = 64;

const GpuProfile& h100() {
  static const GpuProfile p = load_gpu_profile("h100");
  return p;
}
double bw() {
  return achievable_hbm_bandwidth(h100()).in_bytes_per_s();
}
// One wave of 128 x 256 tiles over k on every SM, and the wave's bf16 tile stores.
double mainloop_wave(const KernelCostModel& cost, double k) {
  return 2.0 * kTileM * kTileN * (k + kKHalf) /
         (peak_flops(h100(), Precision::kBf16) * cost.gemm_ceiling(Precision::kBf16) / kSms);
}
double store_wave() {
  return kTileM * kTileN * kGroupedGemmOutputBytes * kSms / bw();
}
double fill_and_launch(const KernelCostModel& cost) {
  return h100().hbm_latency_ns() * 1e-9 + cost.launch_overhead().as_seconds();
}

TEST(GroupedGemm, OneExpertIsTheDenseGemmPlusItsTileStores) {
  const KernelCostModel cost(h100());
  // 64 x 16 = 1024 tiles: 8 waves on 132 SMs, compute-bound.
  const std::vector<Kernel> one = {gemm("g", 8192, 4096, 4096, 2.0)};
  const double dense = cost.time(one[0], Precision::kBf16).as_seconds();
  const double grouped = grouped_gemm_time(cost, one, Precision::kBf16).as_seconds();
  EXPECT_NEAR(grouped - dense, 8 * store_wave(), 1e-11);
}

TEST(GroupedGemm, SmallExpertsShareTheWavesAGemmEachLeavesIdle) {
  const KernelCostModel cost(h100());
  // 16 experts of 2048 tokens, n 768, k 2048: 48 tiles each. One kernel: 768 tiles, 6 waves;
  // one GEMM per expert: 16 kernels of one third of a wave each.
  const std::vector<Kernel> experts(16, gemm("e", 2048, 768, 2048, 2.0));
  const double grouped = grouped_gemm_time(cost, experts, Precision::kBf16).as_seconds();
  EXPECT_NEAR(grouped, 6 * (mainloop_wave(cost, 2048) + store_wave()) + fill_and_launch(cost),
              1e-11);
  const double loop = expert_part_time(cost, experts, Precision::kBf16, false).as_seconds();
  EXPECT_NEAR(loop, 16 * (mainloop_wave(cost, 2048) + fill_and_launch(cost)), 1e-11);
  EXPECT_EQ(expert_part_time(cost, experts, Precision::kBf16, true),
            grouped_gemm_time(cost, experts, Precision::kBf16));
  EXPECT_LT(grouped, 0.5 * loop);
}

TEST(GroupedGemm, EmptyExpertsAreSkippedAndNoneLeaveTheLaunch) {
  const KernelCostModel cost(h100());
  const Kernel e = gemm("e", 2048, 768, 2048, 2.0);
  const Kernel none = gemm("none", 0, 768, 2048, 2.0);
  const std::vector<Kernel> with_empty = {e, none, e};
  const std::vector<Kernel> without = {e, e};
  EXPECT_EQ(grouped_gemm_time(cost, with_empty, Precision::kBf16),
            grouped_gemm_time(cost, without, Precision::kBf16));
  const std::vector<Kernel> all_empty = {none, none};
  EXPECT_EQ(grouped_gemm_time(cost, all_empty, Precision::kBf16), cost.launch_overhead());
}

TEST(GroupedGemm, PipelineFillFollowsItsSwitch) {
  KernelCostOptions no_fill;
  no_fill.gemm_pipeline_fill = false;
  const KernelCostModel with(h100()), without(h100(), no_fill);
  const std::vector<Kernel> experts(4, gemm("e", 1024, 1536, 2048, 2.0));
  EXPECT_NEAR((grouped_gemm_time(with, experts, Precision::kBf16) -
               grouped_gemm_time(without, experts, Precision::kBf16))
                  .as_seconds(),
              h100().hbm_latency_ns() * 1e-9, 1e-12);
}

TEST(ExpertPartTime, GroupedActivationsRunAsOneKernel) {
  const KernelCostModel cost(h100());
  const std::vector<Kernel> acts(8, memory_bound("act", 3e6, 1e6, KernelGroup::kElementwise));
  const double launch = cost.launch_overhead().as_seconds();
  EXPECT_NEAR(expert_part_time(cost, acts, Precision::kBf16, true).as_seconds(),
              8 * 3e6 / bw() + launch, 1e-11);
  EXPECT_NEAR(expert_part_time(cost, acts, Precision::kBf16, false).as_seconds(),
              8 * (3e6 / bw() + launch), 1e-11);
}

}  // namespace
}  // namespace cs::compute
