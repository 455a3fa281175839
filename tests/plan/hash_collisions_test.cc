// The expected busiest of hashed links against counting balls thrown into bins.
#include "sim/plan/hash_collisions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

namespace cs::plan {
namespace {

// The busiest of `watched` links, each loaded by `flows` flows hashed over `links`, averaged
// over `trials` throws, over the mean load.
double thrown(int64_t flows, int64_t links, int64_t watched, int trials) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> pick(0, links - 1);
  double sum = 0;
  std::vector<int64_t> load(static_cast<std::size_t>(links));
  for (int t = 0; t < trials; ++t) {
    int64_t busiest = 0;
    // Independent groups of `links` links until `watched` have been seen.
    for (int64_t seen = 0; seen < watched; seen += links) {
      std::fill(load.begin(), load.end(), 0);
      for (int64_t f = 0; f < flows; ++f) ++load[static_cast<std::size_t>(pick(rng))];
      const auto n = static_cast<std::ptrdiff_t>(std::min(links, watched - seen));
      busiest = std::max(busiest, *std::max_element(load.begin(), load.begin() + n));
    }
    sum += static_cast<double>(busiest);
  }
  return sum / trials / (static_cast<double>(flows) / static_cast<double>(links));
}

TEST(HashCollisions, OneLinkOrOneWatchedIsTheMean) {
  EXPECT_EQ(hashed_busiest_link_factor(256, 1, 1000), 1);
  EXPECT_EQ(hashed_busiest_link_factor(256, 16, 1), 1);
  EXPECT_EQ(hashed_busiest_link_factor(0, 16, 1000), 1);
}

TEST(HashCollisions, MatchesBallsThrownIntoBins) {
  // A rack's 16 NICs, 16 flows each, over its 16 links up; one flow each (static ECMP); a pod's
  // links up (12 flows a link, the ring's sixteenth of 3,072 GPUs' connections).
  for (const auto& [flows, links, watched] :
       {std::tuple<int64_t, int64_t, int64_t>{256, 16, 1024}, {16, 16, 512}, {3072, 256, 2048}}) {
    const double expected = hashed_busiest_link_factor(flows, links, watched);
    const double counted = thrown(flows, links, watched, 400);
    EXPECT_NEAR(expected / counted, 1, 0.02) << flows << " over " << links << ", " << watched;
  }
}

TEST(HashCollisions, GrowsWithTheLinksWatchedAndFallsWithTheFlowsPerLink) {
  const double base = hashed_busiest_link_factor(256, 16, 1024);
  EXPECT_GT(hashed_busiest_link_factor(256, 16, 16384), base);
  EXPECT_LT(hashed_busiest_link_factor(4096, 16, 1024), base);
  EXPECT_GT(hashed_busiest_link_factor(16, 16, 1024), base);
  // The header's figure: 256 flows over 16 links, 16,384 watched.
  EXPECT_NEAR(hashed_busiest_link_factor(256, 16, 16384), 2.08, 0.01);
}

}  // namespace
}  // namespace cs::plan
