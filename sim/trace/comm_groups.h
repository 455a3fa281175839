// Writes the communicator-groups file beside a Chakra trace (chakra_groups.h reads it back).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/trace/chakra_groups.h"

namespace cs::trace {

// Writes group i as pg_name "i", one group per line; throws TraceError if `path` cannot be
// written.
void write_comm_groups(const std::vector<std::vector<int32_t>>& groups, const std::string& path);

}  // namespace cs::trace
