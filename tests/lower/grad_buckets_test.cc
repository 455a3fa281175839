// Gradient buckets: reduced when full, after the op that completed them, with the collective the
// layout calls for; the last partial bucket at the flush; experts' gradients in buckets of their
// own over the expert-data-parallel group.
#include "sim/lower/grad_buckets.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/lowering_fixtures.h"
#include "tests/support/moe_fixtures.h"

namespace cs::lower {
namespace {

using testing_support::small_llama;
using testing_support::small_mixtral;
using testing_support::StageLowering;
using workload::Dim;
using workload::GradSync;
using workload::OpKind;
using workload::Stream;

// Llama layers on TP 2 x DP 8 (CP `cp`) with ZeRO `zero` and 100-parameter buckets.
clustersim::RunConfig bucketed(int zero, std::vector<std::string> more = {}) {
  std::vector<std::string> o = {"parallel.tp=2", "parallel.dp=8", "parallel.global_batch_size=16",
                                "parallel.zero_stage=" + std::to_string(zero),
                                "parallel.dp_bucket_params=100"};
  o.insert(o.end(), more.begin(), more.end());
  return small_llama(o);
}

TEST(GradBuckets, ABucketIsReducedOnceFullAfterTheOpThatFilledItAndTheRestAtTheFlush) {
  StageLowering s(bucketed(0));
  std::vector<GradSync> out;
  GradBuckets grads(s.rules, s.make, s.phase, out);
  s.add_op();
  grads.ready(60);
  EXPECT_TRUE(out.empty());
  const uint32_t filled = s.add_op();
  grads.ready(60);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].after, filled);
  EXPECT_EQ(out[0].op.kind, OpKind::kCollective);
  EXPECT_EQ(out[0].op.coll_op, coll::Op::kAllReduce);  // no ZeRO: every rank keeps all gradients
  EXPECT_EQ(out[0].op.dim, Dim::kDp);
  EXPECT_EQ(out[0].op.stream, Stream::kDp);
  EXPECT_EQ(out[0].op.bytes, 120 * s.rules.grad_bytes);  // the whole bucket, not its capacity
  EXPECT_EQ(s.label(out[0].op), "dp_grad_all_reduce");
  const uint32_t last = s.add_op();
  grads.ready(30);
  EXPECT_EQ(out.size(), 1u);
  grads.flush();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].after, last);
  EXPECT_EQ(out[1].op.bytes, 30 * s.rules.grad_bytes);
  grads.flush();  // nothing left
  EXPECT_EQ(out.size(), 2u);
}

TEST(GradBuckets, ZeroReduceScattersIntoShards) {
  StageLowering s(bucketed(1));
  std::vector<GradSync> out;
  GradBuckets grads(s.rules, s.make, s.phase, out);
  s.add_op();
  grads.ready(100);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].op.coll_op, coll::Op::kReduceScatter);
  EXPECT_EQ(s.label(out[0].op), "dp_grad_reduce_scatter");
}

TEST(GradBuckets, ContextParallelRanksSumWhatTheDpReductionLeftThem) {
  for (const int zero : {0, 1}) {
    SCOPED_TRACE(zero);
    StageLowering s(bucketed(zero, {"parallel.cp=2", "parallel.dp=4"}));
    std::vector<GradSync> out;
    GradBuckets grads(s.rules, s.make, s.phase, out);
    s.add_op();
    grads.ready(200);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].op.dim, Dim::kDp);
    const auto& cp = out[1].op;
    EXPECT_EQ(cp.dim, Dim::kCp);
    EXPECT_EQ(cp.coll_op, coll::Op::kAllReduce);
    EXPECT_EQ(cp.stream, Stream::kDp);  // in order after the DP reduction
    // The whole bucket without ZeRO, this rank's shard of it (1 / dp) with.
    EXPECT_EQ(cp.bytes, 200 * s.rules.grad_bytes / (zero == 0 ? 1 : 4));
    EXPECT_EQ(out[1].after, out[0].after);
  }
}

