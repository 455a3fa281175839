// Checks of numeric fields in configuration files, failing with "<source>: <field> must be ...".
#pragma once

#include <cstdint>
#include <string>

namespace cs {

[[noreturn]] void config_fail(const std::string& source, const std::string& what);
// A number as an error message shows it: 6 significant digits ("1e+308", not 308 digits).
std::string number_text(double v);
// NaN and infinities fail every check.
void require_positive(double v, const std::string& source, const std::string& field);
void require_non_negative(double v, const std::string& source, const std::string& field);
// Efficiencies are fractions of a peak: above 1 would beat the hardware.
void require_fraction(double v, const std::string& source, const std::string& field);
// lo <= v <= hi, finite; `why` (may be empty) says where the bounds come from.
void require_range(double v, double lo, double hi, const std::string& source,
                   const std::string& field, const std::string& why = "");
void require_int_range(int64_t v, int64_t lo, int64_t hi, const std::string& source,
                       const std::string& field, const std::string& why = "");

// The most a server's memory, storage or bandwidth figure may be, in GB or GB/s: a petabyte (per
// second), far beyond any GPU or server, so that a typo fails instead of overflowing byte counts.
inline constexpr double kMaxServerGb = 1e6;

}  // namespace cs
