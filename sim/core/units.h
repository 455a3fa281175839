// Simulated time (integer picoseconds) and the physical units that turn into it: bytes, bandwidth.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace cs {

// A point or span of simulated time, counted in whole picoseconds so that runs compare exactly.
class Time {
 public:
  constexpr Time() = default;

  static constexpr Time ps(int64_t v) { return Time(v); }
  static constexpr Time ns(int64_t v) { return Time(v * 1'000); }
  static constexpr Time us(int64_t v) { return Time(v * 1'000'000); }
  static constexpr Time ms(int64_t v) { return Time(v * 1'000'000'000); }
  static constexpr Time s(int64_t v) { return Time(v * 1'000'000'000'000); }
  // Round to the nearest picosecond. Throw std::overflow_error beyond the clock's range
  // (2^63 ps, about 106 days) rather than wrap into a negative time.
  static Time from_seconds(double s) { return Time(checked_ps(s * 1e12)); }
  static Time from_us(double us) { return Time(checked_ps(us * 1e6)); }
  static int64_t checked_ps(double ps) {
    if (!(std::fabs(ps) < 9.2e18)) {
      throw std::overflow_error("simulated time overflow: " + std::to_string(ps * 1e-12) +
                                " s is beyond the clock's range of about 106 days");
    }
    return std::llround(ps);
  }
  static constexpr Time max() { return Time(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t count_ps() const { return ps_; }
  constexpr double as_seconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr double as_us() const { return static_cast<double>(ps_) * 1e-6; }
  constexpr double as_ns() const { return static_cast<double>(ps_) * 1e-3; }

  constexpr Time operator+(Time o) const { return Time(ps_ + o.ps_); }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  constexpr Time operator*(int64_t k) const { return Time(ps_ * k); }
  constexpr Time& operator+=(Time o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr Time& operator-=(Time o) {
    ps_ -= o.ps_;
    return *this;
  }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(int64_t ps) : ps_(ps) {}
  int64_t ps_ = 0;
};

using Bytes = int64_t;

constexpr Bytes kKiB = 1024;
constexpr Bytes kMiB = 1024 * kKiB;
constexpr Bytes kGiB = 1024 * kMiB;

// A data rate. Stored as bytes per second; spec sheets quote GB/s (NVLink) or Gb/s (NICs).
class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth bytes_per_s(double v) { return Bandwidth(v); }
  static constexpr Bandwidth gigabytes_per_s(double v) { return Bandwidth(v * 1e9); }
  static constexpr Bandwidth gigabits_per_s(double v) { return Bandwidth(v * 1e9 / 8); }

  constexpr double in_bytes_per_s() const { return bps_; }
  constexpr double in_gigabytes_per_s() const { return bps_ * 1e-9; }
  constexpr auto operator<=>(const Bandwidth&) const = default;

 private:
  constexpr explicit Bandwidth(double bps) : bps_(bps) {}
  double bps_ = 0;
};

// Time to push `bytes` through `bw`, rounded up to a whole picosecond so nothing finishes early.
inline Time transfer_time(Bytes bytes, Bandwidth bw) {
  return Time::ps(
      Time::checked_ps(std::ceil(static_cast<double>(bytes) * 1e12 / bw.in_bytes_per_s())));
}

}  // namespace cs
