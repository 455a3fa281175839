// The stage's layers: chunks that tile the model, layers kept in BF16 under FP8, MoE layers with
// their own ops.
#include "sim/lower/stage_layers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "tests/support/moe_fixtures.h"
#include "tests/support/run_fixtures.h"

namespace cs::lower {
namespace {

using testing_support::small_llama;

TEST(ChunkSpan, TheStagesChunksTileTheModelOnce) {
  const auto c = small_llama({"model.num_layers=8", "parallel.pp=2", "parallel.dp=8",
                              "parallel.global_batch_size=16", "parallel.schedule=INTERLEAVED",
                              "parallel.virtual_stages=2"});
  std::vector<std::pair<int32_t, int32_t>> spans;  // [first, end)
  int firsts = 0, lasts = 0;
  for (int32_t stage = 0; stage < 2; ++stage)
    for (int32_t chunk = 0; chunk < 2; ++chunk) {
      const ChunkSpan s = chunk_span(c, stage, chunk);
      EXPECT_EQ(s.stage, stage);
      EXPECT_EQ(s.chunk, chunk);
      spans.emplace_back(s.first_layer, s.first_layer + s.layers);
      if (s.first) {
        ++firsts;
        EXPECT_EQ(s.first_layer, 0);
      }
      if (s.last) {
        ++lasts;
        EXPECT_EQ(s.first_layer + s.layers, 8);
      }
    }
  EXPECT_EQ(firsts, 1);
  EXPECT_EQ(lasts, 1);
  std::sort(spans.begin(), spans.end());
  int32_t next = 0;
  for (const auto& [first, end] : spans) {
    EXPECT_EQ(first, next);
    EXPECT_GT(end, first);
    next = end;
  }
  EXPECT_EQ(next, 8);
}

TEST(StageLayers, UnderFp8TheFirstAndLastLayersKeepBf16) {
  const auto c = small_llama({"precision=FP8", "num_layers_at_start_in_bf16=1",
                              "num_layers_at_end_in_bf16=1", "model.mtp_layers=1"});
  const StageLayers layers(c, 0, false);
  EXPECT_TRUE(layers.in_bf16(0));
  EXPECT_FALSE(layers.in_bf16(1));
  EXPECT_FALSE(layers.in_bf16(2));
  EXPECT_TRUE(layers.in_bf16(3));
  EXPECT_FALSE(layers.in_bf16(4));  // the MTP block after the last layer
  EXPECT_EQ(layers.mtp(), std::vector<int32_t>{4});
  EXPECT_EQ(&layers.of(1), &layers.dense());
  ASSERT_NE(&layers.of(0), &layers.dense());
  auto gemm_precision = [](const LayerWork& w) {
    for (const auto& op : w.fwd)
      if (!op.is_comm && op.kernel.kind == compute::KernelKind::kGemm) return op.precision;
    return compute::Precision::kBf16;
  };
  EXPECT_EQ(gemm_precision(layers.of(0)), compute::Precision::kBf16);
  EXPECT_NE(gemm_precision(layers.dense()), compute::Precision::kBf16);
  EXPECT_TRUE(layers.dense().segment_recompute.empty());  // not segmented
}

TEST(StageLayers, MoeLayersHaveOpsOfTheirOwn) {
  const StageLayers layers(testing_support::small_mixtral(), 0, true);
  EXPECT_NE(&layers.of(0), &layers.dense());
  EXPECT_FALSE(layers.of(0).segment_recompute.empty());
  EXPECT_EQ(&layers.of(2), &layers.dense());  // stage 1's layer, not built here
}

}  // namespace
}  // namespace cs::lower
