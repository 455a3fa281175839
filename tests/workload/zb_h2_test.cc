// ZB-H2: order validity, its warm-up and activation bound, and its bubble law with and without
// optimizer post-validation, replayed by the reference replay (tests/support/pipeline_replay.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "sim/workload/pipeline_schedule.h"
#include "tests/support/pipeline_replay.h"

namespace cs::workload {
namespace {

using test::Costs;
using test::free_running_bubble;
using test::free_running_step;
using test::Orders;
using test::Replay;
using test::replay;

constexpr PipelineSchedule kH2 = PipelineSchedule::kZbH2;
constexpr PipelineSchedule kH1 = PipelineSchedule::kZbH1;

Replay run(PipelineSchedule sched, int32_t p, int32_t m, Costs c) {
  const auto f = static_cast<double>(c.f), b = static_cast<double>(c.b);
  return replay(sched, pipeline_orders(sched, p, m, 1, f, b, static_cast<double>(c.w)), 1, c);
}

// The costs the law is checked at: equal, and unequal with the backward's input gradient the
// largest (T_B = 2 T_F = 2 T_W, as ZB-H1's tests, and 2:3:1).
const Costs kCosts[] = {{1, 1, 1}, {1, 2, 1}, {2, 3, 1}};

// Idle time of every stage over a step, in the law's units: (p-1)(T_F + T_B - 2 T_W).
int64_t law_idle(int32_t p, Costs c) {
  return (p - 1) * std::max<int64_t>(0, c.f + c.b - 2 * c.w);
}

TEST(ZbH2, OrdersAreValid) {
  for (int32_t p : {1, 2, 3, 4, 8}) {
    for (int32_t m = 1; m <= 3 * p + 2; ++m) {
      for (const Costs& c : kCosts) {
        SCOPED_TRACE(testing::Message()
                     << "p=" << p << " m=" << m << " costs " << c.f << ":" << c.b << ":" << c.w);
        const Orders orders = pipeline_orders(kH2, p, m, 1, c.f, c.b, c.w);
        EXPECT_EQ(test::f_b_w_misorder(orders), "");
        for (const auto& order : orders) EXPECT_EQ(order.size(), 3 * static_cast<size_t>(m));
        // The replay starts an item only once its inputs from the other stages are there.
        EXPECT_FALSE(replay(kH2, orders, 1, c).deadlocked);
        EXPECT_FALSE(replay(kH2, orders, 1, {3, 1, 5}).deadlocked);
      }
    }
  }
}

// Stage s runs min(2(p-s)-1, m) forwards before its first B: p-1-s more than 1F1B.
TEST(ZbH2, WarmupDoublesOneFOneBs) {
  for (int32_t p : {1, 2, 4, 8}) {
    for (int32_t m : {1, p, 2 * p - 1, 3 * p}) {
      const Orders orders = pipeline_orders(kH2, p, m, 1);
      for (int32_t s = 0; s < p; ++s) {
        SCOPED_TRACE(testing::Message() << "p=" << p << " m=" << m << " s=" << s);
        const int32_t before_b = std::min(2 * (p - s) - 1, m);
        EXPECT_EQ(warmup_forwards(kH2, p, m, 1, s), std::min(2 * (p - s - 1), m));
        const auto first_b = std::find_if(orders[s].begin(), orders[s].end(), [](const auto& it) {
          return it.phase != Phase::kForward;
        });
        EXPECT_EQ(first_b - orders[s].begin(), before_b);
      }
    }
  }
}

// Stage 0 holds 2p-1 microbatches' activations (Qi et al.'s (2p-1) M_B), none holds more, and
// ZB-H1 holds p: the memory ZB-H2 trades for its bubble.
TEST(ZbH2, HoldsTwicePMinusOneActivations) {
  for (int32_t p : {1, 2, 3, 4, 8}) {
    for (int32_t m = 1; m <= 4 * p; ++m) {
      for (const Costs& c : kCosts) {
        SCOPED_TRACE(testing::Message()
                     << "p=" << p << " m=" << m << " costs " << c.f << ":" << c.b << ":" << c.w);
        const Orders h2 = pipeline_orders(kH2, p, m, 1, c.f, c.b, c.w);
        const Orders h1 = pipeline_orders(kH1, p, m, 1, c.f, c.b, c.w);
        EXPECT_EQ(peak_held_activations(h2[0]), std::min(2 * p - 1, m));
        EXPECT_EQ(peak_held_activations(h1[0]), std::min(p, m));
        for (int32_t s = 0; s < p; ++s) {
          EXPECT_LE(peak_held_activations(h2[s]), std::min(2 * p - 1, m)) << "s=" << s;
        }
      }
    }
  }
}

// With post-validation the step is the longest stage span, m(T_F + T_B + T_W) of work on every
// stage plus (p-1)(T_F + T_B - 2 T_W) idle: the law.
TEST(ZbH2, PostValidatedStepFollowsTheLaw) {
  for (const Costs& c : kCosts) {
    for (int32_t p : {2, 3, 4, 8}) {
      for (int32_t m : {2 * p - 1, 2 * p, 4 * p + 1}) {
        SCOPED_TRACE(testing::Message()
                     << "p=" << p << " m=" << m << " costs " << c.f << ":" << c.b << ":" << c.w);
        const Replay r = run(kH2, p, m, c);
        ASSERT_FALSE(r.deadlocked);
        const int64_t work = m * (c.f + c.b + c.w);
        EXPECT_EQ(free_running_step(r), work + law_idle(p, c));
        EXPECT_NEAR(free_running_bubble(r, 0),
                    analytic_bubble_fraction(kH2, p, m, 1, c.f, c.b, c.w), 1e-12);
        for (int32_t s = 0; s < p; ++s) EXPECT_EQ(r.busy[s], work);
      }
    }
  }
}

// Without it the step runs to the last stage's end and pays the parallelogram's skew: at equal
// costs exactly ZB-H1's step, (p-1) T more than the post-validated one; at other costs never
// worse than ZB-H1 and never better than the law.
TEST(ZbH2, SynchronousStepIsNoBetterThanZbH1AtEqualCosts) {
  for (int32_t p : {2, 3, 4, 8}) {
    for (int32_t m : {2 * p - 1, 2 * p, 4 * p + 1}) {
      SCOPED_TRACE(testing::Message() << "p=" << p << " m=" << m);
      const Replay h2 = run(kH2, p, m, {1, 1, 1});
      const Replay h1 = run(kH1, p, m, {1, 1, 1});
      EXPECT_EQ(h2.makespan, h1.makespan);
      EXPECT_EQ(h2.makespan, 3 * m + p - 1);
      EXPECT_EQ(free_running_step(h2), 3 * m);
      for (const Costs& c : kCosts) {
        const Replay a = run(kH2, p, m, c);
        EXPECT_LE(a.makespan, run(kH1, p, m, c).makespan);
        EXPECT_GE(a.makespan, free_running_step(a));
      }
    }
  }
}

// Post-validation gives 1F1B nothing: its idle lies inside stage 0's span, which runs from the
// first forward to the last backward. ZB-H1's drain idle also lies inside stage 0's span.
TEST(ZbH2, PostValidationLeavesOneFOneBAndZbH1Alone) {
  for (int32_t p : {2, 4, 8}) {
    for (int32_t m : {p, 2 * p, 4 * p}) {
      const Replay ofob = replay(PipelineSchedule::kOneFOneB,
                                 pipeline_orders(PipelineSchedule::kOneFOneB, p, m, 1), 1, {1, 2});
      EXPECT_EQ(free_running_step(ofob), ofob.makespan) << "p=" << p << " m=" << m;
      const Replay h1 = run(kH1, p, m, {1, 1, 1});
      EXPECT_EQ(free_running_step(h1), h1.makespan) << "p=" << p << " m=" << m;
    }
  }
}

TEST(ZbH2, AnalyticLaw) {
  // (p-1)(T_F+T_B-2T_W) against m(T_F+T_B+T_W): zero at equal costs, one W per slot below ZB-H1.
  EXPECT_EQ(analytic_bubble_fraction(kH2, 8, 32, 1, 1, 1, 1), 0.0);
  const double h2 = analytic_bubble_fraction(kH2, 8, 32, 1, 1, 2, 1);
  EXPECT_NEAR(h2 / (1 - h2), 7.0 * 1 / (32 * 4), 1e-12);
  const double h1 = analytic_bubble_fraction(kH1, 8, 32, 1, 1, 2, 1);
  EXPECT_NEAR(h1 / (1 - h1), 7.0 * 2 / (32 * 4), 1e-12);
  EXPECT_EQ(analytic_bubble_fraction(kH2, 8, 32, 1, 1, 1, 2), 0.0);  // clamped
  EXPECT_EQ(analytic_bubble_fraction(kH2, 1, 8, 1, 1, 2, 1), 0.0);
}

TEST(ZbH2, RejectsVirtualStages) {
  EXPECT_THROW(pipeline_orders(kH2, 4, 8, 2), std::invalid_argument);
  EXPECT_THROW(pipeline_orders(kH2, 4, 0, 1), std::invalid_argument);
  EXPECT_THROW(pipeline_orders(kH2, 4, 8, 1, 1, 0, 1), std::invalid_argument);
  EXPECT_EQ(parse_pipeline_schedule("zb_h2"), kH2);
}

}  // namespace
}  // namespace cs::workload
