// Extends a tiered fabric past the servers its tiers hold, the way vendor reference designs grow.
#pragma once

#include <cstdint>
#include <string>

#include "proto/topology.pb.h"

namespace cs::net {

// Servers the described tiers hold (product of group sizes), saturating far above anything
// buildable so that it cannot overflow.
int64_t described_capacity_servers(const clustersim::TieredTopology& t);

// Checks the growth fields and the port budgets of the described tiers; throws ConfigError
// "<source>: <field> <problem>".
void validate_growth(const clustersim::TieredTopology& t, const std::string& source);

// The tiers a run on `servers` servers is built with: the described ones when they hold it,
// otherwise grown as `t.growth()` says. Throws ConfigError naming the topology and the size
// when the fabric cannot grow to it (no growth, or a radix that cannot reach that far).
clustersim::TieredTopology grow_for_servers(const clustersim::TieredTopology& t, int64_t servers,
                                            const std::string& name);

}  // namespace cs::net
