#include <cstdio>

#include "sim/trace/chakra_import.h"

namespace cs::trace {

namespace {

std::string count(uint64_t n, const char* what) {
  return std::to_string(n) + " " + what;
}

}  // namespace

void print_chakra_summary(std::ostream& out, const ChakraSummary& s) {
  auto row = [&out](const std::string& k, const std::string& v) {
    out << "  " << k << std::string(k.size() < 22 ? 22 - k.size() : 1, ' ') << v << '\n';
  };
  out << "Chakra trace: " << s.ranks << (s.ranks == 1 ? " rank" : " ranks") << ", " << s.nodes
      << " nodes" << (s.schema.empty() ? "" : ", schema " + s.schema) << '\n';
  row("GPU", count(s.gpu_kernels, "kernels") + ", " + count(s.memory_nodes, "memory moves"));
  char host[64];
  std::snprintf(host, sizeof host, "%.3f ms", s.host_time.as_seconds() * 1e3);
  row("CPU operators", count(s.cpu_ops, "") + (s.cpu_ops_skipped > 0
                                                   ? "(" + count(s.cpu_ops_skipped, "skipped") + ")"
                                                   : std::string("on host threads, ") + host));
  std::string colls;
  for (const auto& [name, n] : s.collectives)
    colls += (colls.empty() ? "" : ", ") + name + " " + std::to_string(n);
  row("collectives", colls.empty() ? "none" : colls);
  if (s.per_peer_all_to_alls > 0)
    row("", count(s.per_peer_all_to_alls, "ALL_TO_ALL with per-peer sizes (all-to-all-v)"));
  if (s.single_rank_collectives > 0)
    row("", count(s.single_rank_collectives, "over one rank (no traffic, no time)"));
  row("point-to-point", count(s.sends, "sends") + ", " + count(s.recvs, "receives"));
  row("process groups", s.groups == 0 ? "none (collectives span all ranks)"
                                      : std::to_string(s.groups) + " from " + s.groups_from);
  row("comm wrappers", count(s.wrappers_paired, "paired with a GPU collective") + ", " +
                           count(s.wrappers_dropped, "dropped (no comm attrs, no GPU collective)"));
  row("metadata nodes", count(s.metadata_nodes, "(no time)"));
  const uint64_t dangling = s.dangling_ctrl_deps + s.dangling_data_deps;
  row("dangling deps",
      dangling == 0
          ? "none"
          : count(dangling, "dropped") + " (" + count(s.dangling_ctrl_deps, "ctrl") + ", " +
                count(s.dangling_data_deps, "data") + "; --strict-deps makes them errors)");
  for (const auto& e : s.examples) out << "    " << e << '\n';
  const uint64_t dropped = dangling + s.wrappers_dropped;
  if (s.examples.size() < dropped)
    out << "    ... and " << dropped - s.examples.size() << " more\n";
  row("launch cycles", s.launch_edges_cut == 0
                           ? "none"
                           : count(s.launch_edges_cut, "edges cut") +
                                 " (GPU kernel -> the CPU op that launched it or ran before it; "
                                 "--strict-deps makes them errors)");
  for (const auto& e : s.cut_edges) out << "    " << e << '\n';
  if (s.cut_edges.size() < s.launch_edges_cut)
    out << "    ... and " << s.launch_edges_cut - s.cut_edges.size() << " more\n";
}

}  // namespace cs::trace
