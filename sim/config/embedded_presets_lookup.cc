#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>

#include "sim/config/embedded_presets.h"
#include "sim/config/text_proto.h"

namespace cs {

namespace {
constexpr std::string_view kSuffix = ".textproto";

// "topologies/dgx-h100.textproto" -> folder "topologies", stem "dgx-h100".
bool split(std::string_view path, std::string_view& folder, std::string_view& stem) {
  const auto slash = path.rfind('/');
  if (slash == std::string_view::npos || !path.ends_with(kSuffix)) return false;
  folder = path.substr(0, slash);
  stem = path.substr(slash + 1, path.size() - slash - 1 - kSuffix.size());
  return true;
}

bool same_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}
}  // namespace

const EmbeddedFile* find_preset(std::string_view folder, std::string_view name) {
  const EmbeddedFile* folded = nullptr;
  for (const auto& f : embedded_presets()) {
    std::string_view dir, stem;
    if (!split(f.path, dir, stem) || dir != folder) continue;
    if (stem == name) return &f;
    if (folded == nullptr && same_ignoring_case(stem, name)) folded = &f;
  }
  return folded;
}

std::string canonical_preset_name(std::string_view folder, std::string_view name) {
  const EmbeddedFile* f = find_preset(folder, name);
  std::string_view dir, stem;
  return f != nullptr && split(f->path, dir, stem) ? std::string(stem) : std::string(name);
}

std::optional<PresetText> find_preset_or_file(std::string_view folder,
                                              const std::string& name_or_path) {
  if (const EmbeddedFile* preset = find_preset(folder, name_or_path))
    return PresetText{std::string(preset->text), std::string(preset->path)};
  std::error_code ec;
  if (std::filesystem::exists(name_or_path, ec))
    return PresetText{read_text_file(name_or_path), name_or_path};
  return std::nullopt;
}

std::vector<std::string> preset_names(std::string_view folder) {
  std::vector<std::string> names;
  for (const auto& f : embedded_presets()) {
    std::string_view dir, stem;
    if (split(f.path, dir, stem) && dir == folder) names.emplace_back(stem);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string preset_list(std::string_view folder) {
  std::string list;
  for (const auto& name : preset_names(folder)) list += (list.empty() ? "" : ", ") + name;
  return list;
}

}  // namespace cs
