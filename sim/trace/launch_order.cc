#include "sim/trace/launch_order.h"

#include <algorithm>

namespace cs::trace {

namespace {

constexpr uint32_t kUnset = UINT32_MAX;

// Tarjan's strongly connected components over edges p -> i (i waits for p), iterative so that a
// long chain of operators cannot overflow the stack. Returns a component number per node.
std::vector<uint32_t> components(const std::vector<std::vector<uint32_t>>& succ) {
  const auto n = static_cast<uint32_t>(succ.size());
  std::vector<uint32_t> index(n, kUnset), low(n, 0), comp(n, kUnset), stack;
  std::vector<uint8_t> on_stack(n, 0);
  std::vector<std::pair<uint32_t, std::size_t>> calls;  // (node, next successor to visit)
  uint32_t counter = 0, next_comp = 0;
  auto enter = [&](uint32_t v) {
    index[v] = low[v] = counter++;
    stack.push_back(v);
    on_stack[v] = 1;
    calls.emplace_back(v, 0);
  };
  for (uint32_t s = 0; s < n; ++s) {
    if (index[s] != kUnset) continue;
    enter(s);
    while (!calls.empty()) {
      const uint32_t v = calls.back().first;
      const std::size_t k = calls.back().second;
      if (k < succ[v].size()) {
        ++calls.back().second;
        const uint32_t w = succ[v][k];
        if (index[w] == kUnset)
          enter(w);
        else if (on_stack[w])
          low[v] = std::min(low[v], index[w]);
        continue;
      }
      if (low[v] == index[v]) {
        uint32_t w = kUnset;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          comp[w] = next_comp;
        } while (w != v);
        ++next_comp;
      }
      calls.pop_back();
      if (!calls.empty()) low[calls.back().first] = std::min(low[calls.back().first], low[v]);
    }
  }
  return comp;
}

}  // namespace

std::vector<BackEdge> launch_order_back_edges(const LaunchGraph& g) {
  const auto n = static_cast<uint32_t>(g.preds.size());
  std::vector<std::vector<uint32_t>> succ(n);
  for (uint32_t i = 0; i < n; ++i)
    for (const uint32_t p : g.preds[i]) succ[p].push_back(i);
  const std::vector<uint32_t> comp = components(succ);
  std::vector<uint32_t> component_size(n, 0);
  for (const uint32_t c : comp) ++component_size[c];

  std::vector<BackEdge> out;
  std::vector<uint32_t> reached_by(n, kUnset), queue;  // reached_by[x] == op: op reaches x
  for (uint32_t op = 0; op < n; ++op) {
    if (!g.cpu[op] || component_size[comp[op]] < 2) continue;
    std::vector<uint32_t> kernels;
    for (const uint32_t k : g.preds[op]) {
      if (g.cpu[k] || comp[k] != comp[op]) continue;
      const uint32_t l = g.launcher[k];
      if (l != kNoLauncher && comp[l] == comp[op]) kernels.push_back(k);
    }
    if (kernels.empty()) continue;
    std::sort(kernels.begin(), kernels.end());
    // Whatever `op` reaches through CPU operators of its cycle: the host work that ran after it.
    // A kernel's launch edge or a wait on a kernel is not host order, so GPU nodes stop the walk.
    queue.assign(1, op);
    reached_by[op] = op;
    for (std::size_t q = 0; q < queue.size(); ++q)
      for (const uint32_t s : succ[queue[q]])
        if (g.cpu[s] && comp[s] == comp[op] && reached_by[s] != op) {
          reached_by[s] = op;
          queue.push_back(s);
        }
    for (const uint32_t k : kernels)
      if (reached_by[g.launcher[k]] == op) out.push_back({k, op, g.launcher[k]});
  }
  return out;
}

}  // namespace cs::trace
