// The max-min solver alone: hand-worked allocations, and a brute-force reference over random ones.
#include "sim/net/max_min.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace cs::net {
// Named, not anonymous: the test binary is a unity build (see blackwell_topology_test.cc).
namespace max_min_test {

// A flow as the tests describe it: its links and the weight it puts on each.
struct FlowSpec {
  std::vector<LinkId> links;
  std::vector<double> weights;
};

FlowSpec on(std::vector<LinkId> links) {
  return {links, std::vector<double>(links.size(), 1.0)};
}

// Textbook progressive filling, written for clarity, not speed: while a flow is unfrozen, find
// the link whose residual capacity split over the weights of its unfrozen flows is smallest,
// freeze those flows at that share, and charge each frozen flow's rate x weight to all its links.
std::vector<double> reference_rates(const std::vector<double>& capacity,
                                    const std::vector<FlowSpec>& flows) {
  std::vector<double> rate(flows.size(), -1);  // -1: not frozen yet
  std::vector<double> residual = capacity;
  while (std::any_of(rate.begin(), rate.end(), [](double r) { return r < 0; })) {
    std::size_t best = capacity.size();
    double best_share = std::numeric_limits<double>::infinity();
    for (std::size_t l = 0; l < capacity.size(); ++l) {
      double weight = 0;
      for (std::size_t f = 0; f < flows.size(); ++f)
        for (std::size_t h = 0; h < flows[f].links.size(); ++h)
          if (rate[f] < 0 && flows[f].links[h] == l) weight += flows[f].weights[h];
      if (weight == 0) continue;
      const double share = std::max(residual[l], 0.0) / weight;
      if (share < best_share) {
        best_share = share;
        best = l;
      }
    }
    for (std::size_t f = 0; f < flows.size(); ++f) {
      const auto& links = flows[f].links;
      if (rate[f] >= 0 || std::find(links.begin(), links.end(), best) == links.end()) continue;
      rate[f] = best_share;
      for (std::size_t h = 0; h < links.size(); ++h)
        residual[links[h]] -= best_share * flows[f].weights[h];
    }
  }
  return rate;
}

// A solver holding `capacity` as links 0, 1, ... and `flows` (ids in the returned order).
struct Instance {
  MaxMin solver;
  std::vector<MaxMin::FlowId> ids;
  Instance(const std::vector<double>& capacity, const std::vector<FlowSpec>& flows,
           bool incremental = true) {
    solver.set_incremental(incremental);
    for (double c : capacity) solver.add_link(c);
    for (const FlowSpec& f : flows) ids.push_back(solver.add_flow(f.links, f.weights));
    solver.solve();
  }
  double rate(std::size_t i) const { return solver.rate(ids[i]); }
};

// Equal within 1e-9 relative; near zero, within 1e-12 of `scale` (the largest capacity), for rates
// that are zero in exact arithmetic and a rounding residue in floating point.
bool near(double a, double b, double scale) {
  return std::abs(a - b) <= 1e-9 * std::max({std::abs(a), std::abs(b), scale * 1e-3});
}

void expect_rates(const Instance& got, const std::vector<double>& want) {
  ASSERT_EQ(got.ids.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.rate(i), want[i], 1e-9 * std::max(1.0, want[i])) << "flow " << i;
}

TEST(MaxMin, FlowsOnOneLinkSplitItEvenly) {
  // c = 10 over three flows: 10 / 3 each.
  expect_rates(Instance({10}, {on({0}), on({0}), on({0})}), {10.0 / 3, 10.0 / 3, 10.0 / 3});
}

TEST(MaxMin, TheTextbookExampleGivesTheRestToTheUnconstrainedFlow) {
  // A on link 0 (c = 10), B on links 0 and 1, C on link 1 (c = 30). Link 0's share, 10 / 2 = 5,
  // is the smallest: A = B = 5. Link 1 then has 30 - 5 = 25 left for C alone (not 30 / 2 = 15).
  expect_rates(Instance({10, 30}, {on({0}), on({0, 1}), on({1})}), {5, 5, 25});
}

TEST(MaxMin, AWeightedFlowTakesItsWeightOfTheLink) {
  // Weights 2 and 1 on c = 12: the share is 12 / (2 + 1) = 4 per unit of weight, so both flows
  // run at 4 while the first puts 8 on the link and the second 4.
  expect_rates(Instance({12}, {{{0}, {2.0}}, on({0})}), {4, 4});
}

TEST(MaxMin, TheParkingLotGivesTheLongFlowAsMuchAsEachShortOne) {
  // Links 0, 1, 2 of c = 1; the long flow crosses all three, one short flow each: every link
  // splits 1 / 2, so all four flows run at 0.5.
  expect_rates(Instance({1, 1, 1}, {on({0, 1, 2}), on({0}), on({1}), on({2})}),
               {0.5, 0.5, 0.5, 0.5});
}

TEST(MaxMin, TheSlowLinkFreezesFirstAndTheRestSplitWhatIsLeft) {
  // Link 0 (c = 1) holds A and B: 0.5 each. Link 1 (c = 10) holds B, C and D: B's 0.5 leaves
  // 9.5 for C and D, 4.75 each.
  expect_rates(Instance({1, 10}, {on({0}), on({0, 1}), on({1}), on({1})}), {0.5, 0.5, 4.75, 4.75});
}

TEST(MaxMin, ASpreadFlowCountsItsShareOnEachLink) {
  // S puts half its rate on each of links 0 and 1 (c = 1 each); X crosses link 0. Link 0's share
  // is 1 / (0.5 + 1) = 2/3, link 1's 1 / 0.5 = 2: S = X = 2/3, and link 1 carries only 1/3.
  expect_rates(Instance({1, 1}, {{{0, 1}, {0.5, 0.5}}, on({0})}), {2.0 / 3, 2.0 / 3});
}

TEST(MaxMin, ALinkOfNoCapacityStopsOnlyItsOwnFlows) {
  // A crosses link 0 (c = 0) and link 1 (c = 10), B only link 1: A = 0, so B has all 10.
  expect_rates(Instance({0, 10}, {on({0, 1}), on({1})}), {0, 10});
}

TEST(MaxMin, BothFormsAgreeOnTheHandWorkedCases) {
  // The whole-component form on the textbook example.
  expect_rates(Instance({10, 30}, {on({0}), on({0, 1}), on({1})}, false), {5, 5, 25});
}

TEST(MaxMin, RefusesFlowsWithoutLinksOrWithoutPositiveWeights) {
  MaxMin solver;
  solver.add_link(1);
  const std::vector<LinkId> none, one{0};
  const std::vector<double> zero{0.0}, negative{-1.0}, unit{1.0};
  EXPECT_THROW(solver.add_flow(none, unit), std::invalid_argument);
  EXPECT_THROW(solver.add_flow(one, zero), std::invalid_argument);
  EXPECT_THROW(solver.add_flow(one, negative), std::invalid_argument);
  EXPECT_THROW(solver.add_flow(one, std::vector<double>{}), std::invalid_argument);
  EXPECT_EQ(solver.num_flows(), 0u);
  solver.add_flow(one, unit);
  EXPECT_THROW(solver.set_capacity(0, 2), std::logic_error);
}

// A random instance: up to 8 links (some of equal capacity, some of none, so that ties and
// starved flows occur), up to 14 flows of 1 to 4 distinct links, unit or random weights.
struct RandomInstance {
  std::vector<double> capacity;
  std::vector<FlowSpec> flows;
  double scale = 0;  // the largest capacity
};

FlowSpec random_flow(std::mt19937_64& rng, std::size_t links, bool weighted) {
  std::vector<LinkId> all(links);
  for (LinkId l = 0; l < links; ++l) all[l] = l;
  std::shuffle(all.begin(), all.end(), rng);
  const std::size_t hops = 1 + rng() % std::min<std::size_t>(links, 4);
  FlowSpec f;
  f.links.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(hops));
  std::uniform_real_distribution<double> weight(0.1, 2.0);
  for (std::size_t h = 0; h < hops; ++h) f.weights.push_back(weighted ? weight(rng) : 1.0);
  return f;
}

