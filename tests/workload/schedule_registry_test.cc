// The schedule table agrees with the enum and the config schema, and each entry's flags say what
// its orders do.
#include "sim/workload/schedules/registry.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "sim/workload/pipeline_schedule.h"

namespace cs::workload {
namespace {

using clustersim::ParallelConfig;

TEST(ScheduleRegistry, TableFollowsTheEnumAndTheConfigSchema) {
  const auto& table = schedule_table();
  const auto* values = ParallelConfig::Schedule_descriptor();
  ASSERT_EQ(table.size(), static_cast<size_t>(values->value_count()));
  std::set<std::string_view> names, displays;
  for (size_t i = 0; i < table.size(); ++i) {
    const ScheduleInfo& s = table[i];
    SCOPED_TRACE(std::string(s.name));
    EXPECT_EQ(static_cast<size_t>(s.value), i);  // table order is enum order
    EXPECT_EQ(s.name, ParallelConfig::Schedule_Name(s.config));
    EXPECT_EQ(&schedule_info(s.value), &s);
    EXPECT_EQ(&schedule_info(s.config), &s);
    EXPECT_EQ(to_string(s.value), s.name);
    EXPECT_TRUE(names.insert(s.name).second);
    EXPECT_TRUE(displays.insert(s.display).second);
    EXPECT_NE(s.orders, nullptr);
    EXPECT_NE(s.warmup, nullptr);
    EXPECT_NE(s.bubble_fraction, nullptr);
  }
  // Every value of ParallelConfig.Schedule has an entry.
  for (int i = 0; i < values->value_count(); ++i) {
    const auto config = static_cast<ParallelConfig::Schedule>(values->value(i)->number());
    EXPECT_EQ(schedule_info(config).config, config);
  }
  EXPECT_THROW(schedule_info(static_cast<PipelineSchedule>(200)), std::invalid_argument);
  EXPECT_EQ(names_with_virtual_stages(" or "), "INTERLEAVED or ZB_V or DUALPIPE");
}

// The layout search never tries a virtual-stage count its schedule's config check refuses.
TEST(ScheduleRegistry, TheSearchTriesOnlyVirtualStagesTheScheduleAccepts) {
  for (const ScheduleInfo& s : schedule_table()) {
    SCOPED_TRACE(std::string(s.name));
    for (const int32_t v : s.planner_virtual_stages) {
      EXPECT_GE(v, s.min_virtual_stages);
      if (s.exact_virtual_stages > 0) {
        EXPECT_EQ(v, s.exact_virtual_stages);
      }
      if (!s.virtual_stages) {
        EXPECT_EQ(v, 1);
      }
    }
  }
  EXPECT_EQ(schedule_info(ParallelConfig::INTERLEAVED).min_virtual_stages, 2);
}

// ZB-H2 is in the table with the flags of ZB-H1, and out of the layout search.
TEST(ScheduleRegistry, HasZbH2) {
  const ScheduleInfo& h2 = schedule_info(ParallelConfig::ZB_H2);
  EXPECT_EQ(h2.value, PipelineSchedule::kZbH2);
  EXPECT_EQ(h2.display, "ZB-H2");
  EXPECT_EQ(parse_pipeline_schedule("ZB_H2"), PipelineSchedule::kZbH2);
  EXPECT_TRUE(h2.splits_backward);
  EXPECT_FALSE(h2.virtual_stages);
  EXPECT_TRUE(h2.planner_virtual_stages.empty());
  // Its idle slots are ZB-H1's less one W each: none at equal costs.
  EXPECT_NEAR(idle_slots(PipelineSchedule::kZbH2, 4, 8, 1, 1, 1, 1), 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(idle_slots(PipelineSchedule::kZbH2, 4, 8, 1, 1, 2, 1), 3.0 / 4);
  EXPECT_DOUBLE_EQ(idle_slots(PipelineSchedule::kZbH1, 4, 8, 1, 1, 2, 1), 6.0 / 4);
}

// Below the microbatches its textbook form needs, a schedule's idle time is its orders' own: ZB-H1
// with 2 microbatches on 4 stages has too few W's to fill the bubble (Qi et al.'s form needs
// m >= p), and ZB-V idles more per slot at m = 2 than at m = 8.
TEST(ScheduleRegistry, IdleSlotsReplayTheOrdersBelowTheTextbookForms) {
  const double textbook = 3.0 * (1 + 2 - 1) / (1 + 2 + 1);  // (p-1)(t_f+t_b-t_w) in slots
  EXPECT_DOUBLE_EQ(idle_slots(PipelineSchedule::kZbH1, 4, 8, 1, 1, 2, 1), textbook);
  EXPECT_GT(idle_slots(PipelineSchedule::kZbH1, 4, 2, 1, 1, 2, 1), textbook + 0.25);
  EXPECT_GT(idle_slots(PipelineSchedule::kZbV, 4, 2, 2, 1, 1, 1),
            idle_slots(PipelineSchedule::kZbV, 4, 8, 2, 1, 1, 1) + 0.5);
  // The replay is the same order the closed forms describe: 1F1B and GPipe idle p - 1 slots.
  for (const auto schedule : {PipelineSchedule::kOneFOneB, PipelineSchedule::kGpipe})
    EXPECT_NEAR(idle_slots(schedule, 4, 3, 1, 1, 2, 1e-9), 3.0, 1e-6);
}

TEST(ScheduleRegistry, FlagsMatchTheOrders) {
  for (const ScheduleInfo& s : schedule_table()) {
    SCOPED_TRACE(std::string(s.name));
    const int32_t p = 4, m = 8;
    const int32_t v = s.exact_virtual_stages > 0 ? s.exact_virtual_stages : 1;
    bool has_w = false;
    for (const auto& order : pipeline_orders(s.value, p, m, v))
      for (const WorkItem& item : order) has_w |= item.phase == Phase::kWeightGrad;
    EXPECT_EQ(has_w, s.splits_backward);
    if (s.exact_virtual_stages > 0) {
      EXPECT_THROW(pipeline_orders(s.value, p, m, 1), std::invalid_argument);
      EXPECT_THROW(pipeline_orders(s.value, p, m, 3), std::invalid_argument);
    } else if (s.virtual_stages) {
      EXPECT_NO_THROW(pipeline_orders(s.value, p, m, 2));
    } else {
      EXPECT_THROW(pipeline_orders(s.value, p, m, 2), std::invalid_argument);
    }
    if (s.whole_groups || s.even_microbatches) {
      EXPECT_THROW(pipeline_orders(s.value, p, m + 1, v), std::invalid_argument);
    } else {
      EXPECT_NO_THROW(pipeline_orders(s.value, p, m + 1, v));
    }
    if (s.even_stages) {
      EXPECT_THROW(pipeline_orders(s.value, p + 1, 2 * m, v), std::invalid_argument);
    }
    if (s.min_microbatches != nullptr) {
      EXPECT_THROW(pipeline_orders(s.value, p, s.min_microbatches(p) - 2, v),
                   std::invalid_argument);
    }
    // The planner only asks for virtual-stage counts the schedule takes.
    for (int32_t v : s.planner_virtual_stages) EXPECT_TRUE(v == 1 || s.virtual_stages) << v;
    // A schedule that fills no bubble idles p - 1 slots.
    if (!s.splits_backward) {
      EXPECT_NEAR(idle_slots(s.value, p, m, v, 1, 2, 1e-9), p - 1, 1e-6);
    }
  }
}

TEST(ScheduleRegistry, ErrorMessagesNameTheSchedules) {
  try {
    pipeline_orders(PipelineSchedule::kOneFOneB, 4, 8, 2);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "ONE_F_ONE_B pipeline: virtual stages must be 1 (got 2); only INTERLEAVED and ZB_V "
              "and DUALPIPE use model chunks");
  }
  try {
    pipeline_orders(PipelineSchedule::kInterleaved, 4, 6, 2);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "INTERLEAVED pipeline: microbatches (6) must be a multiple of the stages (4), as "
              "Megatron-LM requires");
  }
  try {
    parse_pipeline_schedule("1f1b");
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown pipeline schedule '1f1b' (expected one of: GPIPE, ONE_F_ONE_B, "
              "INTERLEAVED, ZB_H1, ZB_V, DUALPIPE, ZB_H2)");
  }
  try {
    pipeline_orders(PipelineSchedule::kZbH2, 4, 8, 2);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "ZB_H2 pipeline: virtual stages must be 1 (got 2); only INTERLEAVED and ZB_V and "
              "DUALPIPE use model chunks");
  }
  try {
    pipeline_orders(PipelineSchedule::kZbV, 4, 8, 3);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "ZB_V pipeline: virtual stages must be 2 (got 3): each stage holds two model chunks");
  }
  try {
    pipeline_orders(PipelineSchedule::kDualPipe, 4, 6, 2);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "DUALPIPE pipeline: microbatches (6) must be at least 8");
  }
  try {
    pipeline_orders(PipelineSchedule::kDualPipe, 3, 8, 2);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "DUALPIPE pipeline: stages (3) must be even, its two halves mirror each other");
  }
}

}  // namespace
}  // namespace cs::workload
