// A stage's whole lowering against laws it must keep: the gradient buckets and the parameter
// gathers carry every parameter of the stage exactly once, each layer is recomputed once whatever
// the checkpointed segment, and the optimizer tail gathers what ZeRO sharded.
#include "sim/lower/stage_work.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/workload/layer_ops.h"
#include "sim/workload/model_math.h"
#include "tests/support/lowering_fixtures.h"
#include "tests/support/moe_fixtures.h"

namespace cs::lower {
namespace {

using testing_support::small_llama;
using testing_support::small_mixtral;
using testing_support::stage_work_of;
using workload::Dim;
using workload::OpClass;

// Parameters whose gradients the stage's GradSyncs reduce over `dim` (bytes / gradient bytes).
int64_t reduced_params(const clustersim::RunConfig& c, const workload::StageWork& work, Dim dim) {
  const auto grad_bytes = static_cast<Bytes>(workload::main_grad_bytes(c));
  Bytes bytes = 0;
  for (const auto& chunk : work.chunks)
    for (const auto& g : chunk.grad_sync)
      if (g.op.kind == workload::OpKind::kCollective && g.op.dim == dim) bytes += g.op.bytes;
  return bytes / grad_bytes;
}

TEST(StageWork, GradientBucketsCarryEveryParameterOfTheStageOnce) {
  const auto c =
      small_llama({"model.num_layers=8", "parallel.pp=2", "parallel.dp=8", "parallel.zero_stage=0",
                   "parallel.global_batch_size=16", "parallel.schedule=INTERLEAVED",
                   "parallel.virtual_stages=2", "parallel.dp_bucket_params=250000000"});
  // A layer is about 109M parameters per TP rank and a chunk holds 2: buckets fill over several
  // layers, and a chunk's last one may be partly filled.
  for (int32_t stage = 0; stage < 2; ++stage) {
    SCOPED_TRACE(stage);
    EXPECT_EQ(reduced_params(c, stage_work_of(c, stage), Dim::kDp),
              workload::stage_params(c, stage));
  }
}

TEST(StageWork, RoutedExpertsGradientsAreReducedOverTheirOwnGroupOnce) {
  const auto c = small_mixtral({"parallel.zero_stage=0", "parallel.dp_bucket_params=250000000"});
  for (int32_t stage = 0; stage < 2; ++stage) {
    SCOPED_TRACE(stage);
    const auto work = stage_work_of(c, stage);
    const int64_t experts = workload::stage_expert_params(c, stage);
    ASSERT_GT(experts, 0);
    EXPECT_EQ(reduced_params(c, work, Dim::kEdp), experts);
    EXPECT_EQ(reduced_params(c, work, Dim::kDp), workload::stage_params(c, stage) - experts);
  }
}

TEST(StageWork, TheUpdatedParametersAreGatheredOnceUnderTheForwardOrAfterTheOptimizer) {
  for (const bool overlap : {true, false}) {
    SCOPED_TRACE(overlap);
    const auto c =
        small_llama({"parallel.pp=2", "parallel.dp=8", "parallel.zero_stage=1",
                     "parallel.global_batch_size=16", "parallel.dp_bucket_params=40000000",
                     std::string("parallel.overlap_param_gather=") + (overlap ? "true" : "false")});
    for (int32_t stage = 0; stage < 2; ++stage) {
      const auto work = stage_work_of(c, stage);
      Bytes under_forward = 0, after_optimizer = 0;
      for (const auto& chunk : work.chunks)
        for (const auto& g : chunk.param_gather) under_forward += g.op.bytes;
      for (const auto& op : work.after_optimizer)
        if (op.coll_op == coll::Op::kAllGather && op.dim == Dim::kDp) after_optimizer += op.bytes;
      const Bytes all = 2 * workload::stage_params(c, stage);  // bf16
      EXPECT_EQ(under_forward, overlap ? all : 0);
      EXPECT_EQ(after_optimizer, overlap ? 0 : all);
    }
  }
}

TEST(StageWork, ZeroGathersTheRoutedExpertsOverTheirGroupAfterTheOptimizer) {
  const auto c = small_mixtral({"parallel.zero_stage=1"});
  const auto work = stage_work_of(c, 0);
  Bytes edp = 0;
  for (const auto& op : work.after_optimizer)
    if (op.dim == Dim::kEdp) edp += op.bytes;
  EXPECT_EQ(edp, 2 * workload::stage_expert_params(c, 0));
}

TEST(StageWork, ZeroOffloadStepsOnTheHostAndCopiesTheShardBack) {
  const auto c = small_llama({"parallel.dp=8", "parallel.zero_stage=1",
                              "parallel.global_batch_size=16", "offload.optimizer=CPU"});
  const auto work = stage_work_of(c, 0);
  ASSERT_EQ(work.optimizer.size(), 1u);
  EXPECT_EQ(work.labels[work.optimizer[0].label], "cpu_adam");
  ASSERT_FALSE(work.after_optimizer.empty());
  const auto& back = work.after_optimizer[0];
  EXPECT_EQ(work.labels[back.label], "offload_param_h2d");
  EXPECT_EQ(back.bytes, 2 * (workload::stage_params(c, 0) / 8));  // the bf16 shard
}

// Runs of consecutive recompute ops in the chunk's backward.
int recompute_runs(const workload::PhaseOps& phase, int* ops) {
  int runs = 0;
  bool in_run = false;
  *ops = 0;
  for (const auto& e : phase.ops) {
    const bool r = e.op.op_class == OpClass::kRecompute;
    runs += r && !in_run;
    *ops += r;
    in_run = r;
  }
  return runs;
}

TEST(StageWork, EachLayerIsRecomputedOnceWhateverTheCheckpointedSegment) {
  // 4 layers in segments of k: ceil(4 / k) runs of recompute, each before the backward of its
  // segment's last layer, and the same recomputed ops in all.
  int ops_k1 = 0;
  for (const int k : {1, 2, 3, 4}) {
    SCOPED_TRACE(k);
    const auto c = small_llama({"parallel.tp=1", "parallel.sequence_parallel=false",
                                "parallel.dp=8", "parallel.global_batch_size=16",
                                "parallel.checkpoint_every_k_layers=" + std::to_string(k)});
    int ops = 0;
    EXPECT_EQ(recompute_runs(stage_work_of(c).chunks[0].backward, &ops), (4 + k - 1) / k);
    if (k == 1) ops_k1 = ops;
    EXPECT_GT(ops, 0);
    EXPECT_EQ(ops, ops_k1);
  }
}

TEST(StageWork, PhaseCostsSeparateTheWeightGradientsOnlyWhenSplit) {
  const auto c = small_llama({"parallel.dp=8", "parallel.global_batch_size=16"});
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"), compute::cost_options(c));
  const StageCosts joined = phase_costs(build_stage_work(c, 0, cost, false));
  const StageCosts split = phase_costs(build_stage_work(c, 0, cost, true));
  EXPECT_EQ(joined.t_w, 0);
  EXPECT_GT(split.t_w, 0);
  EXPECT_DOUBLE_EQ(joined.t_f, split.t_f);
  EXPECT_NEAR(split.t_b + split.t_w, joined.t_b, 1e-12 * joined.t_b);
}

}  // namespace
}  // namespace cs::lower
