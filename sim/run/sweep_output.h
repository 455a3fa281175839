// A sweep's rows as CSV, JSON and a terminal table; all three list points in point order.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "sim/run/sweep.h"

namespace cs::run {

// Rows that ran, one CSV line each: the varied fields, then the headline figures. Numbers print
// in shortest round-trip form, so equal rows give equal bytes.
void write_sweep_csv(std::ostream& out, const std::vector<SweepAxis>& axes,
                     const std::vector<SweepRow>& rows);

// {"source", "axes", "points": [rows that ran], "skipped": [rows with their error]}.
void write_sweep_json(std::ostream& out, const std::string& source,
                      const std::vector<SweepAxis>& axes, const std::vector<SweepRow>& rows);

// Aligned columns for a terminal, then one line per skipped point with its reason.
void print_sweep_table(std::ostream& out, const std::vector<SweepAxis>& axes,
                       const std::vector<SweepRow>& rows);

}  // namespace cs::run
