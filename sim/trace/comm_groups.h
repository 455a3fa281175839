// The communicator-groups file beside a Chakra trace: JSON mapping each pg_name to its ranks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cs::trace {

// pg_name -> member ranks, in ring order.
using CommGroups = std::map<std::string, std::vector<int32_t>>;

// Parses a JSON object mapping each pg_name to its ranks: {"0": [0, 1], "tp": [2, 3]}. Throws
// TraceError naming `file`, the JSON pointer of the bad value (e.g. /tp/1) and the reason.
CommGroups parse_comm_groups(std::string_view json, const std::string& file);

// Writes group i as pg_name "i", one group per line; throws TraceError if `path` cannot be
// written.
void write_comm_groups(const std::vector<std::vector<int32_t>>& groups, const std::string& path);

}  // namespace cs::trace
