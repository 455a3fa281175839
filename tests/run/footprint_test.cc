// The memory estimate that guards large runs: it grows with the ranks and routes of a layout.
#include "sim/run/footprint.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "sim/config/config_error.h"
#include "sim/core/simulator.h"
#include "sim/net/network_factory.h"
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

// gpt3-175b's 768 GPUs on a 200,000-GPU cluster reached 0.99 GB with memory_limit_gb = 1, and
// more on older builds, before any check: the cluster alone is now estimated before it is built.
TEST(Footprint, AClusterAboveTheLimitIsRefusedBeforeItIsBuilt) {
  try {
    refuse_cluster_if_too_big(250'000, 1, "x.textproto");
    ADD_FAILURE() << "250,000 GPUs at 5 KB each fit in 1 GB";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("x.textproto: a cluster of 250000 GPUs would need about", 0), 0u) << what;
    EXPECT_NE(what.find("of simulation.memory_limit_gb"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(refuse_cluster_if_too_big(100'000, 1, "x.textproto"));  // about 0.5 GB
}

// The estimate is an upper bound of what a built cluster holds: the largest per GPU of the
// presets, llama3-24k, built with its routing index and a flow network at 32,768 GPUs.
TEST(Footprint, TheClusterEstimateBoundsABuiltCluster) {
  const auto rss = [] {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;
    return 0.0;
  };
  const double before = rss();
  const auto desc = net::resolve_topology("llama3-24k");
  const net::Topology topology = net::build_topology(desc, 32768, "llama3-24k");
  net::Routing routing(topology);
  Simulator sim;
  const auto network =
      net::make_network(net::NetworkMode::kCongestionAware, sim, topology, routing);
  const double grown = rss() - before;
  EXPECT_GT(grown, 0.25 * 32768 * kClusterBytesPerGpu) << "the estimate is far too high";
  EXPECT_LT(grown, 32768 * kClusterBytesPerGpu);
}

}  // namespace
}  // namespace cs::run
