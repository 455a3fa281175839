// Process groups of a Chakra trace (pg_name -> member ranks): from a comm-groups JSON file or from
// the `## process_group:init ##` metadata node that PyTorch's execution-trace observer records.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/chakra_et.pb.h"

namespace cs::trace {

// pg_name -> member ranks, in ring order. An empty list means every rank of the trace, as
// PyTorch's pg_config writes a group that spans the world.
using CommGroups = std::map<std::string, std::vector<int32_t>>;

// Parses either form: an object {"pg_name": [ranks], ...} (ASTRA-sim's comm-group configuration,
// what `convert --to-chakra` writes) or PyTorch's pg_config list
// [{"pg_name": "0", "ranks": [0, 1], "group_size": 2, ...}, ...]. Throws TraceError naming `file`,
// the group and the reason.
CommGroups parse_comm_groups(std::string_view json, const std::string& file);

// The groups a rank's trace records: the pg_config JSON in inputs.values of its METADATA_NODE
// named "## process_group:init ##", held as a JSON string, inside the Python list repr the
// converter writes (['[{...}]']), or as the list itself. nullopt when the rank has no such node;
// TraceError naming `file`, the rank and the node when its text is not a pg_config.
std::optional<CommGroups> metadata_comm_groups(const std::vector<ChakraProtoMsg::Node>& nodes,
                                               const std::string& file, int32_t rank);

// Adds `more` (read from `source`) to `into`; a pg_name listed twice with other ranks is an error.
void merge_comm_groups(CommGroups& into, const CommGroups& more, const std::string& source);

}  // namespace cs::trace
