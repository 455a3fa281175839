#include "sim/trace/chakra_groups.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <climits>
#include <set>

#include "sim/trace/trace_format.h"

namespace cs::trace {

namespace {

using nlohmann::json;

std::vector<int32_t> ranks_of(const json& list, const std::string& where) {
  if (!list.is_array()) throw TraceError(where + ": ranks must be a list of integers");
  std::vector<int32_t> out;
  for (const json& r : list) {
    if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() > INT32_MAX)
      throw TraceError(where + ": rank " + r.dump() + " is not a non-negative integer");
    out.push_back(static_cast<int32_t>(r.get<int64_t>()));
  }
  return out;
}

// A pg_name may be written as a number in hand-made files.
std::string name_of(const json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  throw TraceError(where + ": pg_name must be a string");
}

void add(CommGroups& groups, std::string name, std::vector<int32_t> ranks,
         const std::string& where) {
  if (!groups.emplace(name, std::move(ranks)).second)
    throw TraceError(where + ": pg_name \"" + name + "\" is listed twice");
}

// PyTorch's pg_config: [{"pg_name": ..., "ranks": [...], "group_size": n}, ...].
CommGroups from_pg_config(const json& list, const std::string& file) {
  CommGroups groups;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& g = list[i];
    const std::string where = file + ": group #" + std::to_string(i);
    if (!g.is_object() || !g.contains("pg_name"))
      throw TraceError(where + ": expected an object with pg_name and ranks");
    const std::string name = name_of(g["pg_name"], where);
    const std::string named = file + ": group \"" + name + "\"";
    std::vector<int32_t> ranks =
        g.contains("ranks") ? ranks_of(g["ranks"], named) : std::vector<int32_t>{};
    if (!ranks.empty() && g.contains("group_size") && g["group_size"].is_number_integer() &&
        g["group_size"].get<int64_t>() != static_cast<int64_t>(ranks.size()))
      throw TraceError(named + ": group_size " + g["group_size"].dump() + " but " +
                       std::to_string(ranks.size()) + " ranks listed");
    add(groups, name, std::move(ranks), file);
  }
  return groups;
}

CommGroups from_json(const json& doc, const std::string& file) {
  if (doc.is_array()) return from_pg_config(doc, file);
  if (!doc.is_object())
    throw TraceError(file +
                     ": expected {\"pg_name\": [ranks], ...} or a pg_config list "
                     "[{\"pg_name\": ..., \"ranks\": [...]}, ...]");
  CommGroups groups;
  for (const auto& [name, ranks] : doc.items())
    add(groups, name, ranks_of(ranks, file + ": group \"" + name + "\""), file);
  return groups;
}

json parse_or_throw(std::string_view text, const std::string& file) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number overflow
    throw TraceError(file + ": not JSON (" + e.what() + ")");
  }
}

// The converter stores inputs.values as Python's str() of the op's argument list: a string
// argument shows as '...' (no escapes unless it holds quotes or backslashes).
std::optional<std::string> unwrap_python_list(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  if (text.size() >= 4 && text.substr(0, 2) == "['" && text.substr(text.size() - 2) == "']")
    return std::string(text.substr(2, text.size() - 4));
  return std::nullopt;
}

}  // namespace

CommGroups parse_comm_groups(std::string_view text, const std::string& file) {
  // nlohmann keeps the last of repeated keys; a pg_name listed twice is a mistake to report.
  std::set<std::string> names;
  std::string repeated;
  const json::parser_callback_t note_keys = [&](int depth, json::parse_event_t event,
                                                json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && parsed.is_string() &&
        !names.insert(parsed.get<std::string>()).second && repeated.empty())
      repeated = parsed.get<std::string>();
    return true;
  };
  json doc;
  try {
    doc = json::parse(text, note_keys);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number overflow
    throw TraceError(file + ": not JSON (" + e.what() + ")");
  }
  if (!repeated.empty()) throw TraceError(file + ": pg_name \"" + repeated + "\" is listed twice");
  // A file given on purpose that names no group would be silently the same as no file.
  if ((doc.is_object() || doc.is_array()) && doc.empty())
    throw TraceError(file + ": names no process group ({} or []); give at least one, or leave " +
                     "--comm-groups out");
  return from_json(doc, file);
}

std::optional<CommGroups> metadata_comm_groups(const std::vector<ChakraProtoMsg::Node>& nodes,
                                               const std::string& file, int32_t rank) {
  std::optional<CommGroups> out;
  for (const auto& node : nodes) {
    if (node.type() != ChakraProtoMsg::METADATA_NODE ||
        node.name().find("process_group:init") == std::string::npos)
      continue;
    const std::string where = file + ": rank " + std::to_string(rank) + ": node " +
                              std::to_string(node.id()) + " (" + node.name() + ")";
    const std::string& values = node.inputs().values();
    json doc = json::parse(values, nullptr, false);
    if (doc.is_discarded()) {
      const auto inner = unwrap_python_list(values);
      if (!inner) throw TraceError(where + ": inputs.values is not a pg_config JSON list");
      doc = parse_or_throw(*inner, where);
    }
    // A list holding the JSON text (or the list) as its one argument.
    while (doc.is_array() && doc.size() == 1 && (doc[0].is_string() || doc[0].is_array()))
      doc = doc[0].is_string() ? parse_or_throw(doc[0].get<std::string>(), where) : json(doc[0]);
    if (!doc.is_array()) throw TraceError(where + ": inputs.values is not a pg_config JSON list");
    CommGroups groups = from_pg_config(doc, where);
    if (!out) out.emplace();
    merge_comm_groups(*out, groups, where);
  }
  return out;
}

void merge_comm_groups(CommGroups& into, const CommGroups& more, const std::string& source) {
  for (const auto& [name, ranks] : more) {
    const auto [it, fresh] = into.emplace(name, ranks);
    if (!fresh && it->second != ranks)
      throw TraceError(source + ": group \"" + name +
                       "\" lists other ranks than another rank's trace does");
  }
}

}  // namespace cs::trace
