// Software stacks through whole steps: FSDP and DeepSpeed layouts run; FSDP is slower than
// Megatron-TE on the same layout for the reasons modelled, each of which switches off;
// MEGATRON_TE's lowering is the one clustersim always ran. (Their ZeRO-3 passes, unit by unit:
// tests/lower/sharded_pass_test.cc.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/config/run_config.h"
#include "sim/config/stack_profile.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/stack.h"
#include "tests/support/lowering_fixtures.h"
#include "tests/support/run_fixtures.h"
#include "tests/support/test_helpers.h"

namespace cs::run {
namespace {

using clustersim::RunConfig;
using testing_support::data_parallel;
using testing_support::small_llama;
using testing_support::stage_work_of;
using workload::PhaseOps;

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

// The eager kernels PyTorch runs in its unvectorized loops (the norm's broadcast products and
// upcasts, the logits' upcast) lengthen the eager stacks' norm and loss lines, and only theirs:
// torch.compile's fused kernels and Megatron-TE have none, so the switch leaves them alone.
TEST(StackRun, UnvectorizedKernelsSlowOnlyTheEagerStacksNormAndLoss) {
  const std::string off = "effects.unvectorized_elementwise=false";
  for (const std::string stack : {"PYTORCH_FSDP", "DEEPSPEED_ZERO"}) {
    SCOPED_TRACE(stack);
    const auto on = simulate_step(data_parallel(stack), "test");
    const auto without = simulate_step(data_parallel(stack, {off}), "test");
    EXPECT_GT(on.iteration_time_s, without.iteration_time_s);
    for (const std::string group : {"norm", "loss"}) {
      EXPECT_GT(testing_support::group_seconds(on, group),
                testing_support::group_seconds(without, group))
          << group;
    }
    EXPECT_EQ(testing_support::group_seconds(on, "gemm"),
              testing_support::group_seconds(without, "gemm"));
  }
  for (const auto& same :
       {data_parallel("MEGATRON_TE"), data_parallel("PYTORCH_FSDP", {"torch_compile=true"})}) {
    auto switched = same;
    switched.mutable_effects()->set_unvectorized_elementwise(false);
    EXPECT_EQ(step(same), step(switched));
  }
}

// The optimizer steps run through multi_tensor_apply in every stack (Megatron's and DeepSpeed's
// fused Adam, torchtitan's fused AdamW and foreach scale), and so do Megatron's and torchtitan's
// gradient norms (DeepSpeed's is a per-gradient fp64 norm): on an H200, whose profile measures
// that share of bandwidth, those take longer with the effect on and nothing else moves; the h100
// profile has no such figure.
TEST(StackRun, MultiTensorKernelsSlowOnlyTheOptimizerWhereTheProfileMeasuresThem) {
  const std::string off = "effects.multi_tensor_apply=false";
  for (const std::string stack : {"MEGATRON_TE", "PYTORCH_FSDP", "DEEPSPEED_ZERO"}) {
    SCOPED_TRACE(stack);
    const auto on = simulate_step(data_parallel(stack, {"cluster.gpu=h200"}), "test");
    const auto without = simulate_step(data_parallel(stack, {"cluster.gpu=h200", off}), "test");
    EXPECT_GT(on.iteration_time_s, without.iteration_time_s);
    const auto seconds = [&](const auto& r, const std::string& group) {
      return testing_support::group_seconds(r, group);
    };
    EXPECT_GT(seconds(on, "optimizer"), seconds(without, "optimizer"));
    if (stack == "DEEPSPEED_ZERO")
      EXPECT_EQ(seconds(on, "grad_norm"), seconds(without, "grad_norm"));
    else
      EXPECT_GT(seconds(on, "grad_norm"), seconds(without, "grad_norm"));
    for (const std::string group : {"gemm", "norm", "elementwise"})
      EXPECT_EQ(seconds(on, group), seconds(without, group)) << group;
    EXPECT_EQ(step(data_parallel(stack)), step(data_parallel(stack, {off})));
  }
}

// A stack's GRAD_NORM rows replace Megatron's multi-tensor norm: DeepSpeed's per-gradient
// .double().norm(2) copies each bf16 gradient to fp64 (18 bytes a parameter against 4), so its
// grad_norm line is the longer; switched off (effects.grad_norm), no stack computes one.
TEST(StackRun, EachStackComputesItsOwnGradientNorm) {
  const auto norm = [](const std::string& stack, std::vector<std::string> extra = {}) {
    return testing_support::group_seconds(simulate_step(data_parallel(stack, extra), "test"),
                                          "grad_norm");
  };
  EXPECT_GT(norm("DEEPSPEED_ZERO"), 2 * norm("MEGATRON_TE"));
  for (const std::string stack : {"MEGATRON_TE", "PYTORCH_FSDP", "DEEPSPEED_ZERO"})
    EXPECT_EQ(norm(stack, {"effects.grad_norm=false"}), 0) << stack;
}

// FSDP2 copies each unit's gradients into its reduce-scatter buffer and accumulates its shard on
// the reduce-scatter stream, beside the backward's kernels: holding the GPU, they lengthen the
// compute stream by at most their own time, and the step by no more than that; off, they run
// beside it for free.
TEST(StackRun, SideStreamKernelsHoldTheComputeStreamUnlessSwitchedOff) {
  const auto held = simulate_step(data_parallel("PYTORCH_FSDP"), "test");
  const auto free = simulate_step(
      data_parallel("PYTORCH_FSDP", {"effects.side_stream_contention=false"}), "test");
  double side = 0;
  for (const auto& s : held.stages)
    side += s.side_stream_s / static_cast<double>(held.stages.size());
  ASSERT_GT(side, 0);
  EXPECT_GT(held.side_stream_hold_s, 0);
  EXPECT_LE(held.side_stream_hold_s, side * (1 + 1e-9));
  EXPECT_EQ(free.side_stream_hold_s, 0);
  EXPECT_GT(held.iteration_time_s, free.iteration_time_s);
  EXPECT_LE(held.iteration_time_s, free.iteration_time_s + side * (1 + 1e-9));
  EXPECT_NE(testing_support::report_json(held).find("\"side_stream_hold_s\""), std::string::npos);
  // Megatron-TE runs no kernel on a side stream: nothing to hold.
  EXPECT_EQ(simulate_step(data_parallel("MEGATRON_TE"), "test").side_stream_hold_s, 0);
}

// A model small enough that eager PyTorch's host launches set the pace (8 layers, hidden 256,
// 128 tokens).
const std::vector<std::string> kTiny = {
    "model.num_layers=8",     "model.hidden_size=256", "model.ffn_hidden_size=512",
    "model.num_heads=4",      "model.num_kv_heads=4",  "model.seq_length=128",
    "model.vocab_size=32000", "parallel.dp=8",         "parallel.global_batch_size=8"};
RunConfig tiny_fsdp(std::vector<std::string> extra = {}) {
  extra.insert(extra.begin(), kTiny.begin(), kTiny.end());
  return full_size("llama3-8b", "PYTORCH_FSDP", extra);
}

// The tiny model: the host dispatch line holds most of the step, switching it off leaves the
// kernels' time, and with the stack's three parts off the step is still exactly Megatron-TE's.
TEST(StackRun, TinyFsdpStepsAreHostBoundAndTheHostGoesWithTheStacksParts) {
  const auto host = simulate_step(tiny_fsdp(), "test");
  const auto ahead = simulate_step(tiny_fsdp({"effects.host_dispatch=false"}), "test");
  EXPECT_GT(host.host_dispatch_s, 0.5 * host.iteration_time_s);
  EXPECT_EQ(ahead.host_dispatch_s, 0);
  EXPECT_GT(host.iteration_time_s, 3 * ahead.iteration_time_s);
  EXPECT_NE(testing_support::report_json(host).find("\"host_dispatch_s\""), std::string::npos);
  const double megatron = step(full_size("llama3-8b", "MEGATRON_TE", kTiny));
  EXPECT_EQ(step(tiny_fsdp({"effects.stack_kernels=false", "effects.stack_attention=false",
                            "effects.stack_sharding=false"})),
            megatron);
}

// A host CPU that issues each op twice as slowly (host.host_op_time_factor, Grace's 2.5-2.75)
// runs the same step as the stack's host figures doubled on the x86 host they were measured on.
TEST(StackRun, TheHostsCpuScalesTheStacksHostFigures) {
  const std::string slow_host = testing_support::temp_file("h100-slow-host.textproto", R"pb(
    name: "h100-slow-host"
    based_on: "h100"
    host { host_op_time_factor: 2 }
  )pb");
  const StackProfile fsdp = load_stack_profile(default_stack_profile(clustersim::PYTORCH_FSDP));
  const double on_slow_host = step(tiny_fsdp({"cluster.gpu=" + slow_host}));
  EXPECT_DOUBLE_EQ(on_slow_host,
                   step(tiny_fsdp({"stack_profile.host_us_per_kernel=" +
                                       std::to_string(2 * fsdp.host_us_per_kernel()),
                                   "stack_profile.host_us_per_layer_pass=" +
                                       std::to_string(2 * fsdp.host_us_per_layer_pass())})));
  EXPECT_GT(on_slow_host, 1.5 * step(tiny_fsdp()));
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
    const auto a = stage_work_of(raw), b = stage_work_of(resolved);
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
