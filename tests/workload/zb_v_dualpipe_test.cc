// ZB-V and DualPipe: placement, order validity, and their bubble and activation laws, replayed
// by the reference replay (tests/support/pipeline_replay.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "sim/workload/pipeline_schedule.h"
#include "tests/support/pipeline_replay.h"

namespace cs::workload {
namespace {

using test::Orders;
using test::Replay;
using test::replay;

int64_t idle(const Replay& r, int32_t s) {
  return r.makespan - r.busy[static_cast<size_t>(s)];
}

// On each stage, every (microbatch, chunk) runs F, then B, then W, each once.
void expect_f_b_w_in_order(const Orders& orders) {
  for (size_t s = 0; s < orders.size(); ++s) {
    std::map<std::pair<int32_t, int32_t>, int> next_phase;  // 0: F due, 1: B due, 2: W due
    for (const WorkItem& it : orders[s]) {
      int& due = next_phase[{it.microbatch, it.chunk}];
      EXPECT_EQ(static_cast<int>(it.phase), due)
          << "stage " << s << " mb " << it.microbatch << " chunk " << it.chunk;
      ++due;
    }
    for (const auto& [key, due] : next_phase) EXPECT_EQ(due, 3) << "stage " << s;
  }
}

TEST(ZbV, PiecesFormAVWithTheTurnOnTheLastStage) {
  const int32_t p = 4;
  EXPECT_EQ(model_pieces(PipelineSchedule::kZbV, p, 2), 8);
  for (int32_t s = 0; s < p; ++s) {
    EXPECT_EQ(model_piece(PipelineSchedule::kZbV, s, 0, p), s);
    EXPECT_EQ(model_piece(PipelineSchedule::kZbV, s, 1, p), 2 * p - 1 - s);
  }
  // Down the first chunk, across on stage p-1 (in GPU memory), back up the second.
  EXPECT_FALSE(forward_source(PipelineSchedule::kZbV, 0, 0, p, 2).exists());
  EXPECT_EQ(forward_target(PipelineSchedule::kZbV, 1, 0, p, 2), (ChunkRef{2, 0}));
  EXPECT_EQ(forward_target(PipelineSchedule::kZbV, p - 1, 0, p, 2), (ChunkRef{p - 1, 1}));
  EXPECT_EQ(forward_target(PipelineSchedule::kZbV, 2, 1, p, 2), (ChunkRef{1, 1}));
  EXPECT_FALSE(forward_target(PipelineSchedule::kZbV, 0, 1, p, 2).exists());
  // Megatron's interleaving is unchanged: chunk c of stage s is piece c*p + s.
  EXPECT_EQ(model_piece(PipelineSchedule::kInterleaved, 1, 1, p), 5);
  EXPECT_EQ(forward_target(PipelineSchedule::kInterleaved, p - 1, 0, p, 2), (ChunkRef{0, 1}));
}

TEST(ZbV, OrdersAreValid) {
  for (int32_t p : {1, 2, 3, 4, 8}) {
    for (int32_t m = 1; m <= 3 * p + 2; ++m) {
      SCOPED_TRACE(testing::Message() << "p=" << p << " m=" << m);
      const Orders orders = pipeline_orders(PipelineSchedule::kZbV, p, m, 2);
      expect_f_b_w_in_order(orders);
      EXPECT_FALSE(replay(PipelineSchedule::kZbV, orders, 2, {1, 1, 1}).deadlocked);
      EXPECT_FALSE(replay(PipelineSchedule::kZbV, orders, 2, {3, 1, 5}).deadlocked);
    }
  }
}

// With T_F = T_B = T_W (a chunk's) and m >= 2p-1, every stage idles (p-1) chunk passes: the
// bubble is (p-1)/(6m+p-1), half of ZB-H1's (p-1)/(3m+p-1) at the same stage costs. Each stage
// holds at most 2p chunks' activations: p microbatches of its layers, as 1F1B's stage 0.
TEST(ZbV, BubbleAndActivationLaws) {
  for (int32_t p : {2, 4, 8}) {
    for (int32_t m : {2 * p - 1, 2 * p, 4 * p, 4 * p + 3}) {
      SCOPED_TRACE(testing::Message() << "p=" << p << " m=" << m);
      const Orders orders = pipeline_orders(PipelineSchedule::kZbV, p, m, 2);
      const Replay r = replay(PipelineSchedule::kZbV, orders, 2, {1, 1, 1});
      ASSERT_FALSE(r.deadlocked);
      for (int32_t s = 0; s < p; ++s) {
        EXPECT_EQ(idle(r, s), p - 1) << "s=" << s;
        EXPECT_EQ(peak_held_activations(orders[s]), 2 * p) << "s=" << s;
      }
      const double law = double(p - 1) / (6 * m + p - 1);
      EXPECT_NEAR(test::bubble(r), law, 1e-12);
      EXPECT_NEAR(analytic_bubble_fraction(PipelineSchedule::kZbV, p, m, 2, 1, 1, 1), law, 1e-12);
      // Stage costs 2, 2, 2 for ZB-H1 are chunk costs 1, 1, 1 for ZB-V.
      const Replay zb = replay(PipelineSchedule::kZbH1,
                               pipeline_orders(PipelineSchedule::kZbH1, p, m, 1), 1, {2, 2, 2});
      EXPECT_LT(r.makespan, zb.makespan);
    }
  }
  // For other costs the analytic value is the order's replay.
  const Replay r = replay(PipelineSchedule::kZbV, pipeline_orders(PipelineSchedule::kZbV, 4, 16, 2),
                          2, {1, 2, 1});
  EXPECT_NEAR(analytic_bubble_fraction(PipelineSchedule::kZbV, 4, 16, 2, 1, 2, 1), test::bubble(r),
              1e-12);
}

TEST(DualPipe, TwoCopiesTwoDirections) {
  const int32_t p = 4;
  EXPECT_EQ(model_pieces(PipelineSchedule::kDualPipe, p, 2), p);
  for (int32_t s = 0; s < p; ++s) {
    EXPECT_EQ(model_piece(PipelineSchedule::kDualPipe, s, 0, p), s);
    EXPECT_EQ(model_piece(PipelineSchedule::kDualPipe, s, 1, p), p - 1 - s);
  }
  EXPECT_FALSE(forward_source(PipelineSchedule::kDualPipe, 0, 0, p, 2).exists());
  EXPECT_FALSE(forward_source(PipelineSchedule::kDualPipe, p - 1, 1, p, 2).exists());
  EXPECT_EQ(forward_target(PipelineSchedule::kDualPipe, 2, 1, p, 2), (ChunkRef{1, 1}));
  EXPECT_FALSE(forward_target(PipelineSchedule::kDualPipe, 0, 1, p, 2).exists());
  EXPECT_EQ(chunk_passes(PipelineSchedule::kDualPipe, 2), 1);
  // Microbatches 0..m/2-1 enter at stage 0 (chunk 0), the rest at stage p-1 (chunk 1).
  const int32_t m = 12;
  for (const auto& order : pipeline_orders(PipelineSchedule::kDualPipe, p, m, 2))
    for (const WorkItem& it : order) EXPECT_EQ(it.chunk, it.microbatch < m / 2 ? 0 : 1);
}

// Each F&B pair is a forward marked kOverlapped followed by a backward of the other chunk.
TEST(DualPipe, OrdersAreValidAndMarkTheirPairs) {
  for (int32_t p : {2, 4, 6, 8}) {
    for (int32_t m = 2 * p; m <= 4 * p + 2; m += 2) {
      SCOPED_TRACE(testing::Message() << "p=" << p << " m=" << m);
      const Orders orders = pipeline_orders(PipelineSchedule::kDualPipe, p, m, 2);
      expect_f_b_w_in_order(orders);
      EXPECT_FALSE(replay(PipelineSchedule::kDualPipe, orders, 2, {1, 1, 1}).deadlocked);
      EXPECT_FALSE(replay(PipelineSchedule::kDualPipe, orders, 2, {3, 1, 5}).deadlocked);
      for (const auto& order : orders) {
        int32_t pairs = 0;
        for (size_t i = 0; i < order.size(); ++i) {
          if (order[i].pair != Pairing::kOverlapped) continue;
          ++pairs;
          ASSERT_LT(i + 1, order.size());
          EXPECT_EQ(order[i].phase, Phase::kForward);
          EXPECT_EQ(order[i + 1].phase, Phase::kBackward);
          EXPECT_NE(order[i + 1].chunk, order[i].chunk);
        }
        EXPECT_GT(pairs, 0);
      }
    }
  }
}

// Table 2 of the DeepSeek-V3 report: bubble (PP/2 - 1)(F&B + B - 3W) with B the full backward;
// with chunk costs F = B = W = 1 a pair costs 3 and a full backward 2, so each stage idles
// 2(p/2 - 1). Activations: at most p + 1 microbatches per stage.
TEST(DualPipe, BubbleAndActivationLaws) {
  for (int32_t p : {2, 4, 6, 8}) {
    for (int32_t m : {2 * p, 3 * p + (p % 2 == 0 ? 0 : 1), 4 * p}) {
      SCOPED_TRACE(testing::Message() << "p=" << p << " m=" << m);
      const Orders orders = pipeline_orders(PipelineSchedule::kDualPipe, p, m, 2);
      const Replay r = replay(PipelineSchedule::kDualPipe, orders, 2, {1, 1, 1});
      ASSERT_FALSE(r.deadlocked);
      for (int32_t s = 0; s < p; ++s) {
        EXPECT_EQ(idle(r, s), 2 * (p / 2 - 1)) << "s=" << s;
        EXPECT_EQ(peak_held_activations(orders[s]), p + 1) << "s=" << s;
      }
      EXPECT_NEAR(test::bubble(r),
                  analytic_bubble_fraction(PipelineSchedule::kDualPipe, p, m, 2, 1, 1, 1), 1e-12);
    }
  }
}

}  // namespace
}  // namespace cs::workload