TEST(GradBuckets, ZeroOffloadCopiesEachReducedShardToTheHost) {
  StageLowering s(bucketed(1, {"offload.optimizer=CPU"}));
  std::vector<GradSync> out;
  GradBuckets grads(s.rules, s.make, s.phase, out);
  s.add_op();
  grads.ready(800);
  ASSERT_EQ(out.size(), 2u);
  const auto& copy = out[1].op;
  EXPECT_EQ(s.label(copy), "offload_grad_d2h");
  EXPECT_EQ(copy.kind, OpKind::kCompute);  // timed without the network
  EXPECT_EQ(copy.stream, Stream::kDp);
  const Bytes shard = 800 * s.rules.grad_bytes / 8;
  EXPECT_EQ(copy.bytes, shard);
  EXPECT_EQ(copy.duration,
            Time::from_seconds(static_cast<double>(shard) / s.rules.host.pcie_bytes_per_s));
}

TEST(GradBuckets, OneGpuReducesNothingButStillEmptiesItsBuckets) {
  // Without a DP or CP group there is nothing to reduce; under ZeRO-Offload the whole bucket
  // still goes to the host, bucket by bucket.
  StageLowering plain(bucketed(0, {"parallel.dp=1", "parallel.global_batch_size=2"}));
  std::vector<GradSync> none;
  GradBuckets quiet(plain.rules, plain.make, plain.phase, none);
  plain.add_op();
  quiet.ready(150);
  quiet.flush();
  EXPECT_TRUE(none.empty());

  StageLowering s(
      bucketed(0, {"parallel.dp=1", "parallel.global_batch_size=2", "offload.optimizer=CPU"}));
  std::vector<GradSync> out;
  GradBuckets grads(s.rules, s.make, s.phase, out);
  s.add_op();
  grads.ready(120);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].op.bytes, 120 * s.rules.grad_bytes);
  grads.ready(60);  // a fresh bucket: 60 < 100
  EXPECT_EQ(out.size(), 1u);
  grads.ready(50);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].op.bytes, 110 * s.rules.grad_bytes);
}

TEST(GradBuckets, DeepSpeedStageTwoAllReducesItsOwnBucketsOnTheComputeStream) {
  // DeepSpeed below ZeRO-3 all-reduces (reduce_scatter=false) reduce_bucket_size buckets, not
  // overlapped (overlap_comm=false).
  StageLowering s(testing_support::data_parallel("DEEPSPEED_ZERO", {}, 2));
  ASSERT_NE(s.rules.grad_rule.bucket_params, s.config.parallel().dp_bucket_params());
  std::vector<GradSync> out;
  GradBuckets grads(s.rules, s.make, s.phase, out);
  s.add_op();
  grads.ready(s.rules.grad_rule.bucket_params - 1);
  EXPECT_TRUE(out.empty());
  grads.ready(1);
  std::vector<workload::Op> reductions;
  for (const auto& g : out)
    if (g.op.kind == OpKind::kCollective) reductions.push_back(g.op);
  ASSERT_EQ(reductions.size(), 1u);
  EXPECT_EQ(reductions[0].coll_op, coll::Op::kAllReduce);
  EXPECT_EQ(reductions[0].stream, Stream::kCompute);
}

TEST(ExpertGradBuckets, ExpertGradientsFillTheirOwnBucketsReducedOverTheirGroup) {
  for (const int zero : {0, 1}) {
    SCOPED_TRACE(zero);
    StageLowering s(small_mixtral(
        {"parallel.zero_stage=" + std::to_string(zero), "parallel.dp_bucket_params=100"}));
    ASSERT_TRUE(s.rules.expert_groups);
    std::vector<GradSync> out;
    GradBuckets dense(s.rules, s.make, s.phase, out);
    ExpertGradBuckets experts(s.rules, s.make, s.phase, out);
    s.add_op();
    dense.ready(60);
    experts.ready(60);
    EXPECT_TRUE(out.empty());  // 120 between them, but neither bucket is full
    const uint32_t filled = s.add_op();
    experts.ready(50);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].after, filled);
    EXPECT_EQ(out[0].op.dim, Dim::kEdp);
    EXPECT_EQ(out[0].op.stream, Stream::kDp);
    EXPECT_EQ(out[0].op.bytes, 110 * s.rules.grad_bytes);
    EXPECT_EQ(out[0].op.coll_op, zero == 0 ? coll::Op::kAllReduce : coll::Op::kReduceScatter);
    EXPECT_EQ(s.label(out[0].op), zero == 0 ? "edp_grad_all_reduce" : "edp_grad_reduce_scatter");
    experts.flush();  // empty
    EXPECT_EQ(out.size(), 1u);
    dense.flush();
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[1].op.dim, Dim::kDp);
    EXPECT_EQ(out[1].op.bytes, 60 * s.rules.grad_bytes);
  }
}

}  // namespace
}  // namespace cs::lower
