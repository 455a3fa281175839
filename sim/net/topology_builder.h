// Reads cluster descriptions (protobuf text format) and expands them into the topology graph.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proto/topology.pb.h"
#include "sim/config/config_error.h"
#include "sim/net/topology.h"

namespace cs::net {

// Largest cluster we agree to build, so a typo in a group size fails fast instead of exhausting
// memory. 2^20 GPUs is ~40x the largest published training cluster we model (Llama 3's 24K) and
// already about 5 GB of topology, routes and link state (run/footprint.h); twice that took over
// 100 s to build before any check could refuse it.
inline constexpr int64_t kMaxBuildGpus = int64_t{1} << 20;

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

// The GPUs to build for a job of `job_gpus` on a cluster of `cluster_gpus` (0: the job's size).
// Throws ConfigError "<source>: cluster.num_gpus ..." when the cluster is smaller than the job.
int32_t cluster_build_gpus(int64_t job_gpus, int64_t cluster_gpus, const std::string& source);

// Replaces `desc`'s load balancing by `override_lb` unless its mode is MODE_UNSET; checks it.
void override_load_balancing(clustersim::Topology& desc,
                             const clustersim::LoadBalancing& override_lb,
                             const std::string& source);

// GPUs a run uses in each node of a tiered description (gpus_used_per_node, else all); 0 for an
// explicit graph, whose servers need not be alike.
int32_t gpus_per_node_in_use(const clustersim::Topology& desc);

// Sets `desc`'s GPUs used per node to `gpus_per_node` (ClusterConfig.gpus_per_node) unless it is
// 0; throws ConfigError naming cluster.gpus_per_node when it is out of [0, gpus_per_node] or the
// description is explicit.
void override_gpus_per_node(clustersim::Topology& desc, int32_t gpus_per_node,
                            const std::string& source);

// The cables up from each switch of tier k - 1 to the switches of its parent group of tier k, as
// build_topology lays them: how many, and each one's rate (bytes per second).
struct TierUplinks {
  int32_t per_switch = 0;
  double bytes_per_s = 0;
};
// Per tier k >= 1 of `t` (element k - 1): its child switches' uplinks.
std::vector<TierUplinks> tier_uplinks(const clustersim::TieredTopology& t);

// Builds the graph for a run on `num_gpus` GPUs (<= 0: the whole cluster as its tiers describe it,
// before any growth). A tiered description grows as its `growth` says when its tiers are too
// small. The tiered form builds
// whole servers, ceil(num_gpus / gpus_per_node) of them, so num_gpus() may exceed the request by
// less than one server; the explicit form is built whole and only checked to be large enough.
// Throws ConfigError "topology X holds at most N GPUs, asked for M" when it does not fit.
// `fabric_gpus` > num_gpus builds only the first num_gpus of a cluster of that many: a tiered
// fabric grows its tiers as the whole cluster's, while only the servers in use and the switches
// that join them are built (a job's routes never climb past the tier that joins its servers).
Topology build_topology(const clustersim::Topology& desc, int32_t num_gpus,
                        const std::string& source_name, int64_t fabric_gpus = 0);

}  // namespace cs::net
