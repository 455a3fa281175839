#include "sim/trace/comm_groups.h"

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/config/json_input.h"
#include "sim/trace/trace_format.h"

namespace cs::trace {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& file, const std::string& where, const std::string& why) {
  throw TraceError(file + ": " + where + ": " + why + " (expected {\"pg_name\": [ranks], ...})");
}

// nlohmann keeps the last of repeated keys; a repeated pg_name is a mistake worth naming.
json parse_rejecting_repeated_names(std::string_view text, const std::string& file) {
  std::set<std::string> names;
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key &&
        !names.insert(parsed.get<std::string>()).second)
      fail(file, (json::json_pointer() / parsed.get<std::string>()).to_string(),
           "a pg_name repeats");
    return true;
  };
  try {
    return json::parse(text, check);
  } catch (const json::parse_error& e) {
    throw TraceError(file + ": not valid JSON: " + json_error_reason(e));
  }
}

std::vector<int32_t> ranks_of(const json& list, const json::json_pointer& where,
                              const std::string& file) {
  if (!list.is_array()) fail(file, where.to_string(), "not a list of ranks but " + list.dump());
  std::vector<int32_t> ranks;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const json& r = list[k];
    // nlohmann stores every non-negative integer as unsigned, negative ones as signed.
    if (!r.is_number_unsigned() || r.get<uint64_t>() > std::numeric_limits<int32_t>::max())
      fail(file, (where / k).to_string(), "a rank is a non-negative integer, not " + r.dump());
    ranks.push_back(r.get<int32_t>());
  }
  return ranks;
}

}  // namespace

CommGroups parse_comm_groups(std::string_view text, const std::string& file) {
  const json root = parse_rejecting_repeated_names(text, file);
  if (!root.is_object())
    fail(file, "/", std::string("the top level must be an object, not ") + root.type_name());
  CommGroups groups;
  for (const auto& [name, list] : root.items())
    groups.emplace(name, ranks_of(list, json::json_pointer() / name, file));
  return groups;
}

void write_comm_groups(const std::vector<std::vector<int32_t>>& groups, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw TraceError(path + ": cannot write");
  out << '{';
  for (std::size_t g = 0; g < groups.size(); ++g)
    out << (g ? ",\n " : "\n ") << json(std::to_string(g)).dump() << ": " << json(groups[g]).dump();
  out << "\n}\n";
  if (!out) throw TraceError(path + ": cannot write");
}

}  // namespace cs::trace
