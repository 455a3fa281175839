// A bucket of parameters (or of their gradients) that fills as layers complete them and is
// emptied into one collective once it holds its capacity, or at the end of the pass.
#pragma once

#include <cstdint>
#include <utility>

namespace cs::lower {

class Bucket {
 public:
  explicit Bucket(int64_t capacity) : capacity_(capacity) {}

  bool empty() const { return held_ == 0; }
  int64_t held() const { return held_; }
  int64_t capacity() const { return capacity_; }

  // Adds `params`. When that makes the bucket due, empties it and returns what it held; otherwise
  // returns 0. A bucket is due once it holds any parameters and, unless `flush` (the pass's last,
  // partly filled bucket), at least its capacity.
  int64_t add(int64_t params, bool flush = false) {
    held_ += params;
    if (held_ == 0 || (!flush && held_ < capacity_)) return 0;
    return std::exchange(held_, 0);
  }
  // Empties a partly filled bucket: what it held (0: nothing to send).
  int64_t flush() { return add(0, true); }

 private:
  int64_t capacity_;
  int64_t held_ = 0;
};

}  // namespace cs::lower
