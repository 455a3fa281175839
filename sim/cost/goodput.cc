#include "sim/cost/goodput.h"

#include <algorithm>
#include <cmath>

#include "sim/config/config_error.h"

namespace cs::cost {

double checkpoint_bytes(double params) {
  // bf16 weights; fp32 master copy, Adam m and v (sim/workload/memory.h's kBf16 states less
  // the gradients, which a checkpoint does not keep).
  return params * (2.0 + 12.0);
}

Goodput goodput_of(const clustersim::ReliabilityConfig& r, double bytes, int64_t gpus,
                   const std::string& source) {
  auto positive = [&](double v, const char* field) {
    if (!(v > 0) || !std::isfinite(v))
      throw ConfigError(source + ": reliability." + field + " must be positive, not " +
                        std::to_string(v));
  };
  positive(r.interruptions_per_gpu_day(), "interruptions_per_gpu_day");
  positive(r.storage_gb_per_s(), "storage_gb_per_s");
  if (!(r.restart_s() >= 0) || !(r.checkpoint_interval_s() >= 0))
    throw ConfigError(source +
                      ": reliability.restart_s and checkpoint_interval_s must not be "
                      "negative");
  Goodput g;
  g.checkpoint_bytes = bytes;
  g.mtbf_s =
      86400.0 / (r.interruptions_per_gpu_day() * static_cast<double>(std::max<int64_t>(gpus, 1)));
  g.write_s = g.read_s = bytes / (r.storage_gb_per_s() * 1e9);
  g.restart_s = r.restart_s();
  g.interval_s = r.checkpoint_interval_s() > 0 ? r.checkpoint_interval_s()
                                               : std::sqrt(2.0 * g.write_s * g.mtbf_s);
  if (g.interval_s <= 0) {
    g.fraction = 1 - (g.restart_s + g.read_s) / g.mtbf_s;  // nothing to write: no checkpoints
  } else {
    g.fraction =
        1 - g.write_s / g.interval_s - (g.interval_s / 2 + g.restart_s + g.read_s) / g.mtbf_s;
  }
  g.fraction = std::clamp(g.fraction, 0.0, 1.0);
  return g;
}

}  // namespace cs::cost
