// The recompute table: one entry per ParallelConfig.Recompute value, each with its own names.
#include "sim/workload/recompute.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace cs::workload {
namespace {

using clustersim::ParallelConfig;

TEST(RecomputeModes, EveryValueHasOneEntryWithItsOwnNames) {
  const auto* values = ParallelConfig::Recompute_descriptor();
  ASSERT_EQ(recompute_modes().size(), static_cast<std::size_t>(values->value_count()));
  std::set<std::string_view> names, labels;
  for (int i = 0; i < values->value_count(); ++i) {
    const auto mode = static_cast<ParallelConfig::Recompute>(values->value(i)->number());
    const RecomputeInfo& m = recompute_info(mode);
    EXPECT_EQ(m.mode, mode);
    names.insert(m.name);
    labels.insert(m.label);
  }
  EXPECT_EQ(names.size(), recompute_modes().size());
  EXPECT_EQ(labels.size(), recompute_modes().size());
  // The planner tries them, and the memory report lists them, from most kept to least.
  EXPECT_EQ(recompute_modes().front().mode, ParallelConfig::NONE);
  EXPECT_EQ(recompute_modes().back().mode, ParallelConfig::FULL);
}

TEST(RecomputeModes, TheLabelAddsTheCheckpointInterval) {
  ParallelConfig p;
  EXPECT_EQ(recompute_label(p), "");
  p.set_checkpoint_every_k_layers(4);
  EXPECT_EQ(recompute_label(p), "checkpoint every 4 layers");
  p.set_recompute(ParallelConfig::SELECTIVE);
  EXPECT_EQ(recompute_label(p), "sel. recompute, checkpoint every 4 layers");
}

}  // namespace
}  // namespace cs::workload
