// Models from Hugging Face config.json files: the fields each architecture maps, and bad input.
#include "sim/config/hf_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/config/config_error.h"
#include "sim/config/run_config.h"

namespace cs {
namespace {

namespace fs = std::filesystem;

// Meta-Llama-3-8B's config.json, as published on the Hugging Face hub.
constexpr const char* kLlama3_8b = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
  "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 32,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "vocab_size": 128256})";

// Writes `text` as DIR/config.json in a fresh folder named `name`; returns the folder.
std::string write_config(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("clustersim_hf_" + name);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << text;
  return dir.string();
}

// kLlama3_8b with `from` replaced by `to` (the first occurrence).
std::string llama_with(const std::string& from, const std::string& to) {
  std::string text = kLlama3_8b;
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string error_of(const std::string& name, const std::string& text) {
  const std::string dir = write_config(name, text);
  try {
    model_from_hf_config(dir);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << name << ": no error";
  return "";
}

TEST(HfConfig, Llama3EightBIsThePresetsModel) {
  const auto m = model_from_hf_config(write_config("llama3", kLlama3_8b));
  const auto preset = load_run_config("", "llama3-8b", {}).config.model();
  EXPECT_EQ(m.num_layers(), preset.num_layers());
  EXPECT_EQ(m.hidden_size(), preset.hidden_size());
  EXPECT_EQ(m.num_heads(), preset.num_heads());
  EXPECT_EQ(m.num_kv_heads(), preset.num_kv_heads());
  EXPECT_EQ(m.ffn_hidden_size(), preset.ffn_hidden_size());
  EXPECT_EQ(m.vocab_size(), preset.vocab_size());
  EXPECT_EQ(m.activation(), preset.activation());
  EXPECT_EQ(m.tied_embeddings(), preset.tied_embeddings());
  EXPECT_EQ(m.norm(), preset.norm());
  EXPECT_EQ(m.add_bias(), preset.add_bias());
}

TEST(HfConfig, ReplacesTheModelButKeepsTheTrainingSequence) {
  const std::string dir = write_config(
      "tied", llama_with("\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true"));
  const auto loaded = load_run_config("", "llama3-70b", {"model.num_layers=2"}, dir);
  const auto preset = load_run_config("", "llama3-70b", {}).config;
  EXPECT_EQ(loaded.config.model().hidden_size(), 4096);
  EXPECT_TRUE(loaded.config.model().tied_embeddings());
  EXPECT_EQ(loaded.config.model().seq_length(), preset.model().seq_length());
  EXPECT_EQ(loaded.config.model().num_layers(), 2);  // --set applies after the file
  EXPECT_NE(loaded.source.find(dir), std::string::npos) << loaded.source;
}

TEST(HfConfig, QwenTwoHasAttentionBiasesAndKvHeadsDefaultToHeads) {
  std::string text = llama_with("LlamaForCausalLM", "Qwen2ForCausalLM");
  text = text.replace(text.find("\"attention_bias\": false,"), 24, "");
  text = text.replace(text.find("\"num_key_value_heads\": 8,"), 25, "");
  const auto m = model_from_hf_config(write_config("qwen2", text));
  EXPECT_TRUE(m.add_bias());
  EXPECT_EQ(m.num_kv_heads(), m.num_heads());
}

TEST(HfConfig, HeadDimIsKeptOnlyWhereItDiffersFromHiddenOverHeads) {
  const auto same = model_from_hf_config(
      write_config("hd128", llama_with("\"hidden_act\"", "\"head_dim\": 128, \"hidden_act\"")));
  EXPECT_FALSE(same.has_head_dim());  // restates 4096 / 32: the dense model stays as it was
  const auto smaller = model_from_hf_config(
      write_config("hd64", llama_with("\"hidden_act\"", "\"head_dim\": 64, \"hidden_act\"")));
  EXPECT_EQ(smaller.head_dim(), 64);
  // 30 heads do not divide 4096, but with head_dim given nothing needs them to.
  std::string text = llama_with("\"num_attention_heads\": 32", "\"num_attention_heads\": 30");
  text = text.replace(text.find("\"num_key_value_heads\": 8"), 24,
                      "\"num_key_value_heads\": 6, \"head_dim\": 128");
  const auto odd = model_from_hf_config(write_config("hd_odd", text));
  EXPECT_EQ(odd.head_dim(), 128);
  EXPECT_EQ(odd.num_heads(), 30);
  EXPECT_FALSE(odd.has_moe());
  EXPECT_FALSE(odd.has_mla());
}

TEST(HfConfig, BadFilesNameTheFileAndTheField) {
  auto expect = [](const std::string& name, const std::string& text, const std::string& part) {
    const std::string what = error_of(name, text);
    EXPECT_NE(what.find(part), std::string::npos) << what;
    EXPECT_NE(what.find("config.json"), std::string::npos) << what;
  };
  expect("missing", llama_with("\"num_hidden_layers\": 32,", ""),
         "field num_hidden_layers: is missing");
  expect("type", llama_with("\"hidden_size\": 4096", "\"hidden_size\": \"4096\""),
         "field hidden_size: must be an integer");
  expect("negative", llama_with("\"vocab_size\": 128256", "\"vocab_size\": -3"),
         "field vocab_size: must be a positive");
  expect("syntax", "{\"architectures\": [", "not valid JSON: parse error at line 1, column 20");
  expect("unknown", llama_with("LlamaForCausalLM", "GPT2LMHeadModel"),
         "field architectures: unknown architecture GPT2LMHeadModel");
  expect("qwen2moe", llama_with("LlamaForCausalLM", "Qwen2MoeForCausalLM"),
         "field architectures: unknown architecture Qwen2MoeForCausalLM");
  expect("heads", llama_with("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5"),
         "field num_key_value_heads: must divide");
  expect("head_dim", llama_with("\"hidden_act\"", "\"head_dim\": 0, \"hidden_act\""),
         "field head_dim: must be a positive");
  expect("indivisible", llama_with("\"num_attention_heads\": 32", "\"num_attention_heads\": 24"),
         "field num_attention_heads: must divide hidden_size 4096 when head_dim is not given");
  expect("act", llama_with("\"silu\"", "\"gelu\""), "field hidden_act");
  EXPECT_THROW(model_from_hf_config("/nonexistent/clustersim/config.json"), ConfigError);
}

}  // namespace
}  // namespace cs
