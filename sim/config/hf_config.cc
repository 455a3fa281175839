#include "sim/config/hf_config.h"

#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "sim/config/config_error.h"
#include "sim/config/hf_mixtures.h"
#include "sim/config/hf_reader.h"
#include "sim/config/json_input.h"
#include "sim/core/input_file.h"

namespace cs {
namespace {

using hf::Reader;
using nlohmann::json;

std::string config_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  return fs::is_directory(path, ec) ? (fs::path(path) / "config.json").string() : path;
}

json parse(const std::string& file) {
  const InputFile input = read_input_file(file, kMaxJsonBytes, "Hugging Face config.json");
  if (!input.opened) throw ConfigError(input.error + ": no Hugging Face config.json there");
  if (!input.ok()) throw ConfigError(input.error);
  try {
    return json::parse(input.bytes);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number overflow
    throw ConfigError(file + ": not valid JSON: " + json_error_reason(e));
  }
}

std::string architecture_of(const json& root, const Reader& r) {
  if (!r.has("architectures")) r.fail("architectures", "is missing");
  const json& list = root.at("architectures");
  if (!list.is_array() || list.size() != 1 || !list[0].is_string())
    r.fail("architectures", "must list exactly one architecture name");
  return list[0].get<std::string>();
}

// head_dim where it differs from hidden_size / num_attention_heads (Qwen3: 128 for every size);
// left at 0 otherwise, so configs that only restate the default stay as they were.
void read_head_dim(const Reader& r, clustersim::ModelConfig& m) {
  const bool divisible = m.hidden_size() % m.num_heads() == 0;
  if (!r.has("head_dim")) {
    if (!divisible)
      r.fail("num_attention_heads", "must divide hidden_size " + std::to_string(m.hidden_size()) +
                                        " when head_dim is not given");
    return;
  }
  const int32_t d = r.positive_int("head_dim");
  if (!divisible || d != m.hidden_size() / m.num_heads()) m.set_head_dim(d);
}

void read_dense_mlp(const Reader& r, clustersim::ModelConfig& m) {
  m.set_ffn_hidden_size(r.positive_int("intermediate_size"));
}

// What every architecture read here shares with Llama: RMSNorm, RoPE, grouped-query attention
// and SwiGLU (gate_proj, up_proj, down_proj) MLPs or experts.
void read_llama_fields(const Reader& r, clustersim::ModelConfig& m, bool bias_default) {
  m.set_num_layers(r.positive_int("num_hidden_layers"));
  m.set_hidden_size(r.positive_int("hidden_size"));
  m.set_num_heads(r.positive_int("num_attention_heads"));
  m.set_num_kv_heads(r.positive_int_or("num_key_value_heads", m.num_heads()));
  m.set_vocab_size(r.positive_int("vocab_size"));
  if (m.num_heads() % m.num_kv_heads() != 0)
    r.fail("num_key_value_heads",
           "must divide num_attention_heads " + std::to_string(m.num_heads()));
  const std::string act = r.string_or("hidden_act", "silu");
  if (act != "silu") r.fail("hidden_act", "is " + act + "; the gated MLP is modelled with silu");
  m.set_activation(clustersim::ModelConfig::SWIGLU);
  m.set_tied_embeddings(r.boolean_or("tie_word_embeddings", false));
  m.set_attention_dropout(r.probability_or("attention_dropout", 0));
  // One switch for every bias: on if the attention projections have them (Qwen2's q/k/v).
  m.set_add_bias(r.boolean_or("attention_bias", bias_default) || r.boolean_or("mlp_bias", false));
  m.set_norm(clustersim::ModelConfig::RMSNORM);
  m.set_position_embedding(clustersim::ModelConfig::ROPE);
}

// One architecture: whether its attention projections carry biases unless the file says, and
// the reader of the fields beyond the shared ones.
struct Architecture {
  std::string_view name;
  bool attention_bias;
  void (*read)(const Reader&, clustersim::ModelConfig&);
};

void read_llama_like(const Reader& r, clustersim::ModelConfig& m) {
  read_head_dim(r, m);
  read_dense_mlp(r, m);
}

constexpr std::array<Architecture, 7> kArchitectures = {{
    {"LlamaForCausalLM", false, read_llama_like},
    {"MistralForCausalLM", false, read_llama_like},
    {"Qwen2ForCausalLM", true, read_llama_like},
    {"Qwen3ForCausalLM", false, read_llama_like},
    {"MixtralForCausalLM", false,
     [](const Reader& r, clustersim::ModelConfig& m) {
       read_head_dim(r, m);
       hf::read_mixtral(r, m);
     }},
    {"Qwen3MoeForCausalLM", false,
     [](const Reader& r, clustersim::ModelConfig& m) {
       read_head_dim(r, m);
       hf::read_qwen3_moe(r, m);
     }},
    {"DeepseekV3ForCausalLM", false, hf::read_deepseek_v3},
}};

const Architecture& find_architecture(const std::string& name, const Reader& r) {
  for (const auto& a : kArchitectures) {
    if (a.name == name) return a;
  }
  std::string known;
  for (const auto& a : kArchitectures) known += (known.empty() ? "" : ", ") + std::string(a.name);
  r.fail("architectures", "unknown architecture " + name + " (reads " + known + ")");
}

// What the report calls the model: the hub id the file was saved from, else the folder it sits in
// (a downloaded snapshot is named after its model), else the file's own name, else its kind.
std::string model_name(const Reader& r, const std::string& file, const std::string& arch) {
  namespace fs = std::filesystem;
  std::string name = r.string_or("_name_or_path", "");
  const fs::path p = fs::absolute(file).lexically_normal();
  if (name.empty() && p.filename() == "config.json") name = p.parent_path().filename().string();
  if (name.empty() && p.filename() != "config.json") name = p.stem().string();
  if (name.empty()) name = r.string_or("model_type", arch);
  return name;
}

}  // namespace

clustersim::ModelConfig model_from_hf_config(const std::string& path) {
  const std::string file = config_file(path);
  const json root = parse(file);
  if (!root.is_object()) throw ConfigError(file + ": must hold a JSON object");
  const Reader r(root, file);
  const std::string arch_name = architecture_of(root, r);
  const Architecture& arch = find_architecture(arch_name, r);
  clustersim::ModelConfig m;
  m.set_name(model_name(r, file, arch_name));
  read_llama_fields(r, m, arch.attention_bias);
  arch.read(r, m);
  return m;
}

}  // namespace cs
