// Running with progress reports handles the same events in the same order as a plain run.
#include "sim/core/progress.h"

#include <gtest/gtest.h>

#include <vector>

namespace cs {
namespace {

// A chain of `n` events, each scheduling the next 1 ns later, recording its index.
void chain(Simulator& sim, std::vector<int>& order, int i, int n) {
  order.push_back(i);
  if (i + 1 < n)
    sim.schedule_in(Time::ns(1), [&sim, &order, i, n] { chain(sim, order, i + 1, n); });
}

TEST(Progress, SameEventsSameOrderAsRun) {
  constexpr int kEvents = 20'000;  // several batches
  Simulator plain, reported;
  std::vector<int> a, b;
  plain.schedule_in(Time{}, [&] { chain(plain, a, 0, kEvents); });
  reported.schedule_in(Time{}, [&] { chain(reported, b, 0, kEvents); });
  plain.run();
  int reports = 0, done = 0;
  SimProgress last;
  // every_s = 0: a report after every batch.
  const uint64_t handled = run_with_progress(
      reported, [&] { return static_cast<double>(b.size()) / kEvents; },
      [&](const SimProgress& p) {
        ++reports;
        done += p.done;
        EXPECT_GE(p.fraction, last.fraction);
        EXPECT_GE(p.simulated, last.simulated);
        last = p;
      },
      0.0);
  EXPECT_EQ(a, b);
  EXPECT_EQ(handled, static_cast<uint64_t>(kEvents));
  EXPECT_EQ(reported.now(), plain.now());
  EXPECT_EQ(done, 1);
  EXPECT_GT(reports, 2);
  EXPECT_TRUE(last.done);
  EXPECT_DOUBLE_EQ(last.fraction, 1.0);
  EXPECT_EQ(last.events, static_cast<uint64_t>(kEvents));
}

TEST(Progress, WithoutAReportItIsAPlainRun) {
  Simulator sim;
  std::vector<int> order;
  sim.schedule_in(Time{}, [&] { chain(sim, order, 0, 10); });
  EXPECT_EQ(run_with_progress(sim, {}, {}), 10u);
  EXPECT_EQ(order.size(), 10u);
}

}  // namespace
}  // namespace cs
