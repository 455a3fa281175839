// Checks of numeric fields in configuration files, failing with "<source>: <field> must be ...".
#pragma once

#include <string>

namespace cs {

[[noreturn]] void config_fail(const std::string& source, const std::string& what);
// NaN and infinities fail every check.
void require_positive(double v, const std::string& source, const std::string& field);
void require_non_negative(double v, const std::string& source, const std::string& field);
// Efficiencies are fractions of a peak: above 1 would beat the hardware.
void require_fraction(double v, const std::string& source, const std::string& field);

}  // namespace cs
