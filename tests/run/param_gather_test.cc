// The distributed optimizer's parameter all-gather under the forward (overlap_param_gather) with a
// pipeline: bucket by bucket on the first stage's first chunk, as Megatron-Core buckets it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/compute/gpu_profile.h"
#include "sim/config/run_config.h"
#include "sim/lower/stage_work.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/model_math.h"
#include "tests/support/run_fixtures.h"

namespace cs::run {
namespace {

using testing_support::small_llama;
using workload::Stream;

// Llama 3 8B's shapes in 8 layers on TP 2 x PP 2 x DP 16 with ZeRO-1: the embedding and each
// layer (about 109M parameters per TP rank) fill a 40M-parameter bucket of their own.
clustersim::RunConfig pipelined(bool overlap, std::vector<std::string> more = {}) {
  std::vector<std::string> o = {
      "model.num_layers=8",
      "parallel.tp=2",
      "parallel.pp=2",
      "parallel.dp=16",
      "parallel.global_batch_size=64",
      "parallel.zero_stage=1",
      "parallel.dp_bucket_params=40000000",
      std::string("parallel.overlap_param_gather=") + (overlap ? "true" : "false")};
  o.insert(o.end(), more.begin(), more.end());
  return small_llama(o);
}

TEST(ParamGather, UnderAPipelineOnlyTheFirstStagesFirstChunkIsBucketed) {
  // Megatron-Core gives pipeline ranks after the first, and model chunks after the first, one
  // bucket each; stage 0's chunk 0 is gathered embedding first, then layer by layer.
  const auto config =
      pipelined(true, {"parallel.schedule=INTERLEAVED", "parallel.virtual_stages=2"});
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  const auto first = lower::build_stage_work(config, 0, cost, false);
  const auto second = lower::build_stage_work(config, 1, cost, false);
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

TEST(ParamGather, TheFirstForwardWaitsForTheFirstBucketAlone) {
  struct Span {
    Time start, end;
  };
  std::vector<Span> gathers, compute;
  SimulationOptions options;
  options.op_ranks = {0};  // stage 0, DP replica 0
  options.on_op = [&](int32_t, const workload::Program& program, uint32_t op, Time start,
                      Time end) {
    const auto& o = program.ops[op];
    if (o.stream == Stream::kDp && o.coll_op == coll::Op::kAllGather)
      gathers.push_back({start, end});
    if (o.stream == Stream::kCompute && o.kind == workload::OpKind::kCompute)
      compute.push_back({start, end});
  };
  simulate_step(pipelined(true), "test", options);
  ASSERT_GE(gathers.size(), 2u);
  ASSERT_FALSE(compute.empty());
  auto by_start = [](const Span& a, const Span& b) { return a.start < b.start; };
  std::sort(gathers.begin(), gathers.end(), by_start);
  const Time first_forward = std::min_element(compute.begin(), compute.end(), by_start)->start;
  EXPECT_LE(first_forward, gathers.front().end);
  EXPECT_LT(first_forward, gathers.back().end);  // the rest arrive under the forward
}

TEST(ParamGather, OverlapUnderAPipelineIsFasterThanGatheringAfterTheOptimizer) {
  // Without overlap the stages' gathers follow the optimizer; with it, stage 0's run under its
  // first forward and the later stages' while the pipeline fills.
  const auto on = simulate_step(pipelined(true), "test");
  const auto off = simulate_step(pipelined(false), "test");
  EXPECT_LT(on.iteration_time_s, off.iteration_time_s);
  EXPECT_LT(on.exposed(workload::Dim::kDp), off.exposed(workload::Dim::kDp));
}

TEST(ParamGather, OverlapIsNotSlowerOnLlama3_70b) {
  auto run = [](bool overlap) {
    return simulate_step(load_run_config("", "llama3-70b",
                                         {std::string("parallel.overlap_param_gather=") +
                                          (overlap ? "true" : "false")})
                             .config,
                         "test");
  };
  EXPECT_LE(run(true).iteration_time_s, run(false).iteration_time_s);
}

}  // namespace
}  // namespace cs::run
