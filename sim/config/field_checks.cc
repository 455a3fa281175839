#include "sim/config/field_checks.h"

#include <cmath>
#include <sstream>

#include "sim/config/config_error.h"

namespace cs {

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void config_fail(const std::string& source, const std::string& what) {
  throw ConfigError(source + ": " + what);
}

// `!(v > 0)` rather than `v <= 0` so that NaN is rejected too.
void require_positive(double v, const std::string& source, const std::string& field) {
  if (!(v > 0) || !std::isfinite(v))
    config_fail(source, field + " must be > 0 (is " + number_text(v) + ")");
}

void require_non_negative(double v, const std::string& source, const std::string& field) {
  if (!(v >= 0) || !std::isfinite(v))
    config_fail(source, field + " must be >= 0 (is " + number_text(v) + ")");
}

void require_fraction(double v, const std::string& source, const std::string& field) {
  if (!(v > 0 && v <= 1))
    config_fail(source, field + " must be in (0, 1] (is " + number_text(v) + ")");
}

void require_range(double v, double lo, double hi, const std::string& source,
                   const std::string& field, const std::string& why) {
  if (!(v >= lo && v <= hi))
    config_fail(source, field + " must be in [" + number_text(lo) + ", " + number_text(hi) +
                            "] (is " + number_text(v) + ")" + (why.empty() ? "" : ": " + why));
}

void require_int_range(int64_t v, int64_t lo, int64_t hi, const std::string& source,
                       const std::string& field, const std::string& why) {
  if (v < lo || v > hi)
    config_fail(source, field + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                            "] (is " + std::to_string(v) + ")" + (why.empty() ? "" : ": " + why));
}

}  // namespace cs
