#include "sim/workload/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "sim/workload/schedules/registry.h"
#include "tests/support/pipeline_replay.h"

namespace cs::workload {
namespace {

using test::bubble;
using test::Costs;
using test::Orders;
using test::Replay;
using test::replay;

// Every registered schedule: the contract tests below run over each of them.
std::vector<PipelineSchedule> all_schedules() {
  std::vector<PipelineSchedule> out;
  for (const ScheduleInfo& s : schedule_table()) out.push_back(s.value);
  return out;
}

bool splits_backward(PipelineSchedule s) {
  return schedule_info(s).splits_backward;
}

// Whether pipeline_orders takes this shape (each schedule's own rules, from its entry).
bool accepts(PipelineSchedule sched, int32_t p, int32_t m, int32_t v) {
  const ScheduleInfo& info = schedule_info(sched);
  if (!info.virtual_stages && v != 1) return false;
  if (info.exact_virtual_stages > 0 && v != info.exact_virtual_stages) return false;
  if (info.whole_groups && m % p != 0) return false;
  if (info.even_stages && p % 2 != 0) return false;
  if (info.even_microbatches && m % 2 != 0) return false;
  return info.min_microbatches == nullptr || m >= info.min_microbatches(p);
}

// The virtual stages a schedule runs with in the contract tests.
int32_t default_v(PipelineSchedule sched) {
  const ScheduleInfo& info = schedule_info(sched);
  return info.exact_virtual_stages > 0 ? info.exact_virtual_stages : info.virtual_stages ? 2 : 1;
}

TEST(PipelineSchedule, NamesRoundTrip) {
  for (PipelineSchedule s : all_schedules()) EXPECT_EQ(parse_pipeline_schedule(to_string(s)), s);
  EXPECT_EQ(to_string(PipelineSchedule::kOneFOneB), "ONE_F_ONE_B");
  EXPECT_EQ(parse_pipeline_schedule("zb_h1"), PipelineSchedule::kZbH1);
  EXPECT_EQ(parse_pipeline_schedule("Gpipe"), PipelineSchedule::kGpipe);
  EXPECT_THROW(parse_pipeline_schedule("1f1b"), std::invalid_argument);
}

TEST(PipelineSchedule, RejectsBadShapes) {
  EXPECT_THROW(pipeline_orders(PipelineSchedule::kInterleaved, 4, 6, 2), std::invalid_argument);
  EXPECT_THROW(pipeline_orders(PipelineSchedule::kOneFOneB, 4, 8, 2), std::invalid_argument);
  EXPECT_THROW(pipeline_orders(PipelineSchedule::kGpipe, 0, 8, 1), std::invalid_argument);
  EXPECT_THROW(pipeline_orders(PipelineSchedule::kZbH1, 4, 0, 1), std::invalid_argument);
  EXPECT_THROW(pipeline_orders(PipelineSchedule::kZbH1, 4, 8, 1, 1, 0, 1), std::invalid_argument);
  try {
    pipeline_orders(PipelineSchedule::kInterleaved, 4, 6, 2);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("multiple"), std::string::npos) << e.what();
  }
}

// Every stage runs each of its items exactly once; the replay never deadlocks and (by how it
// starts items) respects every cross-stage dependency.
TEST(PipelineSchedule, EveryItemOnceAndNoDeadlock) {
  for (PipelineSchedule sched : all_schedules()) {
    for (int32_t p : {1, 2, 3, 4, 8}) {
      for (int32_t v : {1, 2, 3}) {
        for (int32_t m = 1; m <= 24; ++m) {
          if (!accepts(sched, p, m, v)) continue;
          SCOPED_TRACE(testing::Message()
                       << to_string(sched) << " p=" << p << " v=" << v << " m=" << m);
          const Orders orders = pipeline_orders(sched, p, m, v);
          ASSERT_EQ(orders.size(), static_cast<size_t>(p));
          for (const auto& order : orders) {
            std::set<std::tuple<Phase, int32_t, int32_t>> seen;
            for (const WorkItem& it : order) {
              ASSERT_GE(it.microbatch, 0);
              ASSERT_LT(it.microbatch, m);
              ASSERT_GE(it.chunk, 0);
              ASSERT_LT(it.chunk, v);
              EXPECT_TRUE(seen.insert({it.phase, it.microbatch, it.chunk}).second);
            }
            const size_t phases = splits_backward(sched) ? 3 : 2;
            EXPECT_EQ(seen.size(), phases * m * chunk_passes(sched, v));
          }
          const Replay r = replay(sched, orders, v, {1, 1, splits_backward(sched) ? 1 : 0});
          EXPECT_FALSE(r.deadlocked);
          // Also under lopsided costs: an order is a fixed sequence, so it must not depend on
          // the costs for being deadlock-free.
          EXPECT_FALSE(replay(sched, orders, v, {3, 1, 5}).deadlocked);
        }
      }
    }
  }
}

TEST(PipelineSchedule, GpipeAndOneFOneBBubbleIsTextbook) {
  const int32_t p = 4;
  for (PipelineSchedule sched : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB}) {
    for (int32_t m = 1; m <= 32; ++m) {
      SCOPED_TRACE(testing::Message() << to_string(sched) << " m=" << m);
      const Replay r = replay(sched, pipeline_orders(sched, p, m, 1), 1, {1, 2, 0});
      ASSERT_FALSE(r.deadlocked);
      EXPECT_EQ(r.makespan, 3 * (m + p - 1));
      EXPECT_NEAR(bubble(r), analytic_bubble_fraction(sched, p, m, 1, 1, 2, 0), 1e-12);
      EXPECT_NEAR(bubble(r), double(p - 1) / (m + p - 1), 1e-12);
    }
  }
}

