#include "sim/config/run_config.h"

#include "sim/config/config_error.h"
#include "sim/config/embedded_presets.h"
#include "sim/config/field_override.h"
#include "sim/config/hf_config.h"
#include "sim/config/text_proto.h"

namespace cs {

namespace {

// A Hugging Face config.json is the first file a new user has at hand; the text-format parser
// would only say "expected identifier" at line 1.
void refuse_hf_config_json(const std::string& path, const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return;
  if (text.find("\"architectures\"") == std::string::npos &&
      text.find("\"model_type\"") == std::string::npos)
    return;
  throw ConfigError(path +
                    ": is a Hugging Face config.json, not a clustersim config (text format, "
                    "proto/config.proto); give it as --hf-config " +
                    path +
                    " (with --preset NAME or a CONFIG for the layout and cluster; without, the " +
                    kHfConfigBasePreset + " preset's)");
}

}  // namespace

LoadedConfig load_run_config(const std::string& path, const std::string& preset,
                             const std::vector<std::string>& overrides,
                             const std::string& hf_config) {
  if (path.empty() && preset.empty() && !hf_config.empty())
    return load_run_config(path, kHfConfigBasePreset, overrides, hf_config);
  if (path.empty() == preset.empty())
    throw ConfigError("give either a config file or --preset NAME");
  LoadedConfig loaded;
  if (!preset.empty()) {
    const EmbeddedFile* file = find_preset("workloads", preset);
    if (file == nullptr)
      throw ConfigError("unknown preset '" + preset + "' (presets: " + preset_list("workloads") +
                        ")");
    loaded.source = std::string(file->path);
    parse_text_proto(file->text, loaded.source, &loaded.config);
  } else {
    loaded.source = path;
    const std::string text = read_text_file(path);
    refuse_hf_config_json(path, text);
    parse_text_proto(text, path, &loaded.config);
  }
  if (!hf_config.empty()) {
    const int32_t seq_length = loaded.config.model().seq_length();
    *loaded.config.mutable_model() = model_from_hf_config(hf_config);
    loaded.config.mutable_model()->set_seq_length(seq_length);
    loaded.source += " with the model of " + hf_config;
  }
  for (const auto& o : overrides) apply_override(loaded.config, o);
  canonicalize_preset_names(loaded.config);
  return loaded;
}

void canonicalize_preset_names(clustersim::RunConfig& config) {
  auto& cluster = *config.mutable_cluster();
  if (!cluster.gpu().empty())
    cluster.set_gpu(canonical_preset_name("topologies/gpus", cluster.gpu()));
  if (!cluster.topology().empty())
    cluster.set_topology(canonical_preset_name("topologies", cluster.topology()));
}

}  // namespace cs
