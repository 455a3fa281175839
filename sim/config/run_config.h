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

// Exactly one of `path` and `preset` is non-empty. Throws ConfigError for an unknown preset
// (listing the presets), an unreadable file, a syntax error (file:line:column) or a bad override.
LoadedConfig load_run_config(const std::string& path, const std::string& preset,
                             const std::vector<std::string>& overrides);

}  // namespace cs
