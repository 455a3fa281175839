// The mixture-of-experts section of a step report: all-to-all time, expert load and memory.
#pragma once

#include <ostream>

#include "sim/report/json_writer.h"
#include "sim/report/step_report.h"

namespace cs::report {

// Writes "moe": {...} into the open object; nothing unless `m.enabled`.
void write_moe_json(JsonWriter& w, const MoeFigures& m);
// Table rows in print_table's layout; nothing unless `m.enabled`.
void print_moe(std::ostream& out, const MoeFigures& m);

}  // namespace cs::report
