// A software stack's own ZeRO-3 passes: FSDP gathers each unit ahead and reduces it after its
// backward; FSDP1 keeps its root; DeepSpeed fetches modules and prefetches by parameter count;
// DeepSpeed below ZeRO-3 all-reduces its buckets on the compute stream.
#include "sim/lower/sharded_pass.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "sim/workload/model_math.h"
#include "tests/support/lowering_fixtures.h"

namespace cs::lower {
namespace {

using testing_support::data_parallel;
using testing_support::gather_indices;
using testing_support::gathers;
using testing_support::reductions;
using testing_support::stage_work_of;
using workload::OpKind;
using workload::Stream;

TEST(ShardedPass, Fsdp2GathersEachUnitAheadAndReducesItAfterItsBackward) {
  const auto work = stage_work_of(data_parallel("PYTORCH_FSDP"));
  ASSERT_EQ(work.chunks.size(), 1u);
  const auto& chunk = work.chunks[0];
  // Forward: the embedding, 4 blocks and [norm, output]; backward: the blocks and the embedding
  // again ([norm, output] is not resharded after forward); one reduce-scatter per unit.
  EXPECT_EQ(gathers(chunk.forward), 6);
  EXPECT_EQ(gathers(chunk.backward), 5);
  EXPECT_EQ(reductions(chunk.backward), 6);
  EXPECT_TRUE(chunk.grad_sync.empty());
  // Implicit forward prefetch: block i's all-gather (its copy-in first) waits for the copy-out of
  // unit i - 2.
  const auto g = gather_indices(chunk.forward);
  const auto& gather = chunk.forward.ops[static_cast<std::size_t>(g[3])];  // block 2's
  ASSERT_EQ(gather.after, workload::PhaseOp::kPrevious);
  const auto& copy_in = chunk.forward.ops[static_cast<std::size_t>(g[3] - 1)];
  EXPECT_EQ(work.labels[copy_in.op.label], "fsdp_all_gather_copy_in");
  EXPECT_EQ(copy_in.op.stream, Stream::kDp);
  ASSERT_GE(copy_in.after, 0);
  const auto& waited = chunk.forward.ops[static_cast<std::size_t>(copy_in.after)].op;
  EXPECT_EQ(work.labels[waited.label], "fsdp_all_gather_copy_out");
  EXPECT_EQ(waited.stream, Stream::kCompute);
  // Every collective and side-stream copy is on the DP stream, each copy-out on the compute
  // stream; a reduce-scatter is issued between the gathers, not after them.
  const auto r = std::find_if(chunk.backward.ops.begin(), chunk.backward.ops.end(),
                              [](const auto& e) { return e.grad_reduction; });
  const auto later_gather = std::find_if(r, chunk.backward.ops.end(), [](const auto& e) {
    return e.op.kind == OpKind::kCollective && e.op.coll_op == coll::Op::kAllGather;
  });
  EXPECT_NE(later_gather, chunk.backward.ops.end());
}

TEST(ShardedPass, Fsdp1GathersItsRootOnceAndDeepSpeedFetchesModules) {
  const auto fsdp1 = stage_work_of(data_parallel("PYTORCH_FSDP", {"stack_variant=pytorch_fsdp1"}));
  const auto& c1 = fsdp1.chunks[0];
  EXPECT_EQ(gathers(c1.forward), 5);   // the root (embedding, norm, output), 4 blocks
  EXPECT_EQ(gathers(c1.backward), 4);  // the root keeps its weights
  EXPECT_EQ(reductions(c1.backward), 5);
  // DeepSpeed ZeRO-3 fetches per linear layer and, at each fetch, prefetches the next
  // 5e7 parameters of the trace in one all-gather. Forward: the embedding alone, then per block
  // {q, k, v, o, gate} (42M + 58.7M), {up}, {down}, and the output layer: 1 + 4 x 3 + 1.
  // Backward (down, gate, up, o, q, k, v a block): the output layer is reused within
  // stage3_max_reuse_distance and not gathered; {down}, {gate}, {up}, then {o, q, k, v and the
  // next block's down}, ..., the last with the embedding: 13. Gradients in 5e8-parameter buckets
  // (the output layer's 525M, blocks 3-1, block 0 and the embedding).
  const auto ds = stage_work_of(data_parallel("DEEPSPEED_ZERO"));
  const auto& c3 = ds.chunks[0];
  EXPECT_EQ(gathers(c3.forward), 14);
  EXPECT_EQ(gathers(c3.backward), 13);
  EXPECT_EQ(reductions(c3.backward), 3);
}

TEST(ShardedPass, DeepSpeedZero2AllReducesBucketsOnTheComputeStreamAndSyncsAfterTheStep) {
  const clustersim::RunConfig c = data_parallel("DEEPSPEED_ZERO", {}, 2);
  const auto work = stage_work_of(c);
  const auto& chunk = work.chunks[0];
  EXPECT_TRUE(work.grad_sync_after_backward);
  EXPECT_TRUE(chunk.param_gather.empty());
  std::vector<Bytes> all_reduces;
  for (const auto& g : chunk.grad_sync) {
    if (g.op.kind != OpKind::kCollective) continue;
    EXPECT_EQ(g.op.coll_op, coll::Op::kAllReduce);
    EXPECT_EQ(g.op.stream, Stream::kCompute);
    all_reduces.push_back(g.op.bytes);
  }
  // The first bucket is the output layer and final norm (over reduce_bucket_size alone), in bf16.
  ASSERT_FALSE(all_reduces.empty());
  EXPECT_EQ(all_reduces[0], 2 * (workload::padded_vocab(c.model(), 1) * 4096 + 4096));
  ASSERT_EQ(work.after_optimizer.size(), 1u);
  EXPECT_EQ(work.after_optimizer[0].coll_op, coll::Op::kAllGather);
}

TEST(ShardedPass, LayoutsTheStackLimitsRefuseAreALogicError) {
  clustersim::RunConfig c = data_parallel("PYTORCH_FSDP");
  c.mutable_parallel()->set_pp(2);  // resolve_stack refuses it; build_sharded_chunk must too
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  workload::StageWork work;
  OpMaker make(c, cost, work);
  workload::ChunkWork chunk;
  EXPECT_THROW(build_sharded_chunk(c, make, {}, 2, chunk), std::logic_error);
}

}  // namespace
}  // namespace cs::lower
