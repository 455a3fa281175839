// The text report's formatting: a printf-formatted number and a row of the label / value table.
#pragma once

#include <cstdio>
#include <ostream>
#include <string>

namespace cs::report {

inline std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// `v` with `digits` digits after the point ("%.*f").
inline std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// "  label" padded to 32 columns, then the value.
inline void row(std::ostream& out, const std::string& label, const std::string& value) {
  out << "  " << label << std::string(label.size() < 30 ? 30 - label.size() : 1, ' ') << value
      << '\n';
}

}  // namespace cs::report
