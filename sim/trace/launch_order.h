// Finds the dependency edges of one Chakra rank that run from a GPU kernel back to the CPU
// operator that launched it (or to one that ran before that launcher): the cycles that chakra's
// trace linker writes through its synchronization dependencies (mlcommons/chakra issue 134).
#pragma once

#include <cstdint>
#include <vector>

namespace cs::trace {

// One rank's dependency graph over node positions in its file.
struct LaunchGraph {
  const std::vector<std::vector<uint32_t>>& preds;  // preds[i]: the nodes i waits for
  const std::vector<uint8_t>& cpu;                  // 1 for a CPU operator (is_cpu_op)
  // A GPU node's launcher (the CPU operator in its ctrl_deps), else kNoLauncher.
  const std::vector<uint32_t>& launcher;
};
inline constexpr uint32_t kNoLauncher = UINT32_MAX;

// `op` waits for `kernel`, which `launcher` launched.
struct BackEdge {
  uint32_t kernel;
  uint32_t op;
  uint32_t launcher;
};

// The edges kernel -> op (op waits for the kernel) where op is the kernel's launcher, or reaches
// that launcher through CPU operators alone: op runs before the launcher, the launcher before its
// kernel, so op cannot have waited for the kernel. Each such edge closes a cycle with the launch
// edge, so only edges inside a cycle (a strongly connected component) are candidates; the result
// is in file order of (op, kernel) and does not depend on the order of `preds` lists.
std::vector<BackEdge> launch_order_back_edges(const LaunchGraph& g);

}  // namespace cs::trace
