#include "sim/config/field_checks.h"

#include <cmath>
#include <sstream>

#include "sim/config/config_error.h"

namespace cs {

namespace {
std::string num(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}
}  // namespace

void config_fail(const std::string& source, const std::string& what) {
  throw ConfigError(source + ": " + what);
}

// `!(v > 0)` rather than `v <= 0` so that NaN is rejected too.
void require_positive(double v, const std::string& source, const std::string& field) {
  if (!(v > 0) || !std::isfinite(v))
    config_fail(source, field + " must be > 0 (is " + num(v) + ")");
}

void require_non_negative(double v, const std::string& source, const std::string& field) {
  if (!(v >= 0) || !std::isfinite(v))
    config_fail(source, field + " must be >= 0 (is " + num(v) + ")");
}

void require_fraction(double v, const std::string& source, const std::string& field) {
  if (!(v > 0 && v <= 1)) config_fail(source, field + " must be in (0, 1] (is " + num(v) + ")");
}

}  // namespace cs
