// The validation results as a Markdown table (what `clustersim validate` prints and
// results/validation.md keeps) and as JSON.
#pragma once

#include <ostream>
#include <vector>

#include "sim/validation/validate.h"

namespace cs::validation {

// A one-line summary, the table (case, kind, model, published, unit, error %, tolerance %,
// result, source), then the skipped cases with the reason for each.
void write_table(std::ostream& out, const std::vector<CaseResult>& results);
void write_json(std::ostream& out, const std::vector<CaseResult>& results);

}  // namespace cs::validation
