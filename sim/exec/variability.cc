#include "sim/exec/variability.h"

#include <algorithm>
#include <cmath>

#include "sim/core/draws.h"

namespace cs::exec {

double KernelJitter::factor(int32_t rank, uint32_t op) const {
  if (cv == 0) return 1;
  const uint64_t index = static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32 | op;
  const double z = draw_normal(seed, DrawStream::kKernelJitter, index);
  if (distribution == JitterDistribution::kNormal) return 1 + cv * std::clamp(z, -3.0, 3.0);
  const double sigma = std::sqrt(std::log1p(cv * cv));
  return std::exp(sigma * z - sigma * sigma / 2);
}

std::vector<double> draw_speeds(const SpeedSpec& spec, int32_t world) {
  std::vector<double> speeds(static_cast<std::size_t>(std::max(world, 0)), 1.0);
  if (spec.relative_std > 0) {
    for (int32_t r = 0; r < world; ++r) {
      const double z = draw_normal(spec.seed, DrawStream::kGpuSpeed, static_cast<uint64_t>(r));
      speeds[static_cast<std::size_t>(r)] =
          std::clamp(1 + spec.relative_std * z, spec.min_speed, spec.max_speed);
    }
  }
  for (const auto& [rank, speed] : spec.named)
    if (rank >= 0 && rank < world) speeds[static_cast<std::size_t>(rank)] = speed;
  return speeds;
}

bool ComputeVariability::uniform() const {
  return jitter_.cv == 0 &&
         std::all_of(speeds_.begin(), speeds_.end(), [](double s) { return s == 1; });
}

Time ComputeVariability::duration(Time nominal, int32_t rank, uint32_t op) const {
  const double factor = jitter_.factor(rank, op) / speed(rank);
  if (factor == 1) return nominal;
  return Time::ps(
      std::max<int64_t>(0, std::llround(static_cast<double>(nominal.count_ps()) * factor)));
}

}  // namespace cs::exec
