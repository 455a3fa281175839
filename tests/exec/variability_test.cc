// The compute variability model: reproducible draws, jitter of mean 1, speeds and durations.
#include "sim/exec/variability.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/core/draws.h"

namespace cs::exec {
namespace {

// Mean and coefficient of variation of `n` jitter factors of rank 0.
std::pair<double, double> moments(const KernelJitter& j, uint32_t n) {
  double sum = 0, sq = 0;
  for (uint32_t op = 0; op < n; ++op) {
    const double f = j.factor(0, op);
    sum += f;
    sq += f * f;
  }
  const double mean = sum / n;
  return {mean, std::sqrt(sq / n - mean * mean) / mean};
}

TEST(Draws, AreFunctionsOfSeedStreamAndIndex) {
  EXPECT_EQ(draw_bits(7, DrawStream::kGpuSpeed, 3), draw_bits(7, DrawStream::kGpuSpeed, 3));
  EXPECT_NE(draw_bits(7, DrawStream::kGpuSpeed, 3), draw_bits(8, DrawStream::kGpuSpeed, 3));
  EXPECT_NE(draw_bits(7, DrawStream::kGpuSpeed, 3), draw_bits(7, DrawStream::kLinks, 3));
  EXPECT_NE(draw_bits(7, DrawStream::kGpuSpeed, 3), draw_bits(7, DrawStream::kGpuSpeed, 4));
}

TEST(Draws, NormalHasMeanZeroAndUnitVariance) {
  double sum = 0, sq = 0;
  constexpr int kN = 200000;
  for (int i = 0; i < kN; ++i) {
    const double u = draw_uniform(1, DrawStream::kLinks, i);
    ASSERT_GT(u, 0);
    ASSERT_LT(u, 1);
    const double z = draw_normal(1, DrawStream::kKernelJitter, i);
    sum += z;
    sq += z * z;
  }
  EXPECT_NEAR(sum / kN, 0, 0.01);
  EXPECT_NEAR(sq / kN, 1, 0.01);
}

TEST(KernelJitter, IsReproducibleAndDiffersWithTheSeed) {
  const KernelJitter a{.cv = 0.1, .seed = 1};
  const KernelJitter b{.cv = 0.1, .seed = 2};
  const KernelJitter same{.cv = 0.1, .seed = 1};
  EXPECT_EQ(a.factor(5, 17), same.factor(5, 17));
  EXPECT_NE(a.factor(5, 17), b.factor(5, 17));
  EXPECT_NE(a.factor(5, 17), a.factor(6, 17));  // another rank
  EXPECT_NE(a.factor(5, 17), a.factor(5, 18));  // another op
  EXPECT_EQ(KernelJitter{}.factor(5, 17), 1);   // cv 0: off
}

TEST(KernelJitter, HasMeanOneAndTheAskedCoefficientOfVariation) {
  for (const auto dist : {JitterDistribution::kLognormal, JitterDistribution::kNormal}) {
    const auto [mean, cv] = moments({.cv = 0.14, .distribution = dist, .seed = 3}, 200000);
    EXPECT_NEAR(mean, 1, 0.002);
    EXPECT_NEAR(cv, 0.14, 0.003);
  }
}

TEST(KernelJitter, NormalFactorsStayWithinThreeDeviations) {
  const KernelJitter j{.cv = 0.3, .distribution = JitterDistribution::kNormal, .seed = 4};
  for (uint32_t op = 0; op < 100000; ++op) {
    ASSERT_GE(j.factor(1, op), 1 - 0.9 - 1e-12);
    ASSERT_LE(j.factor(1, op), 1 + 0.9 + 1e-12);
  }
}

TEST(Speeds, NamedRanksReplaceDrawnOnesAndDrawsAreClipped) {
  const SpeedSpec none{};
  EXPECT_EQ(draw_speeds(none, 4), (std::vector<double>{1, 1, 1, 1}));
  const SpeedSpec named{.named = {{2, 0.8}}};
  EXPECT_EQ(draw_speeds(named, 4), (std::vector<double>{1, 1, 0.8, 1}));
  const SpeedSpec spread{
      .named = {{0, 0.25}}, .relative_std = 0.5, .min_speed = 0.7, .max_speed = 1.2, .seed = 9};
  const auto speeds = draw_speeds(spread, 1000);
  EXPECT_EQ(speeds[0], 0.25);
  bool low = false, high = false;
  for (std::size_t r = 1; r < speeds.size(); ++r) {
    ASSERT_GE(speeds[r], 0.7);
    ASSERT_LE(speeds[r], 1.2);
    low = low || speeds[r] == 0.7;
    high = high || speeds[r] == 1.2;
  }
  EXPECT_TRUE(low && high);  // a spread of 0.5 reaches both clips among 1000 GPUs
  EXPECT_EQ(speeds, draw_speeds(spread, 1000));
}

TEST(ComputeVariability, ASlowRankTakesOneOverItsSpeed) {
  const ComputeVariability v({1, 0.8, 0.5}, KernelJitter{});
  EXPECT_FALSE(v.uniform());
  const Time t = Time::us(100);
  EXPECT_EQ(v.duration(t, 0, 3), t);
  EXPECT_EQ(v.duration(t, 1, 3), Time::us(125));
  EXPECT_EQ(v.duration(t, 2, 3), Time::us(200));
  EXPECT_TRUE(ComputeVariability({1, 1}, KernelJitter{}).uniform());
  EXPECT_FALSE(ComputeVariability({1, 1}, KernelJitter{.cv = 0.01}).uniform());
}

TEST(ComputeVariability, JitterAndSpeedMultiply) {
  const KernelJitter j{.cv = 0.1, .seed = 5};
  const ComputeVariability v({0.5}, j);
  const Time t = Time::ms(1);
  EXPECT_EQ(v.duration(t, 0, 42),
            Time::ps(std::llround(static_cast<double>(t.count_ps()) * j.factor(0, 42) / 0.5)));
}

}  // namespace
}  // namespace cs::exec
