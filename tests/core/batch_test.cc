// The batch runner sweep and plan share: every item once on any thread count, progress up to the
// total, the first failure rethrown, and the round-robin split over MPI ranks.
#include "sim/core/batch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace cs {
namespace {

TEST(Batch, RunsEveryItemOnceOnAnyThreadCount) {
  for (const int jobs : {0, 1, 3, 64}) {
    std::vector<std::atomic<int>> runs(50);
    std::vector<std::size_t> progress;
    run_batch(
        runs.size(), jobs, [&](std::size_t i) { ++runs[i]; },
        [&](std::size_t done, std::size_t total) {
          EXPECT_EQ(total, runs.size());
          progress.push_back(done);
        });
    for (const auto& r : runs) EXPECT_EQ(r.load(), 1) << jobs;
    ASSERT_EQ(progress.size(), runs.size());
    for (std::size_t i = 0; i < progress.size(); ++i) EXPECT_EQ(progress[i], i + 1);
  }
  run_batch(0, 4, [](std::size_t) { FAIL(); });
}

TEST(Batch, TheFirstFailureIsRethrownAndStopsTheRest) {
  std::atomic<int> ran{0};
  EXPECT_THROW(run_batch(1000, 1,
                         [&](std::size_t i) {
                           ++ran;
                           if (i == 3) throw std::runtime_error("item 3");
                         }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 4);  // one thread: nothing after the failing item is handed out
}

TEST(Batch, RanksShareTheItemsRoundRobin) {
  EXPECT_EQ(rank_share(7, 0, 3), (std::vector<std::size_t>{0, 3, 6}));
  EXPECT_EQ(rank_share(7, 2, 3), (std::vector<std::size_t>{2, 5}));
  EXPECT_EQ(rank_share(3, 0, 1), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_TRUE(rank_share(2, 3, 4).empty());
  EXPECT_EQ(gathered_lines({"a\nb\n", "", "c\nd"}), (std::vector<std::string>{"a", "b", "c", "d"}));
}

}  // namespace
}  // namespace cs