// Two stages of 1F1B, stage 1 three times stage 0's forward and twice its backward, two
// microbatches: F0 on stage 0 [0, 1], on stage 1 [1, 4]; stage 0's F1 [1, 2]; stage 1's B0 [4, 8],
// F1 [8, 11], B1 [11, 15]; stage 0's B0 [8, 10], B1 [15, 17]. The span runs every item at its own
// stage's cost, where a uniform cost of the stages' mean (2 and 3) gives 15.
TEST(PipelineSchedule, ReplayedSpanRunsEachStageAtItsOwnCost) {
  const auto cost = [](int32_t stage, const WorkItem& item, const WorkItem*) {
    return item.phase == Phase::kForward ? (stage == 0 ? 1.0 : 3.0) : (stage == 0 ? 2.0 : 4.0);
  };
  EXPECT_DOUBLE_EQ(replayed_span(PipelineSchedule::kOneFOneB, 2, 2, 1, 2, 3, 1, cost), 17);
  const auto mean = [](int32_t, const WorkItem& item, const WorkItem*) {
    return item.phase == Phase::kForward ? 2.0 : 3.0;
  };
  EXPECT_DOUBLE_EQ(replayed_span(PipelineSchedule::kOneFOneB, 2, 2, 1, 2, 3, 1, mean), 15);
}

// The same two stages, where a forward right after a backward takes 1 s more (the backward's
// reductions still hold a stream the forward needs): of the four forwards only stage 1's F1
// follows a backward (its B0), so F1 ends at 12 and B1 at 16; stage 0's B1, ready then, ends at
// 18.
TEST(PipelineSchedule, ReplayedSpanChargesAnItemAfterTheItemBeforeIt) {
  const auto cost = [](int32_t stage, const WorkItem& item, const WorkItem* previous) {
    const double after_backward =
        previous != nullptr && previous->phase == Phase::kBackward ? 1.0 : 0.0;
    return item.phase == Phase::kForward ? (stage == 0 ? 1.0 : 3.0) + after_backward
                                         : (stage == 0 ? 2.0 : 4.0);
  };
  EXPECT_DOUBLE_EQ(replayed_span(PipelineSchedule::kOneFOneB, 2, 2, 1, 2, 3, 1, cost), 18);
}

