// The mixture-of-experts section of a step report: all-to-all time, expert load and memory.
#pragma once

#include <ostream>

#include "sim/report/json.h"
#include "sim/report/step_report.h"

namespace cs::report {

// The "moe" object of a report (written only when `m.enabled`).
Json moe_json(const MoeFigures& m);
// Table rows in print_table's layout; nothing unless `m.enabled`.
void print_moe(std::ostream& out, const MoeFigures& m);

}  // namespace cs::report
