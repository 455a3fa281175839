// The distributed optimizer's parameter all-gather under the forward (overlap_param_gather) with a
// pipeline, through whole steps (its buckets: tests/lower/param_gather_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/config/run_config.h"
#include "sim/run/step_simulation.h"
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