RandomInstance random_instance(uint64_t seed) {
  std::mt19937_64 rng(seed);
  RandomInstance r;
  const std::size_t links = 1 + rng() % 8;
  const double levels[] = {0.0, 1.0, 2.5, 10.0, 40.0, 100.0};
  for (std::size_t l = 0; l < links; ++l) {
    // One link in 20 has no capacity; half the others take a round level, so some tie.
    const double c = rng() % 20 == 0 ? 0.0
                     : rng() % 2     ? levels[1 + rng() % 5]
                                     : std::uniform_real_distribution<double>(0.5, 100)(rng);
    r.capacity.push_back(c);
    r.scale = std::max(r.scale, c);
  }
  const std::size_t flows = 1 + rng() % 14;
  const bool weighted = rng() % 2 == 0;
  for (std::size_t f = 0; f < flows; ++f) r.flows.push_back(random_flow(rng, links, weighted));
  return r;
}

TEST(MaxMin, MatchesTheReferenceOnRandomInstances) {
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const RandomInstance r = random_instance(seed);
    const std::vector<double> want = reference_rates(r.capacity, r.flows);
    for (bool incremental : {true, false}) {
      const Instance got(r.capacity, r.flows, incremental);
      for (std::size_t i = 0; i < want.size(); ++i)
        ASSERT_TRUE(near(got.rate(i), want[i], r.scale))
            << "seed " << seed << (incremental ? " incremental" : " whole") << " flow " << i << ": "
            << got.rate(i) << " vs " << want[i];
    }
  }
}

