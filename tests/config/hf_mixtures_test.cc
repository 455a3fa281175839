// Mixtures of experts from the published config.json files of Mixtral-8x7B, Qwen3-30B-A3B and
// DeepSeek-V3 (tests/config/hf/): every mapped field, and every shape that is refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/config/config_error.h"
#include "sim/config/hf_config.h"

namespace cs {
namespace {

namespace fs = std::filesystem;
using clustersim::MoeConfig;

// The test data folder; ctest sets CLUSTERSIM_SOURCE_DIR (run from the source root otherwise).
fs::path data_dir() {
  const char* src = std::getenv("CLUSTERSIM_SOURCE_DIR");
  return fs::path(src ? src : ".") / "tests" / "config" / "hf";
}

std::string published(const std::string& model) {
  std::ifstream in(data_dir() / model / "config.json");
  EXPECT_TRUE(in) << "missing test data " << (data_dir() / model).string();
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The published file of `model` with `from` replaced by `to` (the first occurrence).
std::string edited(const std::string& model, const std::string& from, const std::string& to) {
  std::string text = published(model);
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

clustersim::ModelConfig load_text(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim_hf_moe_" + name);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << text;
  return model_from_hf_config(dir.string());
}

// The error of loading `text` must name the file and contain `part`.
void expect_error(const std::string& name, const std::string& text, const std::string& part) {
  try {
    load_text(name, text);
    ADD_FAILURE() << name << ": no error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("config.json"), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

TEST(HfMixtures, Mixtral8x7b) {
  const auto m = model_from_hf_config((data_dir() / "mixtral-8x7b").string());
  EXPECT_EQ(m.num_layers(), 32);
  EXPECT_EQ(m.hidden_size(), 4096);
  EXPECT_EQ(m.num_heads(), 32);
  EXPECT_EQ(m.num_kv_heads(), 8);
  EXPECT_EQ(m.vocab_size(), 32000);
  EXPECT_EQ(m.ffn_hidden_size(), 14336);  // no dense MLP: the expert size
  EXPECT_FALSE(m.has_head_dim());
  EXPECT_FALSE(m.has_mla());
  EXPECT_EQ(m.mtp_layers(), 0);
  ASSERT_TRUE(m.has_moe());
  EXPECT_EQ(m.moe().num_experts(), 8);
  EXPECT_EQ(m.moe().top_k(), 2);
  EXPECT_EQ(m.moe().expert_ffn_hidden_size(), 14336);
  EXPECT_EQ(m.moe().shared_expert_ffn_hidden_size(), 0);
  EXPECT_EQ(m.moe().first_k_dense(), 0);
  EXPECT_EQ(m.moe().score_function(), MoeConfig::SOFTMAX);
  EXPECT_EQ(m.moe().max_nodes_per_token(), 0);
  EXPECT_EQ(m.activation(), clustersim::ModelConfig::SWIGLU);
  // A sliding window is read past (it does not bound a 4K training sequence's attention).
  const auto windowed =
      load_text("mixtral_window",
                edited("mixtral-8x7b", "\"sliding_window\": null", "\"sliding_window\": 4096"));
  EXPECT_EQ(windowed.moe().num_experts(), 8);
}

TEST(HfMixtures, MixtralRefusals) {
  expect_error("mixtral_experts", edited("mixtral-8x7b", "\"num_local_experts\": 8,", ""),
               "field num_local_experts: is missing");
  expect_error("mixtral_topk",
               edited("mixtral-8x7b", "\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 9"),
               "field num_experts_per_tok: must be at most num_local_experts = 8");
  expect_error("mixtral_type",
               edited("mixtral-8x7b", "\"num_local_experts\": 8", "\"num_local_experts\": \"8\""),
               "field num_local_experts: must be an integer");
}

TEST(HfMixtures, Qwen3Moe30bA3b) {
  const auto m = model_from_hf_config((data_dir() / "qwen3-30b-a3b").string());
  EXPECT_EQ(m.num_layers(), 48);
  EXPECT_EQ(m.hidden_size(), 2048);
  EXPECT_EQ(m.num_heads(), 32);
  EXPECT_EQ(m.num_kv_heads(), 4);
  EXPECT_EQ(m.head_dim(), 128);  // not 2048 / 32 = 64
  EXPECT_EQ(m.vocab_size(), 151936);
  EXPECT_EQ(m.ffn_hidden_size(), 6144);  // the dense MLP of mlp_only_layers
  EXPECT_FALSE(m.add_bias());
  EXPECT_FALSE(m.tied_embeddings());
  EXPECT_FALSE(m.has_mla());
  ASSERT_TRUE(m.has_moe());
  EXPECT_EQ(m.moe().num_experts(), 128);
  EXPECT_EQ(m.moe().top_k(), 8);
  EXPECT_EQ(m.moe().expert_ffn_hidden_size(), 768);
  EXPECT_EQ(m.moe().shared_expert_ffn_hidden_size(), 0);
  EXPECT_EQ(m.moe().first_k_dense(), 0);
  EXPECT_EQ(m.moe().score_function(), MoeConfig::SOFTMAX);
}

TEST(HfMixtures, Qwen3MoeLeadingDenseLayersAreFirstKDense) {
  const auto m = load_text("qwen3_lead", edited("qwen3-30b-a3b", "\"mlp_only_layers\": []",
                                                "\"mlp_only_layers\": [0, 1, 2]"));
  EXPECT_EQ(m.moe().first_k_dense(), 3);
  const auto step =
      load_text("qwen3_step", edited("qwen3-30b-a3b", "\"decoder_sparse_step\": 1,", ""));
  EXPECT_EQ(step.moe().first_k_dense(), 0);  // missing step: every layer, as HF's default
}

TEST(HfMixtures, Qwen3MoeRefusals) {
  expect_error("qwen3_sparse_step",
               edited("qwen3-30b-a3b", "\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2"),
               "field decoder_sparse_step: is 2");
  expect_error("qwen3_gap",
               edited("qwen3-30b-a3b", "\"mlp_only_layers\": []", "\"mlp_only_layers\": [0, 2]"),
               "field mlp_only_layers: dense layers must be the leading ones");
  expect_error("qwen3_late",
               edited("qwen3-30b-a3b", "\"mlp_only_layers\": []", "\"mlp_only_layers\": [47]"),
               "field mlp_only_layers: dense layers must be the leading ones");
  expect_error("qwen3_list",
               edited("qwen3-30b-a3b", "\"mlp_only_layers\": []", "\"mlp_only_layers\": 3"),
               "field mlp_only_layers: must be a list");
  expect_error("qwen3_negative",
               edited("qwen3-30b-a3b", "\"mlp_only_layers\": []", "\"mlp_only_layers\": [-1]"),
               "field mlp_only_layers: must hold non-negative integers");
  std::string all = "[0";
  for (int i = 1; i < 48; ++i) all += ", " + std::to_string(i);
  expect_error(
      "qwen3_all",
      edited("qwen3-30b-a3b", "\"mlp_only_layers\": []", "\"mlp_only_layers\": " + all + "]"),
      "field mlp_only_layers: 48 dense layers leave no MoE layer of 48");
  expect_error("qwen3_moe_ffn", edited("qwen3-30b-a3b", "\"moe_intermediate_size\": 768,", ""),
               "field moe_intermediate_size: is missing");
  expect_error("qwen3_norm_topk",
               edited("qwen3-30b-a3b", "\"norm_topk_prob\": true", "\"norm_topk_prob\": 1"),
               "field norm_topk_prob: must be true or false");
  expect_error("qwen3_head_dim", edited("qwen3-30b-a3b", "\"head_dim\": 128", "\"head_dim\": -1"),
               "field head_dim: must be a positive");
}

TEST(HfMixtures, DeepSeekV3) {
  const auto m = model_from_hf_config((data_dir() / "deepseek-v3").string());
  EXPECT_EQ(m.num_layers(), 61);
  EXPECT_EQ(m.hidden_size(), 7168);
  EXPECT_EQ(m.num_heads(), 128);
  EXPECT_EQ(m.num_kv_heads(), 128);
  EXPECT_EQ(m.vocab_size(), 129280);
  EXPECT_EQ(m.ffn_hidden_size(), 18432);  // the dense MLP of the first three layers
  EXPECT_FALSE(m.has_head_dim());
  EXPECT_EQ(m.mtp_layers(), 1);
  ASSERT_TRUE(m.has_moe());
  EXPECT_EQ(m.moe().num_experts(), 256);
  EXPECT_EQ(m.moe().top_k(), 8);
  EXPECT_EQ(m.moe().expert_ffn_hidden_size(), 2048);
  EXPECT_EQ(m.moe().shared_expert_ffn_hidden_size(), 2048);  // 1 x 2048
  EXPECT_EQ(m.moe().first_k_dense(), 3);
  EXPECT_EQ(m.moe().score_function(), MoeConfig::SIGMOID);
  EXPECT_EQ(m.moe().max_nodes_per_token(), 4);  // topk_group of n_group 8
  ASSERT_TRUE(m.has_mla());
  EXPECT_EQ(m.mla().q_lora_rank(), 1536);
  EXPECT_EQ(m.mla().kv_lora_rank(), 512);
  EXPECT_EQ(m.mla().qk_nope_head_dim(), 128);
  EXPECT_EQ(m.mla().qk_rope_head_dim(), 64);
  EXPECT_EQ(m.mla().v_head_dim(), 128);
}

TEST(HfMixtures, DeepSeekV3Variants) {
  const auto shared = load_text(
      "ds_shared", edited("deepseek-v3", "\"n_shared_experts\": 1", "\"n_shared_experts\": 2"));
  EXPECT_EQ(shared.moe().shared_expert_ffn_hidden_size(), 4096);
  const auto none =
      load_text("ds_no_shared", edited("deepseek-v3", "\"n_shared_experts\": 1,", ""));
  EXPECT_EQ(none.moe().shared_expert_ffn_hidden_size(), 0);
  const auto softmax = load_text(
      "ds_softmax",
      edited("deepseek-v3", "\"scoring_func\": \"sigmoid\"", "\"scoring_func\": \"softmax\""));
  EXPECT_EQ(softmax.moe().score_function(), MoeConfig::SOFTMAX);
  const auto all_groups =
      load_text("ds_all_groups", edited("deepseek-v3", "\"topk_group\": 4", "\"topk_group\": 8"));
  EXPECT_EQ(all_groups.moe().max_nodes_per_token(), 0);
  const auto greedy = load_text("ds_greedy", edited("deepseek-v3", "\"topk_method\": \"noaux_tc\"",
                                                    "\"topk_method\": \"greedy\""));
  EXPECT_EQ(greedy.moe().max_nodes_per_token(), 0);
  const auto no_q_lora = load_text(
      "ds_q_lora", edited("deepseek-v3", "\"q_lora_rank\": 1536", "\"q_lora_rank\": null"));
  EXPECT_EQ(no_q_lora.mla().q_lora_rank(), 0);
  const auto no_mtp =
      load_text("ds_no_mtp", edited("deepseek-v3", "\"num_nextn_predict_layers\": 1,", ""));
  EXPECT_EQ(no_mtp.mtp_layers(), 0);
}

TEST(HfMixtures, DeepSeekV3Refusals) {
  expect_error("ds_freq", edited("deepseek-v3", "\"moe_layer_freq\": 1", "\"moe_layer_freq\": 2"),
               "field moe_layer_freq: is 2");
  expect_error("ds_score",
               edited("deepseek-v3", "\"scoring_func\": \"sigmoid\"", "\"scoring_func\": \"tanh\""),
               "field scoring_func: is tanh");
  expect_error("ds_topk_group", edited("deepseek-v3", "\"topk_group\": 4", "\"topk_group\": 9"),
               "field topk_group: must be at most n_group = 8");
  expect_error("ds_n_group", edited("deepseek-v3", "\"n_group\": 8", "\"n_group\": 5"),
               "field n_group: must divide n_routed_experts = 256");
  expect_error("ds_method",
               edited("deepseek-v3", "\"topk_method\": \"noaux_tc\"", "\"topk_method\": \"x\""),
               "field topk_method: is x");
  expect_error(
      "ds_dense",
      edited("deepseek-v3", "\"first_k_dense_replace\": 3", "\"first_k_dense_replace\": 61"),
      "field first_k_dense_replace: 61 dense layers leave no MoE layer of 61");
  expect_error("ds_shared_type",
               edited("deepseek-v3", "\"n_shared_experts\": 1", "\"n_shared_experts\": 1.5"),
               "field n_shared_experts: must be an integer");
  expect_error("ds_kv_lora", edited("deepseek-v3", "\"kv_lora_rank\": 512,", ""),
               "field kv_lora_rank: is missing");
  expect_error("ds_rope",
               edited("deepseek-v3", "\"qk_rope_head_dim\": 64", "\"qk_rope_head_dim\": 0"),
               "field qk_rope_head_dim: must be a positive");
  expect_error("ds_v", edited("deepseek-v3", "\"v_head_dim\": 128", "\"v_head_dim\": \"128\""),
               "field v_head_dim: must be an integer");
  expect_error("ds_experts", edited("deepseek-v3", "\"n_routed_experts\": 256,", ""),
               "field n_routed_experts: is missing");
  expect_error(
      "ds_mtp",
      edited("deepseek-v3", "\"num_nextn_predict_layers\": 1", "\"num_nextn_predict_layers\": -1"),
      "field num_nextn_predict_layers: must be a non-negative");
}

}  // namespace
}  // namespace cs
