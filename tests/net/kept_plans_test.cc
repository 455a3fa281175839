// The networks' plan store: plans kept within a room, the least recently used giving way first.
#include "sim/net/kept_plans.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <random>
#include <string>
#include <utility>

namespace cs::net {
namespace {

using Plans = KeptPlans<std::string>;

uint32_t keep(Plans& plans, uint64_t hash, std::string text, uint64_t pinned_from = ~uint64_t{0}) {
  const auto index = plans.keep(hash, text, text.size(), pinned_from);
  EXPECT_TRUE(index.has_value()) << text;
  return index.value_or(0);
}

bool same_as(const std::string& want, const std::string& plan) {
  return plan == want;
}

TEST(KeptPlans, FindsAPlanByItsHashAndItsEquality) {
  Plans plans(100);
  const uint32_t a = keep(plans, 7, "aaaa");
  const uint32_t b = keep(plans, 7, "bbbb");  // the same hash, another plan
  EXPECT_EQ(plans.find(7, [](const std::string& p) { return same_as("bbbb", p); }), b);
  EXPECT_EQ(plans.find(7, [](const std::string& p) { return same_as("aaaa", p); }), a);
  EXPECT_FALSE(plans.find(8, [](const std::string&) { return true; }).has_value());
  EXPECT_EQ(plans[a], "aaaa");
}

TEST(KeptPlans, TheLeastRecentlyUsedGivesWayAndItsPlaceChangesGeneration) {
  Plans plans(8);
  const uint32_t a = keep(plans, 1, "aaaa");
  const uint32_t a_generation = plans.generation(a);
  const uint32_t b = keep(plans, 2, "bbbb");
  ASSERT_NE(plans.at(a, a_generation), nullptr);  // a is now the more recent
  const uint32_t c = keep(plans, 3, "cccc");      // b gives way
  EXPECT_FALSE(plans.find(2, [](const std::string&) { return true; }).has_value());
  EXPECT_EQ(c, b);  // in b's place, of a new generation
  EXPECT_EQ(plans.at(b, plans.generation(b) - 1), nullptr);
  ASSERT_NE(plans.at(a, a_generation), nullptr);
  EXPECT_EQ(*plans.at(c, plans.generation(c)), "cccc");
}

TEST(KeptPlans, APlanLargerThanTheRoomIsNotKeptAndStaysTheCallers) {
  Plans plans(4);
  std::string big = "too large";
  EXPECT_FALSE(plans.keep(1, big, big.size()).has_value());
  EXPECT_EQ(big, "too large");
}

// A plan used since the mark is still read by its user and may not give way: the new one is
// refused rather than dropping it.
TEST(KeptPlans, PlansUsedSinceTheMarkArePinned) {
  Plans plans(8);
  const uint32_t a = keep(plans, 1, "aaaa");
  const uint64_t mark = plans.mark();
  ASSERT_NE(plans.at(a, plans.generation(a)), nullptr);
  keep(plans, 2, "bbbb", mark);
  std::string c = "cccc";
  EXPECT_FALSE(plans.keep(3, c, c.size(), mark).has_value());
  EXPECT_EQ(c, "cccc");
  EXPECT_EQ(*plans.at(a, plans.generation(a)), "aaaa");
  EXPECT_TRUE(plans.keep(3, c, c.size()).has_value());  // without the pin, a gives way
}

// Random uses and new plans against a plain list from least to most recently used.
TEST(KeptPlans, KeepsWhatAListOfUsesKeeps) {
  Plans plans(20);
  std::list<std::pair<uint64_t, std::size_t>> reference;  // (hash, entries), oldest first
  std::size_t held = 0;
  std::mt19937 rng(11);
  for (uint64_t hash = 1; hash <= 300; ++hash) {
    if (!reference.empty() && rng() % 2 == 0) {  // use a kept plan again
      auto it = reference.begin();
      std::advance(it, rng() % reference.size());
      const uint64_t again = it->first;
      ASSERT_TRUE(plans.find(again, [](const std::string&) { return true; }).has_value());
      reference.splice(reference.end(), reference, it);
    }
    const std::size_t entries = 1 + rng() % 5;
    while (held + entries > 20) {
      held -= reference.front().second;
      reference.pop_front();
    }
    keep(plans, hash, std::string(entries, 'x'));
    reference.emplace_back(hash, entries);
    held += entries;
    for (uint64_t h = 1; h <= hash; ++h) {
      const bool kept = std::any_of(reference.begin(), reference.end(),
                                    [&](const auto& r) { return r.first == h; });
      // find() marks what it finds as used: look only at what is gone, which it does not touch.
      if (!kept) {
        ASSERT_FALSE(plans.find(h, [](const std::string&) { return true; })) << h;
      }
    }
  }
}

}  // namespace
}  // namespace cs::net
