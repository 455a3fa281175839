#include "sim/config/hf_config.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>

#include "sim/config/config_error.h"

namespace cs {
namespace {

using nlohmann::json;

// Decoder-only architectures whose layers are Llama's: RMSNorm, RoPE, grouped-query attention
// and a gated MLP (gate_proj, up_proj, down_proj).
constexpr std::array<std::string_view, 4> kLlamaLike = {"LlamaForCausalLM", "MistralForCausalLM",
                                                        "Qwen2ForCausalLM", "Qwen3ForCausalLM"};
// Mixtures of experts: their config is read once clustersim models expert layers.
constexpr std::array<std::string_view, 4> kMixtures = {
    "MixtralForCausalLM", "Qwen3MoeForCausalLM", "DeepseekV3ForCausalLM", "Qwen2MoeForCausalLM"};

class Reader {
 public:
  Reader(const json& root, std::string file) : root_(root), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw ConfigError(file_ + ": field " + field + ": " + why);
  }

  int32_t positive_int(const std::string& field) const {
    const json& v = at(field);
    if (!v.is_number_integer())
      fail(field, "must be an integer, not " + std::string(v.type_name()));
    const auto n = v.get<int64_t>();
    if (n < 1 || n > std::numeric_limits<int32_t>::max())
      fail(field, "must be a positive 32-bit integer, not " + std::to_string(n));
    return static_cast<int32_t>(n);
  }
  int32_t positive_int_or(const std::string& field, int32_t fallback) const {
    return has(field) ? positive_int(field) : fallback;
  }
  bool boolean_or(const std::string& field, bool fallback) const {
    if (!has(field)) return fallback;
    const json& v = root_.at(field);
    if (!v.is_boolean()) fail(field, "must be true or false, not " + std::string(v.type_name()));
    return v.get<bool>();
  }
  double probability_or(const std::string& field, double fallback) const {
    if (!has(field)) return fallback;
    const json& v = root_.at(field);
    if (!v.is_number()) fail(field, "must be a number, not " + std::string(v.type_name()));
    const double p = v.get<double>();
    if (!(p >= 0 && p < 1)) fail(field, "must be in [0, 1), not " + v.dump());
    return p;
  }
  std::string string_or(const std::string& field, const std::string& fallback) const {
    if (!has(field)) return fallback;
    const json& v = root_.at(field);
    if (!v.is_string()) fail(field, "must be a string, not " + std::string(v.type_name()));
    return v.get<std::string>();
  }
  bool has(const std::string& field) const {
    return root_.contains(field) && !root_.at(field).is_null();
  }

 private:
  const json& at(const std::string& field) const {
    if (!has(field)) fail(field, "is missing");
    return root_.at(field);
  }

  const json& root_;
  std::string file_;
};

std::string config_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  return fs::is_directory(path, ec) ? (fs::path(path) / "config.json").string() : path;
}

json parse(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError(file + ": cannot open (no Hugging Face config.json there)");
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    throw ConfigError(file + ": not valid JSON (byte " + std::to_string(e.byte) + ")");
  }
}

std::string architecture_of(const json& root, const Reader& r) {
  if (!r.has("architectures")) r.fail("architectures", "is missing");
  const json& list = root.at("architectures");
  if (!list.is_array() || list.size() != 1 || !list[0].is_string())
    r.fail("architectures", "must list exactly one architecture name");
  return list[0].get<std::string>();
}

bool listed(std::string_view name, const auto& list) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

}  // namespace

clustersim::ModelConfig model_from_hf_config(const std::string& path) {
  const std::string file = config_file(path);
  const json root = parse(file);
  if (!root.is_object()) throw ConfigError(file + ": must hold a JSON object");
  const Reader r(root, file);
  const std::string arch = architecture_of(root, r);
  if (listed(arch, kMixtures))
    r.fail("architectures", arch + " is a mixture of experts, which clustersim does not model yet");
  if (!listed(arch, kLlamaLike)) {
    std::string known;
    for (const auto name : kLlamaLike) known += (known.empty() ? "" : ", ") + std::string(name);
    r.fail("architectures", "unknown architecture " + arch + " (reads " + known + ")");
  }

  clustersim::ModelConfig m;
  m.set_name(r.string_or("_name_or_path", std::filesystem::path(file).parent_path().filename()));
  m.set_num_layers(r.positive_int("num_hidden_layers"));
  m.set_hidden_size(r.positive_int("hidden_size"));
  m.set_num_heads(r.positive_int("num_attention_heads"));
  m.set_num_kv_heads(r.positive_int_or("num_key_value_heads", m.num_heads()));
  m.set_ffn_hidden_size(r.positive_int("intermediate_size"));
  m.set_vocab_size(r.positive_int("vocab_size"));
  if (m.hidden_size() % m.num_heads() != 0)
    r.fail("num_attention_heads", "must divide hidden_size " + std::to_string(m.hidden_size()));
  if (m.num_heads() % m.num_kv_heads() != 0)
    r.fail("num_key_value_heads",
           "must divide num_attention_heads " + std::to_string(m.num_heads()));
  // clustersim derives the head size as hidden_size / heads (Qwen3's smaller models differ).
  const int32_t head_dim = m.hidden_size() / m.num_heads();
  if (r.positive_int_or("head_dim", head_dim) != head_dim)
    r.fail("head_dim", "differs from hidden_size / num_attention_heads = " +
                           std::to_string(head_dim) + ", which clustersim assumes");
  // The gated MLP: three matrices, SiLU on the gate.
  const std::string act = r.string_or("hidden_act", "silu");
  if (act != "silu") r.fail("hidden_act", "is " + act + "; the gated MLP is modelled with silu");
  m.set_activation(clustersim::ModelConfig::SWIGLU);
  m.set_tied_embeddings(r.boolean_or("tie_word_embeddings", false));
  m.set_attention_dropout(r.probability_or("attention_dropout", 0));
  // One switch for every bias: on if the attention projections have them (Qwen2's q/k/v).
  m.set_add_bias(r.boolean_or("attention_bias", arch == "Qwen2ForCausalLM") ||
                 r.boolean_or("mlp_bias", false));
  m.set_norm(clustersim::ModelConfig::RMSNORM);
  m.set_position_embedding(clustersim::ModelConfig::ROPE);
  return m;
}

}  // namespace cs
