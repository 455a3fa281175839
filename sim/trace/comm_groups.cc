#include "sim/trace/comm_groups.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/trace/trace_format.h"

namespace cs::trace {

void write_comm_groups(const std::vector<std::vector<int32_t>>& groups, const std::string& path) {
  using nlohmann::json;
  std::ofstream out(path);
  if (!out) throw TraceError(path + ": cannot write");
  out << '{';
  for (std::size_t g = 0; g < groups.size(); ++g)
    out << (g ? ",\n " : "\n ") << json(std::to_string(g)).dump() << ": " << json(groups[g]).dump();
  out << "\n}\n";
  if (!out) throw TraceError(path + ": cannot write");
}

}  // namespace cs::trace
