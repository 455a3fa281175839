#include "sim/core/event_queue.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

#include "sim/core/simulator.h"

namespace cs {
namespace {

TEST(Time, UnitHelpersAgree) {
  EXPECT_EQ(Time::us(3).count_ps(), 3'000'000);
  EXPECT_EQ(Time::ns(1500), Time::us(1) + Time::ns(500));
  EXPECT_EQ(Time::from_seconds(1.5e-6), Time::ns(1500));
  EXPECT_DOUBLE_EQ(Time::ms(2).as_seconds(), 2e-3);
}

TEST(Time, TransferTimeRoundsUp) {
  // 1 byte at 3 bytes/s is a third of a second: 333333333333.33 ps, rounded up.
  EXPECT_EQ(transfer_time(1, Bandwidth::bytes_per_s(3)).count_ps(), 333'333'333'334);
  EXPECT_EQ(transfer_time(kGiB, Bandwidth::gigabytes_per_s(1)).count_ps(), 1'073'741'824'000);
  EXPECT_EQ(Bandwidth::gigabits_per_s(400).in_bytes_per_s(), 50e9);
}

TEST(EventQueue, PopsInTimeOrder) {
  EventQueue q;
  std::vector<int> order;
  q.push(Time::ns(30), [&] { order.push_back(30); });
  q.push(Time::ns(10), [&] { order.push_back(10); });
  q.push(Time::ns(20), [&] { order.push_back(20); });
  Time t;
  EventQueue::Handler h;
  while (!q.empty()) {
    q.pop(t, h);
    h();
  }
  EXPECT_EQ(order, (std::vector<int>{10, 20, 30}));
}

TEST(EventQueue, TiesRunInInsertionOrder) {
  EventQueue q;
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) q.push(Time::ns(5), [&order, i] { order.push_back(i); });
  Time t;
  EventQueue::Handler h;
  while (!q.empty()) {
    q.pop(t, h);
    h();
  }
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(EventQueue, CancelledEventsNeverRunAndStaleIdsAreHarmless) {
  EventQueue q;
  int ran = 0;
  EventId a = q.push(Time::ns(1), [&] { ran += 1; });
  EventId b = q.push(Time::ns(2), [&] { ran += 10; });
  EXPECT_TRUE(q.cancel(a));
  EXPECT_FALSE(q.cancel(a));  // twice
  EXPECT_EQ(q.size(), 1u);
  // The freed slot is reused; the old id must not cancel the new event.
  EventId c = q.push(Time::ns(3), [&] { ran += 100; });
  EXPECT_EQ(c.slot, a.slot);
  EXPECT_FALSE(q.cancel(a));
  EXPECT_FALSE(q.cancel(EventId{}));
  Time t;
  EventQueue::Handler h;
  while (!q.empty()) {
    q.pop(t, h);
    h();
  }
  EXPECT_EQ(ran, 110);
  EXPECT_FALSE(q.cancel(b));  // already ran
}

TEST(Simulator, SchedulingInThePastThrows) {
  Simulator sim;
  sim.schedule_at(Time::us(5), [&] {
    EXPECT_THROW(sim.schedule_at(Time::us(4), [] {}), std::logic_error);
    sim.schedule_in(Time{}, [] {});  // now is fine
  });
  EXPECT_EQ(sim.run(), 2u);
  EXPECT_EQ(sim.now(), Time::us(5));
}

TEST(Simulator, RunUntilStopsAtLimit) {
  Simulator sim;
  int ran = 0;
  for (int i = 1; i <= 10; ++i) sim.schedule_at(Time::us(i), [&] { ++ran; });
  sim.run_until(Time::us(4));
  EXPECT_EQ(ran, 4);
  EXPECT_EQ(sim.pending(), 6u);
  sim.run();
  EXPECT_EQ(ran, 10);
}

// A random cascade of events with cancellations; the trace must repeat exactly.
std::vector<int64_t> random_cascade(uint32_t seed) {
  Simulator sim;
  std::mt19937_64 rng(seed);
  std::vector<int64_t> trace;
  std::vector<EventId> ids;
  std::function<void(int)> fire = [&](int depth) {
    trace.push_back(sim.now().count_ps() * 8 + depth);
    if (depth >= 6) return;
    for (int k = 0; k < 2; ++k) {
      ids.push_back(sim.schedule_in(Time::ns(static_cast<int64_t>(rng() % 4)),
                                    [&, depth] { fire(depth + 1); }));
    }
    if (rng() % 3 == 0) sim.cancel(ids[rng() % ids.size()]);
  };
  sim.schedule_at(Time{}, [&] { fire(0); });
  sim.run();
  return trace;
}

TEST(Simulator, RunsAreDeterministic) {
  const auto a = random_cascade(42);
  EXPECT_GT(a.size(), 50u);
  EXPECT_EQ(a, random_cascade(42));
  EXPECT_NE(a, random_cascade(43));
}

TEST(EventQueue, MatchesReferenceOrderUnderRandomLoad) {
  // Against a stable sort of (time, seq): the documented total order.
  EventQueue q;
  std::mt19937 rng(7);
  std::vector<std::pair<int64_t, int>> expected;
  std::vector<int> got;
  for (int i = 0; i < 5000; ++i) {
    const int64_t t = rng() % 200;
    expected.emplace_back(t, i);
    q.push(Time::ps(t), [&got, i] { got.push_back(i); });
  }
  std::stable_sort(expected.begin(), expected.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Time t;
  EventQueue::Handler h;
  while (!q.empty()) {
    q.pop(t, h);
    h();
  }
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i].second);
}

}  // namespace
}  // namespace cs

