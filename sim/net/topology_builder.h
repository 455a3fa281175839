// Reads cluster descriptions (protobuf text format) and expands them into the topology graph.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "proto/topology.pb.h"
#include "sim/config/config_error.h"
#include "sim/net/topology.h"

namespace cs::net {

// Largest cluster we agree to build, so a typo in a group size fails fast instead of exhausting
// memory. 2^21 GPUs is ~85x the largest published training cluster we model.
inline constexpr int64_t kMaxBuildGpus = int64_t{1} << 21;

// Parses and validates a description. Throws ConfigError "<source>:<line>:<column>: <reason>" on
// syntax errors and "<source>: <field> <problem>" on values that make no sense.
clustersim::Topology load_topology_text(std::string_view text, const std::string& source_name);

// `preset_or_path` is an embedded preset name (a file stem under topologies/) or a file path.
// Throws ConfigError listing the preset names when it is neither.
clustersim::Topology resolve_topology(const std::string& preset_or_path);

// Throws ConfigError naming `source_name` and the field when `desc` is inconsistent.
void validate_topology(const clustersim::Topology& desc, const std::string& source_name);

// How many GPUs the description can hold (tiered: servers x GPUs per server; explicit: its GPUs).
int64_t topology_capacity_gpus(const clustersim::Topology& desc);

// Builds the graph for a run on `num_gpus` GPUs (<= 0: the whole cluster). The tiered form builds
// whole servers, ceil(num_gpus / gpus_per_node) of them, so num_gpus() may exceed the request by
// less than one server; the explicit form is built whole and only checked to be large enough.
// Throws ConfigError "topology X holds at most N GPUs, asked for M" when it does not fit.
Topology build_topology(const clustersim::Topology& desc, int32_t num_gpus,
                        const std::string& source_name);

}  // namespace cs::net