TEST(PipelineSchedule, InterleavedBubbleShrinksByV) {
  const int32_t p = 4;
  const int32_t v = 2;
  for (int32_t m : {4, 8, 16}) {
    SCOPED_TRACE(testing::Message() << "m=" << m);
    // Each chunk holds 1/v of the stage's layers: unit costs are per chunk.
    const Replay r = replay(PipelineSchedule::kInterleaved,
                            pipeline_orders(PipelineSchedule::kInterleaved, p, m, v), v, {1, 2, 0});
    ASSERT_FALSE(r.deadlocked);
    const double expected = double(p - 1) / (v * m + p - 1);
    EXPECT_NEAR(bubble(r), expected, 1e-12);
    EXPECT_NEAR(analytic_bubble_fraction(PipelineSchedule::kInterleaved, p, m, v, 1, 2, 0),
                expected, 1e-12);
  }
}

TEST(PipelineSchedule, InterleavedWithOneChunkIsOneFOneB) {
  for (int32_t p : {1, 2, 4}) {
    for (int32_t m : {p, 2 * p, 5 * p}) {
      EXPECT_EQ(pipeline_orders(PipelineSchedule::kInterleaved, p, m, 1),
                pipeline_orders(PipelineSchedule::kOneFOneB, p, m, 1));
    }
  }
}

TEST(PipelineSchedule, ZbH1BeatsOneFOneBAndMatchesItsFormula) {
  const int32_t p = 4;
  for (int32_t m = 1; m <= 32; ++m) {
    SCOPED_TRACE(testing::Message() << "m=" << m);
    // One backward of 1F1B costs B + W of ZB-H1.
    const Replay zb = replay(PipelineSchedule::kZbH1,
                             pipeline_orders(PipelineSchedule::kZbH1, p, m, 1), 1, {1, 1, 1});
    const Replay ofob = replay(PipelineSchedule::kOneFOneB,
                               pipeline_orders(PipelineSchedule::kOneFOneB, p, m, 1), 1, {1, 2, 0});
    ASSERT_FALSE(zb.deadlocked);
    EXPECT_EQ(zb.busy[0], ofob.busy[0]);
    EXPECT_LT(bubble(zb), bubble(ofob));
    if (m >= p) {
      EXPECT_NEAR(bubble(zb), analytic_bubble_fraction(PipelineSchedule::kZbH1, p, m, 1, 1, 1, 1),
                  1e-12);
      EXPECT_NEAR(bubble(zb), double(p - 1) / (3 * m + p - 1), 1e-12);
    }
  }
}

TEST(PipelineSchedule, ZbH1FollowsItsCosts) {
  // Orders built for the real costs replay at the formula for T_B = 2 T_F = 2 T_W too.
  for (int32_t p : {2, 4, 8}) {
    for (int32_t m : {p, 2 * p, 4 * p}) {
      SCOPED_TRACE(testing::Message() << "p=" << p << " m=" << m);
      const Replay r =
          replay(PipelineSchedule::kZbH1,
                 pipeline_orders(PipelineSchedule::kZbH1, p, m, 1, 1, 2, 1), 1, {1, 2, 1});
      ASSERT_FALSE(r.deadlocked);
      EXPECT_NEAR(bubble(r), analytic_bubble_fraction(PipelineSchedule::kZbH1, p, m, 1, 1, 2, 1),
                  1e-12);
    }
  }
}

