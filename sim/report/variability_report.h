// The variability section of a step report: what was modelled and how busy time spread.
#pragma once

#include <ostream>

#include "sim/report/json_writer.h"
#include "sim/report/step_report.h"

namespace cs::report {

// Writes "variability": {...} into the open object; nothing unless `v.enabled`.
void write_variability_json(JsonWriter& w, const VariabilityFigures& v);
// Table rows in print_table's layout; nothing unless `v.enabled`.
void print_variability(std::ostream& out, const VariabilityFigures& v);

}  // namespace cs::report