namespace cs {
namespace {

TEST(EventQueue, RejectsPushBeforeLastPopped) {
  EventQueue q;
  q.push(Time::ns(10), [] {});
  Time t;
  EventQueue::Handler h;
  q.pop(t, h);
  EXPECT_THROW(q.push(Time::ns(9), [] {}), std::logic_error);
  q.push(Time::ns(10), [] {});  // the same time is fine
  EXPECT_EQ(q.size(), 1u);
}

TEST(EventQueue, CancelledHeadIsSkippedByNextTime) {
  EventQueue q;
  EventId a = q.push(Time::ns(1), [] {});
  q.push(Time::ns(2), [] {});
  q.cancel(a);
  EXPECT_EQ(q.next_time(), Time::ns(2));
}

}  // namespace
}  // namespace cs

namespace cs {
namespace {

TEST(EventQueue, CancelAndRescheduleKeepsOrderAfterCompaction) {
  // Reschedule every event many times, as a flow model would on each rate change; the survivors
  // must still pop in (time, push order), and cancelled handlers must never run.
  EventQueue q;
  std::vector<EventId> ids(100);
  std::vector<int> got;
  for (int i = 0; i < 100; ++i)
    ids[i] = q.push(Time::ns(1000 + i % 7), [&got, i] { got.push_back(i); });
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(q.cancel(ids[i]));
      ids[i] = q.push(Time::ns(1000 + (i + round) % 7), [&got, i] { got.push_back(i); });
    }
  }
  EXPECT_EQ(q.size(), 100u);
  Time t, prev;
  EventQueue::Handler h;
  std::vector<std::pair<int64_t, int>> popped;
  while (!q.empty()) {
    q.pop(t, h);
    EXPECT_GE(t, prev);
    prev = t;
    h();
    popped.emplace_back(t.count_ps(), got.back());
  }
  ASSERT_EQ(got.size(), 100u);
  // Within one time, the last round's push order (which is index order) holds.
  for (std::size_t k = 1; k < popped.size(); ++k) {
    if (popped[k].first == popped[k - 1].first) {
      EXPECT_LT(popped[k - 1].second, popped[k].second);
    }
  }
}

}  // namespace
}  // namespace cs

namespace cs {
namespace {

TEST(Time, OverflowIsAnErrorNotANegativeTime) {
  EXPECT_THROW(Time::from_seconds(1e9), std::overflow_error);  // ~32 years
  EXPECT_THROW(Time::from_seconds(std::nan("")), std::overflow_error);
  EXPECT_THROW(transfer_time(kGiB, Bandwidth::bytes_per_s(1e-6)), std::overflow_error);
  EXPECT_EQ(Time::from_seconds(86400.0), Time::s(86400));  // a day is fine
  Simulator sim;
  sim.schedule_at(Time::s(9'000'000), [&] {
    EXPECT_THROW(sim.schedule_in(Time::s(300'000), [] {}), std::overflow_error);
  });
  sim.run();
}

}  // namespace
}  // namespace cs
