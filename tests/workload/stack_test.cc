// Tests of a run's software stack: which profile a config resolves to, what each stack refuses and
// why, and the kernels a stack's profile puts into a layer.
#include "sim/workload/stack.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "sim/config/run_config.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/memory.h"
#include "tests/support/test_helpers.h"

namespace cs::workload {
namespace {

using clustersim::RunConfig;
using testing_support::error_of;

// Llama 3 8B as FSDP runs it: TP 1, ZeRO-3 over 8 GPUs, plus `extra` overrides; not resolved.
RunConfig fsdp_layout(const std::string& stack, std::vector<std::string> extra = {}) {
  std::vector<std::string> o = {"parallel.tp=1",
                                "parallel.dp=8",
                                "parallel.zero_stage=3",
                                "parallel.sequence_parallel=false",
                                "parallel.global_batch_size=8",
                                "software_stack=" + stack};
  o.insert(o.end(), extra.begin(), extra.end());
  return load_run_config("", "llama3-8b", o).config;
}

RunConfig resolved(RunConfig c) {
  resolve_stack(c, "test");
  return c;
}

// HBM bytes per element of the layer's norm kernels in `phase` (two norms a layer).
double norm_bytes_per_element(const RunConfig& c, Phase phase) {
  double bytes = 0;
  for (const LayerOp& op : layer_ops(c, phase))
    if (!op.is_comm && op.kernel.group == compute::KernelGroup::kNorm) bytes += op.kernel.bytes;
  const double elements = static_cast<double>(c.model().seq_length()) * c.model().hidden_size();
  return bytes / (2 * elements);
}

double gemm_flops(const RunConfig& c, Phase phase) {
  double flops = 0;
  for (const LayerOp& op : layer_ops(c, phase))
    if (!op.is_comm && op.kernel.kind == compute::KernelKind::kGemm) flops += op.kernel.flops;
  return flops;
}

int count_named(const RunConfig& c, Phase phase, std::string_view prefix) {
  int n = 0;
  for (const LayerOp& op : layer_ops(c, phase))
    if (!op.is_comm && op.kernel.name.starts_with(prefix)) ++n;
  return n;
}

TEST(Stack, EachStackResolvesToItsDefaultProfileOrTheNamedVariant) {
  EXPECT_EQ(resolved(fsdp_layout("MEGATRON_TE")).resolved_stack().name(), "megatron_te");
  EXPECT_EQ(resolved(fsdp_layout("PYTORCH_FSDP")).resolved_stack().name(), "pytorch_fsdp2");
  EXPECT_EQ(resolved(fsdp_layout("DEEPSPEED_ZERO")).resolved_stack().name(), "deepspeed_zero");
  const RunConfig v1 = resolved(fsdp_layout("PYTORCH_FSDP", {"stack_variant=pytorch_fsdp1"}));
  EXPECT_EQ(v1.resolved_stack().name(), "pytorch_fsdp1");
  EXPECT_EQ(stack_label(v1), "PYTORCH_FSDP (pytorch_fsdp1)");
  EXPECT_EQ(stack_label(resolved(fsdp_layout("PYTORCH_FSDP", {"torch_compile=true"}))),
            "PYTORCH_FSDP (pytorch_fsdp2, torch.compile)");
  EXPECT_EQ(stack_label(resolved(fsdp_layout("MEGATRON_TE"))), "MEGATRON_TE");
  // Resolving again changes nothing.
  const RunConfig once = resolved(fsdp_layout("PYTORCH_FSDP", {"torch_compile=true"}));
  EXPECT_EQ(resolved(once).SerializeAsString(), once.SerializeAsString());
}

TEST(Stack, WrongVariantAndUncompilableStackAreRefused) {
  RunConfig c = fsdp_layout("DEEPSPEED_ZERO", {"stack_variant=pytorch_fsdp1"});
  EXPECT_NE(error_of([&] { resolve_stack(c, "cfg"); })
                .find("'pytorch_fsdp1' is a PYTORCH_FSDP profile but software_stack is "
                      "DEEPSPEED_ZERO"),
            std::string::npos);
  RunConfig d = fsdp_layout("DEEPSPEED_ZERO", {"torch_compile=true"});
  EXPECT_NE(error_of([&] { resolve_stack(d, "cfg"); }).find("lists no compiled_kernels"),
            std::string::npos);
  RunConfig e = fsdp_layout("PYTORCH_FSDP", {"stack_variant=no_such_stack"});
  EXPECT_NE(error_of([&] { resolve_stack(e, "cfg"); }).find("unknown stack profile"),
            std::string::npos);
}

TEST(Stack, LayoutsAStackCannotRunAreRefusedWithTheReason) {
  struct Case {
    std::string stack;
    std::vector<std::string> set;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"PYTORCH_FSDP", {"parallel.tp=2"}, "cannot run parallel.tp = 2 (allowed: 1): torchtitan"},
      {"PYTORCH_FSDP", {"parallel.zero_stage=1"}, "parallel.zero_stage = 1 (allowed: 3)"},
      {"PYTORCH_FSDP",
       {"precision=FP8"},
       "precision = FP8 (allowed: BF16): FP8 here is Transformer"},
      {"PYTORCH_FSDP", {"parallel.recompute=SELECTIVE"}, "parallel.recompute = SELECTIVE"},
      {"PYTORCH_FSDP", {"model.norm=LAYERNORM"}, "model.norm = LAYERNORM (allowed: RMSNORM)"},
      {"PYTORCH_FSDP", {"model.moe.num_experts=8"}, "model.moe = set (allowed: unset)"},
      {"DEEPSPEED_ZERO",
       {"parallel.pp=2"},
       "parallel.pp = 2 (allowed: 1): DeepSpeed's PipelineEngine"},
      {"DEEPSPEED_ZERO", {"parallel.zero_stage=0"}, "parallel.zero_stage = 0 (allowed: 1, 2, 3)"},
      {"DEEPSPEED_ZERO",
       {"parallel.recompute_modules=LAYERNORM"},
       "parallel.recompute_modules = LAYERNORM (allowed: \"\")"},
      {"DEEPSPEED_ZERO", {"parallel.recompute=OP_SELECTIVE"}, "parallel.recompute = OP_SELECTIVE"},
      {"MEGATRON_TE",
       {"parallel.recompute=OP_SELECTIVE"},
       "parallel.recompute = OP_SELECTIVE (allowed: NONE, SELECTIVE, FULL): Megatron-Core's"},
  };
  for (const Case& k : cases) {
    RunConfig c = fsdp_layout(k.stack, k.set);
    const std::string e = error_of([&] { resolve_stack(c, "cfg"); });
    EXPECT_NE(e.find(k.expect), std::string::npos) << e;
    EXPECT_EQ(e.rfind("cfg: software_stack " + k.stack + " (stacks/", 0), 0u) << e;
  }
  // What they can run passes: ZeRO-1, 2 and 3 under DeepSpeed, FSDP's own layout with its
  // checkpointing modes, and Megatron anything but op-level checkpointing.
  for (const char* zero : {"1", "2", "3"})
    EXPECT_NO_THROW(
        resolved(fsdp_layout("DEEPSPEED_ZERO", {std::string("parallel.zero_stage=") + zero})));
  EXPECT_NO_THROW(resolved(fsdp_layout("PYTORCH_FSDP", {"parallel.recompute=FULL"})));
  EXPECT_NO_THROW(resolved(fsdp_layout("PYTORCH_FSDP", {"parallel.recompute=OP_SELECTIVE"})));
  EXPECT_NO_THROW(resolved(fsdp_layout("MEGATRON_TE", {"parallel.tp=2", "precision=FP8"})));
  // Sequence parallelism left on by a preset (llama3-8b's) is off at TP 1, as Megatron turns it
  // off: the stacks that refuse it run the layout.
  for (const char* stack : {"PYTORCH_FSDP", "DEEPSPEED_ZERO"}) {
    RunConfig c = fsdp_layout(stack, {"parallel.sequence_parallel=true"});
    EXPECT_NO_THROW(resolve_stack(c, "cfg")) << stack;
    EXPECT_TRUE(stack_runs(c)) << stack;
  }
}

// torchtitan's op-level checkpointing (OP_SELECTIVE) saves every other matmul output and the
// attention's: the backward re-runs the 2nd, 4th and 6th of q, k, v, o, gate, up, down (k, o,
// up), no attention, and every other forward kernel; what it keeps lies between FULL and NONE.
TEST(Stack, OpLevelCheckpointingRerunsEveryOtherMatmulAndTheRest) {
  const RunConfig c = resolved(fsdp_layout("PYTORCH_FSDP", {"parallel.recompute=OP_SELECTIVE"}));
  std::vector<std::string> forward_gemms, recomputed_gemms;
  std::multiset<std::string> forward_rest, recomputed_rest;
  for (const LayerOp& op : layer_ops(c, Phase::kForward)) {
    if (op.is_comm || op.kernel.kind == compute::KernelKind::kAttention) continue;
    if (op.kernel.kind == compute::KernelKind::kGemm)
      forward_gemms.emplace_back(op.kernel.name);
    else
      forward_rest.insert(std::string(op.kernel.name));
  }
  for (const LayerOp& op : layer_recompute_ops(c)) {
    ASSERT_FALSE(op.is_comm);
    ASSERT_NE(op.kernel.kind, compute::KernelKind::kAttention) << op.kernel.name;
    if (op.kernel.kind == compute::KernelKind::kGemm)
      recomputed_gemms.emplace_back(op.kernel.name);
    else
      recomputed_rest.insert(std::string(op.kernel.name));
  }
  ASSERT_EQ(forward_gemms.size(), 7u);
  EXPECT_EQ(recomputed_gemms,
            (std::vector<std::string>{forward_gemms[1], forward_gemms[3], forward_gemms[5]}));
  EXPECT_EQ(forward_gemms[1], "k_fwd");
  EXPECT_EQ(recomputed_rest, forward_rest);

  RunConfig none = c, full = c;
  none.mutable_parallel()->set_recompute(clustersim::ParallelConfig::NONE);
  full.mutable_parallel()->set_recompute(clustersim::ParallelConfig::FULL);
  // Kept: input, q, v, gate and down outputs, attention output (bf16), log-sum-exp (fp32).
  const auto& m = c.model();
  const double h = m.hidden_size(), kv = m.num_kv_heads() * 128.0, ffn = m.ffn_hidden_size();
  const double tokens = static_cast<double>(m.seq_length()) * c.parallel().microbatch_size();
  EXPECT_DOUBLE_EQ(layer_activation_bytes(c),
                   tokens * (2.0 * (h + h + kv + ffn + h + h) + 4.0 * m.num_heads()));
  EXPECT_GT(layer_activation_bytes(c), layer_activation_bytes(full));
  EXPECT_LT(layer_activation_bytes(c), layer_activation_bytes(none));
}

TEST(Stack, EagerNormsMoveTheBytesTheirCompositeKernelsDo) {
  // Transformer Engine's fused RMSNorm reads x and writes y (4 bytes per element), backward reads
  // x and dy and writes dx (6); PyTorch 2.7's rms_norm_composite launches eight kernels forward
  // (40 bytes) and its autograd backward fourteen (104), as stacks/pytorch_fsdp2.textproto lists;
  // Inductor's fused kernels move 4 forward and 10 backward. The per-row statistics add < 0.01.
  const RunConfig meg = resolved(fsdp_layout("MEGATRON_TE"));
  const RunConfig eager = resolved(fsdp_layout("PYTORCH_FSDP"));
  const RunConfig compiled = resolved(fsdp_layout("PYTORCH_FSDP", {"torch_compile=true"}));
  EXPECT_NEAR(norm_bytes_per_element(meg, Phase::kForward), 4, 1e-9);
  EXPECT_NEAR(norm_bytes_per_element(meg, Phase::kBackward), 6, 1e-9);
  EXPECT_NEAR(norm_bytes_per_element(eager, Phase::kForward), 40, 0.01);
  EXPECT_NEAR(norm_bytes_per_element(eager, Phase::kBackward), 104, 0.01);
  EXPECT_NEAR(norm_bytes_per_element(compiled, Phase::kForward), 4, 1e-9);
  EXPECT_NEAR(norm_bytes_per_element(compiled, Phase::kBackward), 10, 1e-9);
  EXPECT_EQ(count_named(eager, Phase::kForward, "rmsnorm_"), 16);  // 8 per norm
}

TEST(Stack, SplitProjectionsKeepTheFlopsAndAddTheGradientSums) {
  const RunConfig meg = resolved(fsdp_layout("MEGATRON_TE"));
  const RunConfig fsdp = resolved(fsdp_layout("PYTORCH_FSDP"));
  for (const Phase phase : {Phase::kForward, Phase::kBackward, Phase::kWeightGrad})
    EXPECT_DOUBLE_EQ(gemm_flops(fsdp, phase), gemm_flops(meg, phase));
  EXPECT_EQ(count_named(meg, Phase::kForward, "qkv_fwd"), 1);
  EXPECT_EQ(count_named(fsdp, Phase::kForward, "q_fwd") +
                count_named(fsdp, Phase::kForward, "k_fwd") +
                count_named(fsdp, Phase::kForward, "v_fwd"),
            3);
  EXPECT_EQ(count_named(fsdp, Phase::kForward, "mlp_gate_fwd"), 1);
  // x feeds three (attention) and two (MLP) linears: 2 + 1 gradient sums; repeat_kv's two
  // copies with grouped-query attention, and their sums back.
  EXPECT_EQ(count_named(fsdp, Phase::kBackward, "qkv_input_grad_sum"), 2);
  EXPECT_EQ(count_named(fsdp, Phase::kBackward, "mlp_input_grad_sum"), 1);
  EXPECT_EQ(count_named(fsdp, Phase::kForward, "repeat_kv"), 2);
  const RunConfig mha = resolved(fsdp_layout("PYTORCH_FSDP", {"model.num_kv_heads=32"}));
  EXPECT_EQ(count_named(mha, Phase::kForward, "repeat_kv"), 0);
}

TEST(Stack, EachEffectSwitchTakesItsPartFromMegatronTe) {
  const RunConfig off = resolved(
      fsdp_layout("PYTORCH_FSDP", {"effects.stack_kernels=false", "effects.stack_attention=false",
                                   "effects.stack_sharding=false"}));
  const auto& p = off.resolved_stack();
  EXPECT_EQ(p.kernels_size(), 0);
  EXPECT_TRUE(p.fused_qkv());
  EXPECT_TRUE(p.ddp_grad_buffer());
  EXPECT_EQ(p.attention(), clustersim::StackProfile::PROFILE_ATTENTION);
  EXPECT_FALSE(custom_sharding(p));
  EXPECT_GT(p.limits_size(), 0);  // what the stack can run does not change
  // Off one at a time, the others stay the stack's.
  const RunConfig attention_off =
      resolved(fsdp_layout("PYTORCH_FSDP", {"effects.stack_attention=false"}));
  EXPECT_GT(attention_off.resolved_stack().kernels_size(), 0);
  EXPECT_TRUE(custom_sharding(attention_off.resolved_stack()));
  EXPECT_TRUE(custom_sharding(resolved(fsdp_layout("PYTORCH_FSDP")).resolved_stack()));
  // The copies around gathers and reductions go with the sharding, the rest with the kernels.
  auto slots = [](const RunConfig& c) {
    std::set<int> out;
    for (const auto& k : c.resolved_stack().kernels()) out.insert(k.slot());
    return out;
  };
  const auto no_kernels =
      slots(resolved(fsdp_layout("PYTORCH_FSDP", {"effects.stack_kernels=false"})));
  const auto no_sharding =
      slots(resolved(fsdp_layout("PYTORCH_FSDP", {"effects.stack_sharding=false"})));
  EXPECT_EQ(no_kernels.count(clustersim::StackKernel::NORM_FORWARD), 0u);
  EXPECT_EQ(no_kernels.count(clustersim::StackKernel::GATHER_EPILOGUE), 1u);
  EXPECT_EQ(no_sharding.count(clustersim::StackKernel::NORM_FORWARD), 1u);
  EXPECT_EQ(no_sharding.count(clustersim::StackKernel::GATHER_EPILOGUE), 0u);
  EXPECT_EQ(no_sharding.count(clustersim::StackKernel::REDUCE_PROLOGUE), 0u);
  EXPECT_FALSE(custom_sharding(resolved(fsdp_layout("MEGATRON_TE")).resolved_stack()));
}

TEST(Stack, OverridesReplaceTheProfilesFields) {
  const RunConfig c =
      resolved(fsdp_layout("PYTORCH_FSDP", {"stack_profile.gather.reshard_after_forward=false",
                                            "stack_profile.reduce.dtype=BF16",
                                            "stack_profile.removed_slots=GATHER_EPILOGUE"}));
  EXPECT_FALSE(c.resolved_stack().gather().reshard_after_forward());
  EXPECT_EQ(main_grad_bytes(c), 2);
  for (const auto& k : c.resolved_stack().kernels())
    EXPECT_NE(k.slot(), clustersim::StackKernel::GATHER_EPILOGUE);
  EXPECT_EQ(main_grad_bytes(resolved(fsdp_layout("PYTORCH_FSDP"))), 4);  // reduce_dtype fp32
}

TEST(Stack, OwnZero3RulesOnALayoutTheyCannotLowerAreRefused) {
  // Megatron-TE with FSDP2's gather rules laid over it, on a pipeline: the unit-by-unit pass is
  // for one stage, so the override is refused, not lowered wrongly.
  RunConfig c = fsdp_layout("MEGATRON_TE", {"parallel.pp=2", "stack_profile.gather.unit=MODULE"});
  EXPECT_NE(error_of([&] { resolve_stack(c, "cfg"); })
                .find("own ZeRO-3 gathers and reductions (gather, reduce) are lowered for one "
                      "pipeline stage of dense layers, not with parallel.tp, cp and pp above 1"),
            std::string::npos);
  EXPECT_NO_THROW(resolved(fsdp_layout("MEGATRON_TE", {"stack_profile.gather.unit=MODULE"})));
}

TEST(Stack, AStackUsedWithoutResolvingIsALogicError) {
  const RunConfig c = fsdp_layout("PYTORCH_FSDP");
  EXPECT_THROW(layer_ops(c, Phase::kForward), std::logic_error);
  EXPECT_NO_THROW(layer_ops(fsdp_layout("MEGATRON_TE"), Phase::kForward));
}

}  // namespace
}  // namespace cs::workload
