#include "sim/core/draws.h"

#include <cmath>
#include <numbers>

namespace cs {

namespace {

// SplitMix64's output function (Steele, Lea and Flood, OOPSLA 2014): a bijection on 64 bits
// whose every output bit depends on every input bit.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double to_unit(uint64_t bits) {
  // The top 53 bits, centred in their interval: never 0, never 1.
  return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53;
}

}  // namespace

uint64_t draw_bits(uint64_t seed, DrawStream stream, uint64_t index) {
  return mix(mix(mix(seed) ^ static_cast<uint64_t>(stream)) ^ index);
}

double draw_uniform(uint64_t seed, DrawStream stream, uint64_t index) {
  return to_unit(draw_bits(seed, stream, index));
}

double draw_normal(uint64_t seed, DrawStream stream, uint64_t index) {
  const uint64_t bits = draw_bits(seed, stream, index);
  const double u1 = to_unit(bits);
  const double u2 = to_unit(mix(bits));
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

}  // namespace cs