TEST(PipelineSchedule, PeakInFlight) {
  for (int32_t p : {1, 2, 4, 8}) {
    for (int32_t m = 1; m <= 20; ++m) {
      SCOPED_TRACE(testing::Message() << "p=" << p << " m=" << m);
      const Orders gpipe = pipeline_orders(PipelineSchedule::kGpipe, p, m, 1);
      const Orders ofob = pipeline_orders(PipelineSchedule::kOneFOneB, p, m, 1);
      const Orders zb = pipeline_orders(PipelineSchedule::kZbH1, p, m, 1);
      for (int32_t s = 0; s < p; ++s) {
        EXPECT_EQ(peak_in_flight(gpipe[s]), m);
        EXPECT_EQ(peak_in_flight(ofob[s]), std::min(p - s, m));
        EXPECT_EQ(peak_held_activations(ofob[s]), peak_in_flight(ofob[s]));
        EXPECT_LE(peak_in_flight(zb[s]), std::min(p - s, m));
        // ZB-H1 defers W's but never holds more activations than 1F1B's stage 0.
        EXPECT_LE(peak_held_activations(zb[s]), std::min(p, m));
      }
      EXPECT_EQ(peak_in_flight(ofob[0]), std::min(p, m));
    }
  }
  const int32_t p = 4;
  for (int32_t v : {2, 3}) {
    for (int32_t m : {4, 8, 16}) {
      const Orders orders = pipeline_orders(PipelineSchedule::kInterleaved, p, m, v);
      for (int32_t s = 0; s < p; ++s) {
        // Megatron's warm-up forwards, plus the forward that opens the first 1F1B pair.
        const int32_t warmup = std::min(2 * (p - s - 1) + (v - 1) * p, m * v);
        EXPECT_EQ(warmup_forwards(PipelineSchedule::kInterleaved, p, m, v, s), warmup);
        EXPECT_EQ(peak_in_flight(orders[s]), std::min(warmup + 1, m * v)) << "s=" << s;
      }
    }
  }
}

// The warm-up forwards, and the one opening the first steady pair, precede the first backward.
TEST(PipelineSchedule, WarmupMatchesOrders) {
  for (PipelineSchedule sched : all_schedules()) {
    for (int32_t p : {1, 3, 4}) {
      const ScheduleInfo& info = schedule_info(sched);
      for (int32_t m : {p, 2 * p, 3 * p + (info.whole_groups ? 0 : 1)}) {
        const int32_t v = default_v(sched);
        if (!accepts(sched, p, m, v)) continue;
        const Orders orders = pipeline_orders(sched, p, m, v);
        for (int32_t s = 0; s < p; ++s) {
          const auto first_b =
              std::find_if(orders[s].begin(), orders[s].end(),
                           [](const WorkItem& it) { return it.phase != Phase::kForward; });
          EXPECT_EQ(first_b - orders[s].begin(),
                    std::min(warmup_forwards(sched, p, m, v, s) + 1, m * v))
              << to_string(sched) << " p=" << p << " m=" << m << " s=" << s;
        }
      }
    }
  }
}

TEST(PipelineSchedule, AnalyticBubbleLaws) {
  for (PipelineSchedule sched : all_schedules()) {
    if (!accepts(sched, 1, 8, default_v(sched))) continue;  // DualPipe needs an even p
    EXPECT_EQ(analytic_bubble_fraction(sched, 1, 8, default_v(sched), 1, 1, 1), 0.0);
  }
  // Relative to the ideal step, 1F1B's bubble is (p-1)/m.
  const double b = analytic_bubble_fraction(PipelineSchedule::kOneFOneB, 8, 32, 1, 1, 2, 0);
  EXPECT_NEAR(b / (1 - b), 7.0 / 32, 1e-12);
  // Splitting the backward cuts the idle time from (p-1)(F+B+W) to (p-1)(F+B-W).
  const double zb = analytic_bubble_fraction(PipelineSchedule::kZbH1, 8, 32, 1, 1, 1, 1);
  EXPECT_NEAR(zb / (1 - zb), 7.0 * 1 / (32 * 3), 1e-12);
  EXPECT_EQ(analytic_bubble_fraction(PipelineSchedule::kZbH1, 8, 32, 1, 1, 1, 3), 0.0);
}

}  // namespace
}  // namespace cs::workload
