// The distributed optimizer's parameter all-gather under the forward: buckets gathered before the
// first op that uses them, the last partial one at the flush; under a pipeline only the first
// stage's first chunk is bucketed, as Megatron-Core buckets it.
#include "sim/lower/param_gather.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "sim/workload/model_math.h"
#include "tests/support/lowering_fixtures.h"

namespace cs::lower {
namespace {

using testing_support::small_llama;
using testing_support::StageLowering;
using workload::ParamGather;

clustersim::RunConfig zero1(std::vector<std::string> more = {}) {
  std::vector<std::string> o = {"model.num_layers=8",
                                "parallel.tp=2",
                                "parallel.dp=16",
                                "parallel.global_batch_size=64",
                                "parallel.zero_stage=1",
                                "parallel.dp_bucket_params=40000000",
                                "parallel.overlap_param_gather=true"};
  o.insert(o.end(), more.begin(), more.end());
  return small_llama(o);
}

TEST(ParamGatherBuckets, ABucketIsGatheredBeforeTheFirstOpThatUsesAnyOfItsParameters) {
  StageLowering s(zero1());
  std::vector<ParamGather> out;
  ParamGatherBuckets gathers(true, 100, s.make, s.phase, out);
  s.add_op();  // op 0 uses the first 60
  gathers.used(60, 0);
  s.add_op();  // op 1 the next 60: the bucket is full
  gathers.used(60, 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].before, 0u);
  EXPECT_EQ(out[0].op.bytes, 2 * 120);  // bf16 parameters
  EXPECT_EQ(out[0].op.coll_op, coll::Op::kAllGather);
  EXPECT_EQ(out[0].op.dim, workload::Dim::kDp);
  EXPECT_EQ(out[0].op.stream, workload::Stream::kDp);
  EXPECT_EQ(s.label(out[0].op), "zero_param_all_gather");
  s.add_op();
  gathers.used(0, 2);  // uses no parameters: opens no bucket
  s.add_op();
  gathers.used(30, 3);
  EXPECT_EQ(out.size(), 1u);
  gathers.flush();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].before, 3u);
  EXPECT_EQ(out[1].op.bytes, 2 * 30);
  gathers.flush();
  EXPECT_EQ(out.size(), 2u);
}

TEST(ParamGatherBuckets, ParametersUsedPastTheLastOpAreGatheredBeforeTheLastOp) {
  // A part that adds no op (its ops vanished) still needs its parameters before the pass ends.
  StageLowering s(zero1());
  std::vector<ParamGather> out;
  ParamGatherBuckets gathers(true, 100, s.make, s.phase, out);
  s.add_op();
  s.add_op();
  gathers.used(10, 2);
  gathers.flush();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].before, 1u);
}

TEST(ParamGatherBuckets, DisabledTheyGatherNothing) {
  StageLowering s(zero1());
  std::vector<ParamGather> out;
  ParamGatherBuckets gathers(false, 100, s.make, s.phase, out);
  s.add_op();
  gathers.used(500, 0);
  gathers.flush();
  EXPECT_TRUE(out.empty());
}

TEST(ParamGatherBuckets, OnlyTheFirstStagesFirstChunkIsBucketed) {
  clustersim::ParallelConfig par;
  par.set_dp_bucket_params(1234);
  const int64_t one_bucket = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(param_gather_bucket(par, 0, 0), 1234);
  EXPECT_EQ(param_gather_bucket(par, 0, 1), one_bucket);
  EXPECT_EQ(param_gather_bucket(par, 1, 0), one_bucket);
}

TEST(ParamGatherBuckets, UnderAPipelineOnlyTheFirstStagesFirstChunkIsBucketed) {
  // Megatron-Core gives pipeline ranks after the first, and model chunks after the first, one
  // bucket each; stage 0's chunk 0 is gathered embedding first, then layer by layer (each layer,
  // about 109M parameters per TP rank, fills a 40M-parameter bucket of its own).
  const auto config =
      zero1({"parallel.pp=2", "parallel.schedule=INTERLEAVED", "parallel.virtual_stages=2"});
  const auto first = testing_support::stage_work_of(config, 0);
  const auto second = testing_support::stage_work_of(config, 1);
  ASSERT_EQ(first.chunks.size(), 2u);
  ASSERT_EQ(second.chunks.size(), 2u);
  EXPECT_EQ(first.chunks[0].param_gather.size(), 3u);  // the embedding, then 2 layers
  EXPECT_EQ(first.chunks[1].param_gather.size(), 1u);
  EXPECT_EQ(second.chunks[0].param_gather.size(), 1u);
  EXPECT_EQ(second.chunks[1].param_gather.size(), 1u);
  // The first bucket holds the bf16 embedding alone, which the first forward op uses.
  const auto& bucket = first.chunks[0].param_gather.front();
  EXPECT_EQ(bucket.before, 0u);
  const int64_t embedding = workload::padded_vocab(config.model(), 2) * 4096 / 2;
  EXPECT_EQ(bucket.op.bytes, 2 * embedding);
}

}  // namespace
}  // namespace cs::lower
