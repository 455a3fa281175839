#include "sim/config/run_config.h"

#include "sim/config/config_error.h"
#include "sim/config/embedded_presets.h"
#include "sim/config/field_override.h"
#include "sim/config/text_proto.h"

namespace cs {

LoadedConfig load_run_config(const std::string& path, const std::string& preset,
                             const std::vector<std::string>& overrides) {
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
  for (const auto& o : overrides) apply_override(loaded.config, o);
  return loaded;
}

}  // namespace cs
