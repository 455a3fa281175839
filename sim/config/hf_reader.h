// Typed reads of the fields of one Hugging Face config.json, with errors naming file and field.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/config/config_error.h"

namespace cs::hf {

// A missing field is one that is absent or null (HF writes null for "not used", e.g. Mixtral's
// sliding_window or DeepSeek-V2-Lite's q_lora_rank).
class Reader {
 public:
  Reader(const nlohmann::json& root, std::string file) : root_(root), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw ConfigError(file_ + ": field " + field + ": " + why);
  }
  bool has(const std::string& field) const {
    return root_.contains(field) && !root_.at(field).is_null();
  }

  int32_t positive_int(const std::string& field) const { return int_at_least(field, 1); }
  int32_t positive_int_or(const std::string& field, int32_t fallback) const {
    return has(field) ? positive_int(field) : fallback;
  }
  // 0 or more; `fallback` when missing.
  int32_t count_or(const std::string& field, int32_t fallback) const {
    return has(field) ? int_at_least(field, 0) : fallback;
  }
  bool boolean_or(const std::string& field, bool fallback) const {
    if (!has(field)) return fallback;
    const nlohmann::json& v = root_.at(field);
    if (!v.is_boolean()) fail(field, "must be true or false, not " + std::string(v.type_name()));
    return v.get<bool>();
  }
  double probability_or(const std::string& field, double fallback) const {
    if (!has(field)) return fallback;
    const nlohmann::json& v = root_.at(field);
    if (!v.is_number()) fail(field, "must be a number, not " + std::string(v.type_name()));
    const double p = v.get<double>();
    if (!(p >= 0 && p < 1)) fail(field, "must be in [0, 1), not " + v.dump());
    return p;
  }
  std::string string_or(const std::string& field, const std::string& fallback) const {
    if (!has(field)) return fallback;
    const nlohmann::json& v = root_.at(field);
    if (!v.is_string()) fail(field, "must be a string, not " + std::string(v.type_name()));
    return v.get<std::string>();
  }
  // A list of non-negative integers (e.g. Qwen3-MoE's mlp_only_layers); empty when missing.
  std::vector<int32_t> index_list_or_empty(const std::string& field) const {
    if (!has(field)) return {};
    const nlohmann::json& v = root_.at(field);
    if (!v.is_array()) fail(field, "must be a list of layer indices, not " + v.dump());
    std::vector<int32_t> out;
    for (const auto& e : v) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0 ||
          e.get<int64_t>() > std::numeric_limits<int32_t>::max())
        fail(field, "must hold non-negative integers, not " + e.dump());
      out.push_back(static_cast<int32_t>(e.get<int64_t>()));
    }
    return out;
  }

 private:
  int32_t int_at_least(const std::string& field, int64_t low) const {
    if (!has(field)) fail(field, "is missing");
    const nlohmann::json& v = root_.at(field);
    if (!v.is_number_integer())
      fail(field, "must be an integer, not " + std::string(v.type_name()));
    const auto n = v.get<int64_t>();
    if (n < low || n > std::numeric_limits<int32_t>::max()) {
      fail(field, std::string(low > 0 ? "must be a positive" : "must be a non-negative") +
                      " 32-bit integer, not " + std::to_string(n));
    }
    return static_cast<int32_t>(n);
  }

  const nlohmann::json& root_;
  std::string file_;
};

}  // namespace cs::hf
