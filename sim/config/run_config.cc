#include "sim/config/run_config.h"

#include "sim/config/config_error.h"
#include "sim/config/embedded_presets.h"
#include "sim/config/field_override.h"
#include "sim/config/hf_config.h"
#include "sim/config/text_proto.h"

namespace cs {

LoadedConfig load_run_config(const std::string& path, const std::string& preset,
                             const std::vector<std::string>& overrides,
                             const std::string& hf_config) {
  if (path.empty() == preset.empty())
    throw ConfigError("give either a config file or --preset NAME");
  LoadedConfig loaded;
  if (!preset.empty()) {
    const EmbeddedFile* file = find_preset("workloads", preset);
    if (file == nullptr) {
      std::string names;
      for (const auto& n : preset_names("workloads")) names += (names.empty() ? "" : ", ") + n;
      throw ConfigError("unknown preset '" + preset + "' (presets: " + names + ")");
    }
    loaded.source = std::string(file->path);
    parse_text_proto(file->text, loaded.source, &loaded.config);
  } else {
    loaded.source = path;
    parse_text_proto(read_text_file(path), path, &loaded.config);
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
