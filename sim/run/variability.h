// RunConfig.variability into the models: checked, as the executor's compute model and as
// degraded topology links, and summed up in the report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/config.pb.h"
#include "sim/exec/executor.h"
#include "sim/exec/variability.h"
#include "sim/net/topology.h"
#include "sim/report/step_report.h"
#include "sim/workload/layout.h"

namespace cs::run {

// Throws ConfigError "<source>: variability.<field> ..." for a value that makes no sense: a
// speed or factor not positive or above its bound, a rank outside [0, world) or named twice, a
// fraction outside [0, 1], a list of factors whose length matches neither its list nor 1.
// Link names are checked against the topology by degrade_links.
void validate_variability(const clustersim::VariabilityConfig& v, int32_t world,
                          const std::string& source);

// The compute model of a `world`-rank run; none when enabled is false or no GPU speed or
// kernel jitter is set.
std::optional<exec::ComputeVariability> compute_variability(const clustersim::VariabilityConfig& v,
                                                            int32_t world);

// What degrade_links changed.
struct DegradedLinks {
  int32_t links = 0;            // directed links below nominal bandwidth
  bool inside_servers = false;  // some of them are NVLink or PCIe links
};

// Scales the bandwidth of every named, randomly chosen and slow-NIC link of `topology` (factors
// multiply where they overlap); nothing when enabled is false. Throws ConfigError naming
// variability.links.names[i] and why for a name that matches no link.
DegradedLinks degrade_links(net::Topology& topology, const clustersim::VariabilityConfig& v,
                            const std::string& source);

// Per-rank busy time spread, the ranks ending the step and each stage's busiest rank.
report::VariabilityFigures variability_figures(const std::vector<exec::RankStats>& stats,
                                               const workload::Layout& layout, Time step_end,
                                               const exec::ComputeVariability* compute,
                                               int32_t degraded_links);

}  // namespace cs::run
