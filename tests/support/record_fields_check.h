// Fills every figure of a record's field table with a value that is hard to print exactly, and
// compares two records figure by figure, bit for bit: the round-trip checks of every table.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <variant>

#include "sim/report/record_fields.h"

namespace cs::testing_support {

// The k-th awkward double: non-terminating binary fractions, a denormal, -0, huge and tiny.
inline double awkward(std::size_t k) {
  const double values[] = {0.1 + 0.2,     1.0 / 3.0, std::numeric_limits<double>::denorm_min(),
                           -0.0,          1e300,     79.99999999999999,
                           123456.789e-9, 2.0 / 7.0};
  return values[k % std::size(values)] * static_cast<double>(1 + k / std::size(values));
}

// Gives every figure of `r` named by `table` a distinct awkward value (texts hold the wire's
// separators), so that a figure left out of a round trip, or moved, cannot go unseen.
template <typename Record>
void fill_every_field(std::span<const report::Field<Record>> table, Record& r) {
  std::size_t k = 0;
  for (const auto& f : table) {
    const report::FieldRef at = f.at(r);
    for (std::size_t p = 0; p < report::part_count(f.parts); ++p, ++k) {
      if (auto* d = std::get_if<double*>(&at)) (*d)[report::part_slot(f.parts, p)] = awkward(k);
      if (auto* i = std::get_if<int32_t*>(&at)) **i = static_cast<int32_t>(1000 * k + 7);
      if (auto* b = std::get_if<bool*>(&at)) **b = k % 2 == 0;
      if (auto* s = std::get_if<std::string*>(&at))
        **s = "field " + std::to_string(k) + ":\ttab, \"quote\", back\\slash\nline";
    }
  }
}

// The first figure of `table` where `a` and `b` differ (bit for bit), or "" when none does.
template <typename Record>
std::string first_difference(std::span<const report::Field<Record>> table, Record& a, Record& b) {
  for (const auto& f : table) {
    const report::FieldRef x = f.at(a), y = f.at(b);
    for (std::size_t p = 0; p < report::part_count(f.parts); ++p) {
      bool same = true;
      if (auto* d = std::get_if<double*>(&x)) {
        const std::size_t slot = report::part_slot(f.parts, p);
        same = std::bit_cast<uint64_t>((*d)[slot]) ==
               std::bit_cast<uint64_t>(std::get<double*>(y)[slot]);
      }
      if (auto* i = std::get_if<int32_t*>(&x)) same = **i == *std::get<int32_t*>(y);
      if (auto* v = std::get_if<bool*>(&x)) same = **v == *std::get<bool*>(y);
      if (auto* s = std::get_if<std::string*>(&x)) same = **s == *std::get<std::string*>(y);
      if (!same) return std::string(f.key) + " part " + std::to_string(p);
    }
  }
  return "";
}

}  // namespace cs::testing_support
