// Loads a run configuration from a preset or a text-format file and applies --set overrides.
#pragma once

#include <string>
#include <vector>

#include "proto/config.pb.h"

namespace cs {

struct LoadedConfig {
  clustersim::RunConfig config;
  std::string source;  // file path or "preset NAME", for error messages
};

// The preset whose layout, cluster and training settings a bare --hf-config (no CONFIG, no
// --preset) runs with: 64 H100s, TP 2 x DP 32, sequence length 8192 (workloads/llama3-8b).
inline constexpr const char* kHfConfigBasePreset = "llama3-8b";

// Exactly one of `path` and `preset` is non-empty, or neither with `hf_config` (then the preset is
// kHfConfigBasePreset). A non-empty `hf_config` replaces the model by
// that Hugging Face config's (hf_config.h), keeping the run's seq_length, before the overrides.
// Throws ConfigError for an unknown preset (listing the presets), an unreadable file, a syntax
// error (file:line:column), a Hugging Face config.json given as `path` (naming --hf-config), a bad
// Hugging Face config or a bad override.
LoadedConfig load_run_config(const std::string& path, const std::string& preset,
                             const std::vector<std::string>& overrides,
                             const std::string& hf_config = "");

// Rewrites cluster.gpu and cluster.topology that name a preset in another case ("H100") to the
// preset's own name, which the GPU- and topology-keyed tables compare exactly.
void canonicalize_preset_names(clustersim::RunConfig& config);

}  // namespace cs
