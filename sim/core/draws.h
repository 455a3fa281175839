// Random numbers as pure functions of (seed, stream, index), so that every draw is reproducible.
#pragma once

#include <cstdint>

namespace cs {

// What a draw is for, so that different uses of one seed never share numbers.
enum class DrawStream : uint64_t { kGpuSpeed = 1, kKernelJitter = 2, kLinks = 3 };

// 64 well-mixed bits (SplitMix64's finalizer applied in turn to seed, stream and index).
uint64_t draw_bits(uint64_t seed, DrawStream stream, uint64_t index);
// Uniform in the open interval (0, 1).
double draw_uniform(uint64_t seed, DrawStream stream, uint64_t index);
// Standard normal (Box-Muller on two uniform draws of the same index).
double draw_normal(uint64_t seed, DrawStream stream, uint64_t index);

}  // namespace cs
