// The grouped expert GEMM (compute/grouped_gemm.h): one expert is the dense GEMM plus its tile
// stores, small experts share the waves a GEMM each would leave idle, the ideal grouped GEMM is
// the FLOPs at the large-GEMM ceiling and never longer than the kernel, and an EP rank's parts
// run as the model asked.
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
  double loop = 0;
  for (const Kernel& e : experts) loop += cost.time(e, Precision::kBf16).as_seconds();
  EXPECT_NEAR(loop, 16 * (mainloop_wave(cost, 2048) + fill_and_launch(cost)), 1e-11);
  EXPECT_EQ(expert_part_time(cost, experts, Precision::kBf16, GroupedGemmModel::kKernel),
            grouped_gemm_time(cost, experts, Precision::kBf16));
  EXPECT_LT(grouped, 0.5 * loop);
}

TEST(GroupedGemm, TheIdealIsTheFlopsAtTheLargeGemmCeiling) {
  const KernelCostModel cost(h100());
  const std::vector<Kernel> experts(16, gemm("e", 2048, 768, 2048, 2.0));
  const double flops = 16 * 2.0 * 2048 * 768 * 2048;
  const double ideal = ideal_grouped_gemm_time(cost, experts, Precision::kBf16).as_seconds();
  EXPECT_NEAR(ideal,
              flops / (peak_flops(h100(), Precision::kBf16) * cost.gemm_ceiling(Precision::kBf16)) +
                  fill_and_launch(cost),
              1e-11);
  EXPECT_EQ(expert_part_time(cost, experts, Precision::kBf16, GroupedGemmModel::kIdeal),
            ideal_grouped_gemm_time(cost, experts, Precision::kBf16));
  // The same as waves: 768 tiles are 768 / 132 waves, not 6 whole ones, each tile's mainloop runs
  // over k alone, not k + k_half, and no tile stores its output.
  EXPECT_NEAR(
      ideal,
      768.0 / kSms * mainloop_wave(cost, 2048) * 2048 / (2048 + kKHalf) + fill_and_launch(cost),
      1e-11);
  // Memory-bound: the same bytes at HBM bandwidth as the kernel's roofline.
  const std::vector<Kernel> thin(4, gemm("thin", 8, 4096, 4096, 2.0));
  EXPECT_NEAR(ideal_grouped_gemm_time(cost, thin, Precision::kBf16).as_seconds(),
              4 * thin[0].bytes / bw() + fill_and_launch(cost), 1e-11);
}

// The law that keeps effects.moe_grouped_gemm's line a cost: over any mix of expert loads, both
// orientations and FP8, the ideal is never longer than the kernel nor than a dense GEMM alone.
TEST(GroupedGemm, TheIdealIsNeverLongerThanTheKernelOrADenseGemm) {
  const KernelCostModel cost(h100());
  const GpuProfile h800 = load_gpu_profile("h800");
  const KernelCostModel fp8_cost(h800);
  const std::vector<std::vector<Kernel>> cases = {
      {gemm("one", 8192, 4096, 4096, 2.0)},
      {gemm("a", 1, 768, 2048, 2.0), gemm("b", 129, 768, 2048, 2.0),
       gemm("c", 4000, 768, 2048, 2.0)},
      std::vector<Kernel>(128, gemm("few", 40, 1536, 2048, 2.0)),
      // Weight gradients: the tokens are the k of each expert's GEMM.
      std::vector<Kernel>(128, gemm("wgrad", 2048, 1536, 40, 2.0)),
      {gemm("w1", 7168, 4096, 3, 2.0), gemm("w2", 7168, 4096, 9000, 2.0)},
      std::vector<Kernel>(8, gemm("big", 16384, 7168, 2048, 1.0)),
  };
  for (const auto& experts : cases)
    for (const auto* c : {&cost, &fp8_cost})
      for (const Precision p : {Precision::kBf16, Precision::kFp8}) {
        const Time ideal = ideal_grouped_gemm_time(*c, experts, p);
        EXPECT_LE(ideal, grouped_gemm_time(*c, experts, p)) << experts[0].name;
        if (experts.size() == 1) {
          EXPECT_LE(ideal, c->time(experts[0], p)) << experts[0].name;
        }
      }
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

TEST(ExpertPartTime, ActivationsRunAsOneKernelUnderEitherModel) {
  const KernelCostModel cost(h100());
  const std::vector<Kernel> acts(8, memory_bound("act", 3e6, 1e6, KernelGroup::kElementwise));
  const double launch = cost.launch_overhead().as_seconds();
  for (const GroupedGemmModel m : {GroupedGemmModel::kKernel, GroupedGemmModel::kIdeal})
    EXPECT_NEAR(expert_part_time(cost, acts, Precision::kBf16, m).as_seconds(),
                8 * 3e6 / bw() + launch, 1e-11);
}

}  // namespace
}  // namespace cs::compute
