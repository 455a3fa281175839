// The memory estimate that guards large runs: it grows with the ranks and routes of a layout.
#include "sim/run/footprint.h"

#include <gtest/gtest.h>

#include "sim/config/config_error.h"
#include "sim/net/topology_builder.h"

namespace cs::run {
namespace {

Footprint footprint_of(int32_t dp) {
  const workload::Layout layout(8, 1, 4, dp);
  const auto desc = net::resolve_topology("llama3-24k");
  const net::Topology topology = net::build_topology(desc, layout.world(), "llama3-24k");
  net::Routing routing(topology);
  workload::Program program;
  program.ops.resize(1000);
  return estimate_footprint(topology, routing, layout, {4, program});
}

TEST(Footprint, GrowsWithTheRanksAndTheirRoutes) {
  const Footprint small = footprint_of(4), large = footprint_of(64);
  EXPECT_GT(small.rank_bytes, 0);
  EXPECT_GT(small.pair_bytes, 0);
  EXPECT_GT(small.link_bytes, 0);
  // 16 times the ranks: 16 times their state and about as many more routes.
  EXPECT_DOUBLE_EQ(large.rank_bytes, 16 * small.rank_bytes);
  EXPECT_GT(large.pair_bytes, 8 * small.pair_bytes);
  EXPECT_GT(large.link_bytes, small.link_bytes);
}

TEST(Footprint, TheLimitIsTheFieldOrThisMachine) {
  EXPECT_DOUBLE_EQ(memory_limit_bytes(2, 0), 2.0 * 1024 * 1024 * 1024);
  EXPECT_GT(memory_limit_bytes(0, 0), 0);  // /proc/meminfo on Linux
  Footprint f;
  f.rank_bytes = 3.0 * 1024 * 1024 * 1024;
  EXPECT_THROW(refuse_if_too_big(f, 2, "x.textproto"), ConfigError);
  EXPECT_NO_THROW(refuse_if_too_big(f, 4, "x.textproto"));
}

}  // namespace
}  // namespace cs::run
