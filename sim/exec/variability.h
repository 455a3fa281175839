// How long a compute kernel takes on one rank of a cluster whose GPUs differ: speed and jitter.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/core/units.h"

namespace cs::exec {

enum class JitterDistribution : uint8_t { kLognormal, kNormal };

// Each kernel's duration times a factor of mean 1 drawn from (seed, rank, op index).
struct KernelJitter {
  double cv = 0;  // standard deviation / mean of the factor; 0: off
  JitterDistribution distribution = JitterDistribution::kLognormal;
  uint64_t seed = 1;

  // Lognormal: exp(N(-s^2/2, s^2)) with s^2 = ln(1 + cv^2). Normal: 1 + cv z, z clipped to
  // [-3, 3] (cv must then be below 1/3).
  double factor(int32_t rank, uint32_t op) const;
};

// Every GPU's speed: named ranks at chosen speeds, the others drawn or 1.
struct SpeedSpec {
  std::vector<std::pair<int32_t, double>> named;  // rank -> speed, replacing the drawn one
  double relative_std = 0;                        // 0: every other GPU at speed 1
  double min_speed = 0.5, max_speed = 1.5;        // the drawn speeds are clipped to these
  uint64_t seed = 1;
};
// One speed per rank of a `world`-rank run: clip(1 + relative_std z_r) for rank r.
std::vector<double> draw_speeds(const SpeedSpec& spec, int32_t world);

// The compute time of every (rank, op): the nominal kernel time / the rank's speed x jitter.
class ComputeVariability {
 public:
  ComputeVariability(std::vector<double> speeds, KernelJitter jitter)
      : speeds_(std::move(speeds)), jitter_(jitter) {}

  // Every rank computes alike and every kernel keeps its time: nothing to model.
  bool uniform() const;
  double speed(int32_t rank) const { return speeds_[static_cast<std::size_t>(rank)]; }
  const std::vector<double>& speeds() const { return speeds_; }
  const KernelJitter& jitter() const { return jitter_; }
  // Rounded to the picosecond; the nominal time itself where the factor is exactly 1.
  Time duration(Time nominal, int32_t rank, uint32_t op) const;

 private:
  std::vector<double> speeds_;  // by rank
  KernelJitter jitter_;
};

}  // namespace cs::exec
