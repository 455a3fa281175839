// Structural checks of programs before they run: indices in range, streams, dependency cycles.
#pragma once

#include <string>

#include "sim/workload/program.h"

namespace cs::trace {

// Throws TraceError "<where>: <reason>" if an index is out of range, an op is not on its own
// stream exactly once (dataflow programs: only compute ops are on a stream), or dependencies and
// stream order together form a cycle; a cycle is reported with the ops on it, by label; or the
// tables Op::varies indexes are malformed (check_varying).
void check_program(const workload::Program& program, const std::string& where);

}  // namespace cs::trace
