// Output-discarding recomputation (parallel.recompute_modules), FP8-kept linear and activation
// inputs: the bytes each drops from a layer's activations, and the kernels run again.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "sim/config/config_error.h"
#include "sim/config/run_config.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/memory.h"
#include "sim/workload/model_math.h"
#include "sim/workload/validate.h"
#include "tests/support/layer_op_lookup.h"

namespace cs::workload {
namespace {

using testing_support::has_op;
using testing_support::op_named;

using clustersim::ParallelConfig;

// DeepSeek-V3's layers (MLA, 256 experts top-8, FP8) with nothing recomputed and nothing kept
// in FP8 beyond the linears' own inputs, then `more`.
clustersim::RunConfig deepseek(std::vector<std::string> more = {}) {
  std::vector<std::string> o = {"parallel.recompute_modules=",
                                "parallel.activation_fp8_input_store=false"};
  o.insert(o.end(), more.begin(), more.end());
  return load_run_config("", "deepseek-v3", o).config;
}

double tokens(const clustersim::RunConfig& c) {
  return static_cast<double>(c.parallel().microbatch_size()) * c.model().seq_length();
}

// Bytes per token a change drops from one layer (TP 1: no sequence-parallel divisor).
double dropped_per_token(const clustersim::RunConfig& before, const clustersim::RunConfig& after) {
  return (layer_activation_bytes(before) - layer_activation_bytes(after)) / tokens(before);
}

TEST(RecomputeModules, EachDropsExactlyTheOutputsItRecomputes) {
  const auto base = deepseek();
  ASSERT_EQ(base.parallel().tp(), 1);
  const auto& m = base.model();
  const double h = m.hidden_size(), a = m.num_heads();
  const double qk = m.mla().qk_nope_head_dim() + m.mla().qk_rope_head_dim();
  const double v = m.mla().v_head_dim();
  const double latents = m.mla().q_lora_rank() + m.mla().kv_lora_rank();
  const double copies = m.moe().top_k(), ffn_e = m.moe().expert_ffn_hidden_size();
  // The two norms' bf16 outputs.
  EXPECT_DOUBLE_EQ(dropped_per_token(base, deepseek({"parallel.recompute_modules=LAYERNORM"})),
                   2 * 2 * h);
  // Q, K and V (bf16, a heads of qk, qk and v) and the latent norms' outputs.
  EXPECT_DOUBLE_EQ(dropped_per_token(base, deepseek({"parallel.recompute_modules=MLA_UP_PROJ"})),
                   2 * a * (2 * qk + v) + 2 * latents);
  // Every routed copy's fc2 input, kept in FP8.
  EXPECT_DOUBLE_EQ(dropped_per_token(base, deepseek({"parallel.recompute_modules=MOE_ACT"})),
                   copies * ffn_e);
  // All three: the sum.
  EXPECT_DOUBLE_EQ(
      dropped_per_token(base,
                        deepseek({"parallel.recompute_modules=LAYERNORM,MLA_UP_PROJ,MOE_ACT"})),
      4 * h + 2 * a * (2 * qk + v) + 2 * latents + copies * ffn_e);
}

TEST(RecomputeModules, Fp8KeptInputsHalveWhatTheyCover) {
  const auto base = deepseek();
  const auto& m = base.model();
  const double h = m.hidden_size(), a = m.num_heads(), v = m.mla().v_head_dim();
  const double copies = m.moe().top_k(), ffn_e = m.moe().expert_ffn_hidden_size();
  const double shared = m.moe().shared_expert_ffn_hidden_size();
  // activation_fp8_input_store: the SwiGLU inputs (gate and up) of every copy and of the shared
  // experts at 1 byte instead of 2.
  EXPECT_DOUBLE_EQ(dropped_per_token(base, deepseek({"parallel.activation_fp8_input_store=true"})),
                   copies * 2 * ffn_e + 2 * shared);
  // Without FP8 linear inputs, the projection input, every copy's permuted token and fc2 input
  // and the shared experts' fc2 input take 2 bytes again.
  auto bf16 = base;
  bf16.mutable_effects()->set_memory_fp8_linear_inputs(false);
  EXPECT_DOUBLE_EQ(-dropped_per_token(base, bf16), a * v + copies * (h + ffn_e) + shared);
  // Under BF16 the switch changes nothing.
  auto plain = deepseek({"precision=BF16", "model.moe.fp8_dispatch=false"});
  auto plain_off = plain;
  plain_off.mutable_effects()->set_memory_fp8_linear_inputs(false);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(plain), layer_activation_bytes(plain_off));
}

TEST(RecomputeModules, TheDroppedOutputsAreComputedAgainBeforeTheBackward) {
  const auto none = deepseek();
  const ExpertLoad load = RoutingTable(none).load(5);
  EXPECT_TRUE(layer_recompute_ops(none, &load).empty());
  const auto all = deepseek({"parallel.recompute_modules=LAYERNORM,MLA_UP_PROJ,MOE_ACT"});
  const auto again = layer_recompute_ops(all, &load);
  const auto fwd = layer_ops(all, Phase::kForward, &load);
  for (const char* name : {"ln1", "ln2", "q_norm", "kv_norm", "mla_rope_q", "mla_rope_kv"}) {
    ASSERT_TRUE(has_op(again, std::string(name) + "_recompute")) << name;
    EXPECT_EQ(op_named(again, std::string(name) + "_recompute").kernel.bytes,
              op_named(fwd, std::string(name) + "_fwd").kernel.bytes)
        << name;
  }
  for (const char* name : {"q_up", "kv_up"})
    EXPECT_EQ(op_named(again, std::string(name) + "_recompute").kernel.flops,
              op_named(fwd, std::string(name) + "_fwd").kernel.flops)
        << name;
  // HFU counts the up projections' GEMMs again, for every layer, multi-token-prediction blocks too
  // (they are built with the same recompute settings: HardwareFlops tests hold the lowered step).
  double gemm_flops = 0;
  for (const LayerOp& op : again)
    if (op.kernel.kind == compute::KernelKind::kGemm) gemm_flops += op.kernel.flops;
  EXPECT_NEAR((hardware_flops_per_step(all) - model_flops_per_step(all)) / tokens_per_step(all),
              gemm_flops / tokens(all) * (all.model().num_layers() + all.model().mtp_layers()),
              1e-9 * gemm_flops);
  // The experts' activation, each EP rank its own experts' part, as in the forward.
  const LayerOp& act = op_named(again, "moe_act_recompute");
  const LayerOp& act_fwd = op_named(fwd, "moe_act_fwd");
  ASSERT_EQ(act.rank_parts.size(), act_fwd.rank_parts.size());
  for (size_t r = 0; r < act.rank_parts.size(); ++r)
    ASSERT_EQ(act.rank_parts[r].size(), act_fwd.rank_parts[r].size());
  EXPECT_EQ(act.kernel.bytes, act_fwd.kernel.bytes);
}

TEST(RecomputeModules, ModulesTheModelLacksAreRefused) {
  auto expect_error = [](const std::string& preset, std::vector<std::string> set,
                         const std::string& words) {
    try {
      validate_run_config(load_run_config("", preset, set).config, 0, "cfg.textproto");
      ADD_FAILURE() << "expected an error with " << words;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_error("llama3-8b", {"parallel.recompute_modules=MLA_UP_PROJ"}, "MLA_UP_PROJ");
  expect_error("llama3-8b", {"parallel.recompute_modules=MOE_ACT"}, "MOE_ACT");
  expect_error("llama3-8b", {"parallel.activation_fp8_input_store=true"}, "precision: FP8");
}

}  // namespace
}  // namespace cs::workload