// Adds and removes flows of a random instance one change at a time (or a few between solves),
// and after every solve compares each flow's rate with the reference and with a fresh solver
// given only the flows present.
void run_incremental(uint64_t seed, bool incremental, std::size_t batch) {
  std::mt19937_64 rng(seed);
  const RandomInstance r = random_instance(seed);
  MaxMin solver;
  solver.set_incremental(incremental);
  for (double c : r.capacity) solver.add_link(c);
  std::vector<FlowSpec> present;
  std::vector<MaxMin::FlowId> ids;
  for (int step = 0; step < 60; ++step) {
    for (std::size_t k = 0; k < batch; ++k) {
      if (!present.empty() && rng() % 3 == 0) {
        const std::size_t i = rng() % present.size();
        solver.remove_flow(ids[i]);
        present.erase(present.begin() + static_cast<std::ptrdiff_t>(i));
        ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        present.push_back(random_flow(rng, r.capacity.size(), rng() % 2 == 0));
        ids.push_back(solver.add_flow(present.back().links, present.back().weights));
      }
    }
    solver.solve();
    ASSERT_EQ(solver.num_flows(), present.size());
    const std::vector<double> want = reference_rates(r.capacity, present);
    const Instance fresh(r.capacity, present, incremental);
    for (std::size_t i = 0; i < present.size(); ++i) {
      ASSERT_TRUE(near(solver.rate(ids[i]), want[i], r.scale))
          << "seed " << seed << " step " << step << " flow " << i << ": " << solver.rate(ids[i])
          << " vs reference " << want[i];
      ASSERT_TRUE(near(solver.rate(ids[i]), fresh.rate(i), r.scale))
          << "seed " << seed << " step " << step << " flow " << i << ": " << solver.rate(ids[i])
          << " vs fresh " << fresh.rate(i);
    }
  }
}

TEST(MaxMin, IncrementalChangesOneAtATimeMatchAFreshSolve) {
  for (uint64_t seed = 1; seed <= 150; ++seed) run_incremental(seed, true, 1);
}

TEST(MaxMin, BatchedChangesMatchAFreshSolve) {
  for (uint64_t seed = 1000; seed <= 1100; ++seed) run_incremental(seed, true, 3);
}

TEST(MaxMin, WholeComponentSolvesMatchAFreshSolve) {
  for (uint64_t seed = 2000; seed <= 2050; ++seed) run_incremental(seed, false, 2);
}

