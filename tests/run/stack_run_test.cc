// Software stacks through whole steps: FSDP and DeepSpeed layouts run; their ZeRO-3 passes gather
// and reduce unit by unit as each framework's hooks do; FSDP is slower than Megatron-TE on the
// same layout for the reasons modelled, each of which switches off; MEGATRON_TE's lowering is the
// one clustersim always ran.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/compute/gpu_profile.h"
#include "sim/config/run_config.h"
#include "sim/lower/stage_work.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/model_math.h"
#include "sim/workload/stack.h"
#include "tests/support/run_fixtures.h"

namespace cs::run {
namespace {

using clustersim::RunConfig;
using testing_support::small_llama;
using workload::OpKind;
using workload::PhaseOps;
using workload::Stream;

// Llama 3 8B's layers (4 of 2,048 tokens) as FSDP and DeepSpeed run them: TP 1, ZeRO `zero` over
// the 8 GPUs of one server, two microbatches.
RunConfig data_parallel(const std::string& stack, std::vector<std::string> extra = {},
                        int zero = 3) {
  std::vector<std::string> o = {"parallel.tp=1",
                                "parallel.dp=8",
                                "parallel.zero_stage=" + std::to_string(zero),
                                "parallel.sequence_parallel=false",
                                "parallel.global_batch_size=16",
                                "software_stack=" + stack};
  o.insert(o.end(), extra.begin(), extra.end());
  RunConfig c = small_llama(o);
  workload::resolve_stack(c, "test");
  return c;
}

// The whole llama3-8b (or `preset`) on 64 H100s, TP 1, ZeRO-3, one microbatch per GPU, on the
// analytical network (the layouts of issue 25's held-out FSDP comparison).
RunConfig full_size(const std::string& preset, const std::string& stack,
                    std::vector<std::string> extra = {}) {
  std::vector<std::string> o = {"parallel.tp=1",
                                "parallel.pp=1",
                                "parallel.dp=64",
                                "parallel.zero_stage=3",
                                "parallel.sequence_parallel=false",
                                "parallel.global_batch_size=64",
                                "network=ANALYTICAL",
                                "cluster.topology=dgx-h100",
                                "software_stack=" + stack};
  o.insert(o.end(), extra.begin(), extra.end());
  return load_run_config("", preset, o).config;
}

workload::StageWork work_of(const RunConfig& c) {
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"), compute::cost_options(c));
  return lower::build_stage_work(c, 0, cost, false);
}

int gathers(const PhaseOps& phase) {
  int n = 0;
  for (const auto& e : phase.ops)
    n += e.op.kind == OpKind::kCollective && e.op.coll_op == coll::Op::kAllGather;
  return n;
}
int reductions(const PhaseOps& phase) {
  int n = 0;
  for (const auto& e : phase.ops) n += e.grad_reduction;
  return n;
}
// Phase-op indices of the all-gathers, in order.
std::vector<int32_t> gather_indices(const PhaseOps& phase) {
  std::vector<int32_t> out;
  for (std::size_t i = 0; i < phase.ops.size(); ++i)
    if (phase.ops[i].op.kind == OpKind::kCollective &&
        phase.ops[i].op.coll_op == coll::Op::kAllGather)
      out.push_back(static_cast<int32_t>(i));
  return out;
}

double step(const RunConfig& c) {
  return simulate_step(c, "test").iteration_time_s;
}

TEST(StackRun, FsdpLayoutsOfLlama3_8bAnd70bRun) {
  const auto r8 = simulate_step(full_size("llama3-8b", "PYTORCH_FSDP"), "test");
  EXPECT_EQ(r8.software_stack, "PYTORCH_FSDP (pytorch_fsdp2)");
  EXPECT_EQ(r8.gpus, 64);
  const auto meg8 = simulate_step(full_size("llama3-8b", "MEGATRON_TE"), "test");
  EXPECT_GT(r8.iteration_time_s, meg8.iteration_time_s);
  const auto r70 = simulate_step(
      full_size("llama3-70b", "PYTORCH_FSDP", {"parallel.recompute=FULL", "torch_compile=true"}),
      "test");
  EXPECT_EQ(r70.software_stack, "PYTORCH_FSDP (pytorch_fsdp2, torch.compile)");
  EXPECT_GT(r70.iteration_time_s, r8.iteration_time_s);
  EXPECT_NE(testing_support::report_json(r70).find("\"software_stack\""), std::string::npos);
}

TEST(StackRun, DeepSpeedZero2And3LayoutsRun) {
  for (int zero : {2, 3}) {
    const auto r = simulate_step(data_parallel("DEEPSPEED_ZERO", {}, zero), "test");
    EXPECT_EQ(r.software_stack, "DEEPSPEED_ZERO (deepspeed_zero)");
    EXPECT_GT(r.iteration_time_s, 0);
  }
}

TEST(StackRun, Fsdp2GathersEachUnitAheadAndReducesItAfterItsBackward) {
  const RunConfig c = data_parallel("PYTORCH_FSDP");
  const auto work = work_of(c);
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

TEST(StackRun, Fsdp1GathersItsRootOnceAndDeepSpeedFetchesModules) {
  const auto fsdp1 = work_of(data_parallel("PYTORCH_FSDP", {"stack_variant=pytorch_fsdp1"}));
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
  const auto ds = work_of(data_parallel("DEEPSPEED_ZERO"));
  const auto& c3 = ds.chunks[0];
  EXPECT_EQ(gathers(c3.forward), 14);
  EXPECT_EQ(gathers(c3.backward), 13);
  EXPECT_EQ(reductions(c3.backward), 3);
}

TEST(StackRun, DeepSpeedZero2AllReducesBucketsOnTheComputeStreamAndSyncsAfterTheStep) {
  const auto work = work_of(data_parallel("DEEPSPEED_ZERO", {}, 2));
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
  const RunConfig c = data_parallel("DEEPSPEED_ZERO", {}, 2);
  ASSERT_FALSE(all_reduces.empty());
  EXPECT_EQ(all_reduces[0], 2 * (workload::padded_vocab(c.model(), 1) * 4096 + 4096));
  ASSERT_EQ(work.after_optimizer.size(), 1u);
  EXPECT_EQ(work.after_optimizer[0].coll_op, coll::Op::kAllGather);
}

TEST(StackRun, FsdpIsSlowerForTheReasonsModelledAndEachSwitchesOff) {
  const double megatron = step(data_parallel("MEGATRON_TE"));
  const auto fsdp = simulate_step(data_parallel("PYTORCH_FSDP"), "test");
  EXPECT_GT(fsdp.iteration_time_s, megatron);
  const std::vector<std::string> all_off = {"effects.stack_kernels=false",
                                            "effects.stack_attention=false",
                                            "effects.stack_sharding=false"};
  // Everything a stack brings off: exactly Megatron-TE's step.
  EXPECT_EQ(step(data_parallel("PYTORCH_FSDP", all_off)), megatron);
  // The eager kernels and FlashAttention-2 each cost time: off, the step is shorter; alone, it
  // is longer than Megatron-TE's.
  for (std::size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(all_off[i]);
    EXPECT_LT(step(data_parallel("PYTORCH_FSDP", {all_off[i]})), fsdp.iteration_time_s);
    std::vector<std::string> only = all_off;
    only.erase(only.begin() + static_cast<std::ptrdiff_t>(i));
    EXPECT_GT(step(data_parallel("PYTORCH_FSDP", only)), megatron);
  }
  // FSDP's sharding rules bring their copies (and their own overlap, which may expose less than
  // the generic ZeRO-3 lowering): off, the copies are gone.
  EXPECT_GT(testing_support::group_seconds(fsdp, "shard_copy"), 0);
  const auto no_sharding = simulate_step(data_parallel("PYTORCH_FSDP", {all_off[2]}), "test");
  EXPECT_EQ(testing_support::group_seconds(no_sharding, "shard_copy"), 0);
  EXPECT_NE(no_sharding.iteration_time_s, fsdp.iteration_time_s);
  // torch.compile fuses the eager chains back: faster than eager, slower than Megatron-TE (its
  // FlashAttention-2, copies and per-unit gathers remain).
  const double compiled = step(data_parallel("PYTORCH_FSDP", {"torch_compile=true"}));
  EXPECT_LT(compiled, fsdp.iteration_time_s);
  EXPECT_GT(compiled, megatron);
}

TEST(StackRun, MegatronTeFileLowersExactlyAsTheProtoDefaults) {
  // The resolved megatron_te profile against a config never resolved (the defaults are the
  // lowering clustersim has always run): the same ops with the same times, on a ZeRO-3 and a
  // ZeRO-1 layout.
  for (const int zero : {1, 3}) {
    RunConfig raw = small_llama({"parallel.zero_stage=" + std::to_string(zero), "parallel.dp=4",
                                 "parallel.global_batch_size=8"});
    RunConfig resolved = raw;
    workload::resolve_stack(resolved, "test");
    const auto a = work_of(raw), b = work_of(resolved);
    ASSERT_EQ(a.chunks.size(), b.chunks.size());
    for (std::size_t c = 0; c < a.chunks.size(); ++c) {
      using Member = PhaseOps workload::ChunkWork::*;
      for (const Member phase : {&workload::ChunkWork::forward, &workload::ChunkWork::backward}) {
        const auto& pa = a.chunks[c].*phase;
        const auto& pb = b.chunks[c].*phase;
        ASSERT_EQ(pa.ops.size(), pb.ops.size());
        for (std::size_t i = 0; i < pa.ops.size(); ++i) {
          EXPECT_EQ(pa.ops[i].op.duration, pb.ops[i].op.duration);
          EXPECT_EQ(pa.ops[i].after, pb.ops[i].after);
        }
      }
      EXPECT_EQ(a.chunks[c].grad_sync.size(), b.chunks[c].grad_sync.size());
    }
    EXPECT_EQ(step(raw), step(resolved));
  }
}

}  // namespace
}  // namespace cs::run
