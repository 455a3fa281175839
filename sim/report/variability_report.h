// The variability section of a step report: what was modelled and how busy time spread.
#pragma once

#include <ostream>

#include "sim/report/json.h"
#include "sim/report/step_report.h"

namespace cs::report {

// The "variability" object of a report (written only when `v.enabled`).
Json variability_json(const VariabilityFigures& v);
// Table rows in print_table's layout; nothing unless `v.enabled`.
void print_variability(std::ostream& out, const VariabilityFigures& v);

}  // namespace cs::report