// As run_incremental (against the reference only), where each new flow also crosses up to three
// links of its own, most as tight as its tightest shared link (as a flow standing for alike
// connections does); some flows then share one of them with a later flow of one hop.
TEST(MaxMin, FlowsWithLinksOfTheirOwnMatchTheReference) {
  for (uint64_t seed = 3000; seed <= 3100; ++seed) {
    std::mt19937_64 rng(seed);
    RandomInstance r = random_instance(seed);
    MaxMin solver;
    for (double c : r.capacity) solver.add_link(c);
    std::vector<FlowSpec> present;
    std::vector<MaxMin::FlowId> ids;
    for (int step = 0; step < 40; ++step) {
      if (!present.empty() && rng() % 3 == 0) {
        const std::size_t i = rng() % present.size();
        solver.remove_flow(ids[i]);
        present.erase(present.begin() + static_cast<std::ptrdiff_t>(i));
        ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (!present.empty() && rng() % 4 == 0) {
        // A one-hop flow onto the last link of a flow present.
        const FlowSpec& other = present[rng() % present.size()];
        present.push_back(on({other.links.back()}));
      } else {
        FlowSpec f = random_flow(rng, r.capacity.size(), rng() % 2 == 0);
        double tightest = std::numeric_limits<double>::infinity();
        for (std::size_t h = 0; h < f.links.size(); ++h)
          tightest = std::min(tightest, r.capacity[f.links[h]] / f.weights[h]);
        for (std::size_t extra = rng() % 4; extra > 0; --extra) {
          const double weight = f.weights.front();
          const double c = rng() % 4 != 0 ? tightest * weight : 100.0 * (rng() % 3);
          f.links.push_back(solver.add_link(c));
          f.weights.push_back(weight);
          r.capacity.push_back(c);
          r.scale = std::max(r.scale, c);
        }
        present.push_back(f);
      }
      if (ids.size() < present.size())
        ids.push_back(solver.add_flow(present.back().links, present.back().weights));
      solver.solve();
      const std::vector<double> want = reference_rates(r.capacity, present);
      for (std::size_t i = 0; i < present.size(); ++i)
        ASSERT_TRUE(near(solver.rate(ids[i]), want[i], r.scale))
            << "seed " << seed << " step " << step << " flow " << i << ": " << solver.rate(ids[i])
            << " vs reference " << want[i];
    }
  }
}

TEST(MaxMin, ASolveReportsOnlyTheFlowsWhoseRateMoved) {
  MaxMin solver;
  solver.add_link(10);
  solver.add_link(6);
  const std::vector<LinkId> first{0}, second{1};
  const std::vector<double> unit{1.0};
  const MaxMin::FlowId a = solver.add_flow(first, unit);
  const MaxMin::FlowId b = solver.add_flow(second, unit);
  solver.solve();
  EXPECT_EQ(solver.changed(), (std::vector<MaxMin::FlowId>{a, b}));
  // A second flow on link 1 halves b and leaves a alone.
  const MaxMin::FlowId c = solver.add_flow(second, unit);
  solver.solve();
  EXPECT_EQ(solver.changed(), (std::vector<MaxMin::FlowId>{b, c}));
  EXPECT_DOUBLE_EQ(solver.rate(a), 10);
  EXPECT_DOUBLE_EQ(solver.rate(b), 3);
  // Nothing changed: nothing to solve, nothing moves.
  solver.solve();
  EXPECT_TRUE(solver.changed().empty());
}

TEST(MaxMin, AFlowItsOwnerFindsDoneLeavesAndFreesItsShare) {
  // b is done as the solve takes it in: it leaves, and c has link 1 to itself.
  struct DoneOnce final : MaxMin::Progress {
    MaxMin::FlowId which;
    std::vector<MaxMin::FlowId> asked;
    bool done(MaxMin::FlowId f) override {
      asked.push_back(f);
      return f == which;
    }
  };
  MaxMin solver;
  solver.add_link(10);
  solver.add_link(6);
  const std::vector<LinkId> first{0}, second{1};
  const std::vector<double> unit{1.0};
  solver.add_flow(first, unit);
  const MaxMin::FlowId b = solver.add_flow(second, unit);
  solver.solve();
  const MaxMin::FlowId c = solver.add_flow(second, unit);
  DoneOnce progress;
  progress.which = b;
  solver.solve(progress);
  EXPECT_EQ(solver.finished(), (std::vector<MaxMin::FlowId>{b}));
  EXPECT_FALSE(solver.has_flow(b));
  EXPECT_EQ(solver.num_flows(), 2u);
  EXPECT_DOUBLE_EQ(solver.rate(c), 6);
  EXPECT_TRUE(std::find(progress.asked.begin(), progress.asked.end(), c) != progress.asked.end());
  // The freed id is the next one given.
  EXPECT_EQ(solver.next_flow_id(), b);
}

TEST(MaxMin, ALinkOfOneFlowLimitsItOnlyIfItIsItsTightest) {
  // A flow standing for many alike connections crosses many links of one capacity that nothing
  // else crosses: its first tightest link bounds it, so a solve fills that one alone. Once a
  // second flow joins one of the others, that link is shared, and it binds.
  MaxMin solver;
  std::vector<LinkId> alike;
  for (int i = 0; i < 100; ++i) alike.push_back(solver.add_link(10));
  const std::vector<double> unit(alike.size(), 1.0);
  const MaxMin::FlowId a = solver.add_flow(alike, unit);
  solver.solve();
  EXPECT_DOUBLE_EQ(solver.rate(a), 10);
  EXPECT_EQ(solver.filled_links(), 1u);
  const std::vector<LinkId> one{alike[57]};
  const MaxMin::FlowId b = solver.add_flow(one, unit);
  solver.solve();
  EXPECT_DOUBLE_EQ(solver.rate(a), 5);
  EXPECT_DOUBLE_EQ(solver.rate(b), 5);
  // b leaves: link 57 is a's alone again, and a has its 10 back.
  solver.remove_flow(b);
  solver.solve();
  EXPECT_DOUBLE_EQ(solver.rate(a), 10);
}

}  // namespace max_min_test
}  // namespace cs::net
