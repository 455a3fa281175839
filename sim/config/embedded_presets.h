// Preset text files (topologies/, workloads/, stacks/) compiled into the binary, looked up by name.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cs {

struct EmbeddedFile {
  std::string_view path;  // relative to the source root, e.g. "topologies/dgx-h100.textproto"
  std::string_view text;
};

const std::vector<EmbeddedFile>& embedded_presets();

// The text of preset `name` in `folder` ("topologies", "workloads", "stacks", ...), or nullptr if
// none. Names match ignoring ASCII case ("H100", "DGX-H100"), as people write them.
const EmbeddedFile* find_preset(std::string_view folder, std::string_view name);
// What `parse` makes of preset `name` of `folder`, made once per preset for the whole process:
// presets are compiled in and never change, and a plan loads its stack and GPU for each of its
// thousands of candidates. nullptr when `name` is no preset of `folder` (a file, read each time).
template <typename T, typename Parse>
const T* parsed_preset(std::string_view folder, std::string_view name, Parse parse) {
  static std::mutex mutex;
  static std::map<std::string_view, T> parsed;  // by the preset's path: any spelling of its name
  const EmbeddedFile* preset = find_preset(folder, name);
  if (preset == nullptr) return nullptr;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = parsed.find(preset->path);
  if (it == parsed.end()) it = parsed.emplace(preset->path, parse(*preset)).first;
  return &it->second;  // std::map nodes stay put
}
// The preset's own name (its file stem) for `name` in any case, or `name` when no preset matches
// (a file path). Tables keyed by GPU or topology name compare exact strings, so configs store
// this form.
std::string canonical_preset_name(std::string_view folder, std::string_view name);
// A preset's text, or a file's: `label` names where it came from, for error messages.
struct PresetText {
  std::string text;
  std::string label;
};
// Preset `name_or_path` of `folder`, else the file at that path, read by read_text_file (so that
// a device, FIFO or folder there is refused saying what it is); nullopt when there is neither.
std::optional<PresetText> find_preset_or_file(std::string_view folder,
                                              const std::string& name_or_path);
// Names (file stems) of the presets in `folder`, sorted.
std::vector<std::string> preset_names(std::string_view folder);
// The same names as one comma-separated list, for help texts and errors.
std::string preset_list(std::string_view folder);

}  // namespace cs
