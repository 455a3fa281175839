// Progress lines on a terminal, redrawn in place: points of a sweep, simulated time of a run.
// Pipes and CI logs get nothing.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "sim/cli/command_io.h"
#include "sim/core/progress.h"

namespace cs::cli {

inline std::string clock_text(double seconds) {
  const auto s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

inline bool stderr_is_terminal() {
  return isatty(STDERR_FILENO) != 0;
}

// Sweep points (or plan candidates: `unit`) done of a total, with a bar and an ETA.
class PointProgress {
 public:
  explicit PointProgress(bool enabled, const char* unit = "points")
      : enabled_(enabled), unit_(unit), start_(std::chrono::steady_clock::now()) {}
  void update(std::size_t done, std::size_t total) {
    if (!enabled_ || total == 0) return;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * done / total);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::string eta = done == 0 ? "?" : clock_text(elapsed / done * (total - done));
    std::fprintf(stderr, "\r[%s] %zu/%zu %s  elapsed %s  ETA %s ", bar.c_str(), done, total, unit_,
                 clock_text(elapsed).c_str(), eta.c_str());
    if (done == total) std::fprintf(stderr, "\r%*s\r", kWidth + 60, "");
    std::fflush(stderr);
  }

 private:
  bool enabled_;
  const char* unit_;
  std::chrono::steady_clock::time_point start_;
};

// For run and replay: simulated time reached, the share of ops done, events, elapsed and ETA.
// Nothing during the first two seconds, so quick runs print nothing; the line is wiped at the end.
// An empty function where stderr is not a terminal or `io` asks for none.
inline ProgressFn simulation_progress(const CommandIo& io) {
  if (!io.terminal_progress || !stderr_is_terminal()) return {};
  return [shown = false](const SimProgress& p) mutable {
    if (p.done) {
      if (shown) std::fprintf(stderr, "\r%*s\r", 100, "");
      std::fflush(stderr);
      return;
    }
    if (p.wall_s < 2) return;
    shown = true;
    std::string eta = "?";
    if (p.fraction > 0) eta = clock_text(p.wall_s * (1 - p.fraction) / p.fraction);
    std::fprintf(stderr,
                 "\rsimulated %.4f s  %3.0f%% of the ops  %.1fM events  elapsed %s  ETA %s   ",
                 p.simulated.as_seconds(), 100 * std::max(p.fraction, 0.0),
                 static_cast<double>(p.events) / 1e6, clock_text(p.wall_s).c_str(), eta.c_str());
    std::fflush(stderr);
  };
}

}  // namespace cs::cli
