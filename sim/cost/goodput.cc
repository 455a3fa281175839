#include "sim/cost/goodput.h"

#include <algorithm>
#include <cmath>

#include "sim/config/config_error.h"
#include "sim/config/field_checks.h"

namespace cs::cost {

double checkpoint_bytes(double params) {
  // bf16 weights; fp32 master copy, Adam m and v (sim/workload/memory.h's kBf16 states less
  // the gradients, which a checkpoint does not keep).
  return params * (2.0 + 12.0);
}

void validate_reliability(const clustersim::ReliabilityConfig& r, const std::string& source) {
  auto positive = [&](double v, const char* field) {
    if (!(v > 0) || !std::isfinite(v))
      throw ConfigError(source + ": reliability." + field + " must be positive, not " +
                        number_text(v));
  };
  positive(r.storage_gb_per_s(), "storage_gb_per_s");
  auto seconds = [&](double v, const char* field) {
    if (!(v >= 0) || !std::isfinite(v))
      throw ConfigError(source + ": reliability." + field + " must be finite seconds >= 0, not " +
                        number_text(v));
  };
  seconds(r.restart_s(), "restart_s");
  seconds(r.checkpoint_interval_s(), "checkpoint_interval_s");
  interruptions_of(r, {}, source);  // the rates, on one GPU in one server with one NIC
}

Goodput goodput_of(const clustersim::ReliabilityConfig& r, double bytes, const FleetCounts& counts,
                   const std::string& source) {
  validate_reliability(r, source);
  Goodput g;
  g.checkpoint_bytes = bytes;
  g.interruptions = interruptions_of(r, counts, source);
  g.mtbf_s = 86400.0 / g.interruptions.total_per_day;
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
