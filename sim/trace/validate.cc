#include "sim/trace/validate.h"

#include <algorithm>
#include <vector>

#include "sim/trace/trace_format.h"
#include "sim/trace/varying_ops.h"

namespace cs::trace {

void check_program(const workload::Program& program, const std::string& where) {
  const auto n = static_cast<uint32_t>(program.ops.size());
  auto fail = [&](const std::string& why) { throw TraceError(where + ": " + why); };
  for (uint32_t i = 0; i < n; ++i) {
    const auto& o = program.ops[i];
    if (o.deps_begin > o.deps_end || o.deps_end > program.deps.size())
      fail(op_name(program, i) + ": dependency range out of bounds");
    if (static_cast<int>(o.stream) >= workload::kNumStreams)
      fail(op_name(program, i) + ": unknown stream");
    if (o.label >= program.labels.size() && !program.labels.empty())
      fail(op_name(program, i) + ": label index out of range");
    if (o.kernel != UINT32_MAX && o.kernel >= program.kernels.size())
      fail(op_name(program, i) + ": kernel index out of range");
    for (uint32_t d = o.deps_begin; d < o.deps_end; ++d)
      if (program.deps[d] >= n) fail(op_name(program, i) + ": depends on an op that is absent");
  }
  check_varying(program, where);
  // Every op sits once on its own stream (dataflow programs: compute ops only), and the
  // predecessor on its stream is one more thing it waits for.
  std::vector<uint32_t> stream_prev(n, UINT32_MAX);
  std::vector<uint8_t> seen(n, 0);
  for (int s = 0; s < workload::kNumStreams; ++s) {
    uint32_t prev = UINT32_MAX;
    for (const uint32_t op : program.streams[s]) {
      if (op >= n)
        fail("stream " + std::to_string(s) + " lists op " + std::to_string(op) +
             ", which is absent");
      if (static_cast<int>(program.ops[op].stream) != s)
        fail(op_name(program, op) + " is listed on stream " + std::to_string(s) +
             " but belongs to stream " + std::to_string(static_cast<int>(program.ops[op].stream)));
      if (seen[op]++) fail(op_name(program, op) + " is listed twice on its stream");
      stream_prev[op] = prev;
      prev = op;
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    const bool on_stream = !program.dataflow || program.ops[i].stream == workload::Stream::kCompute;
    if (on_stream && !seen[i]) fail(op_name(program, i) + " is on no stream");
    if (!on_stream && seen[i]) fail(op_name(program, i) + " is a dataflow op but on a stream");
  }
  // Kahn's algorithm over dependencies and stream order; whatever is left lies on or behind a
  // cycle, and walking back from one of those ops through unfinished predecessors finds it.
  std::vector<uint32_t> indegree(n, 0), begin(n + 1, 0);
  auto for_preds = [&](uint32_t op, auto&& f) {
    const auto& o = program.ops[op];
    for (uint32_t d = o.deps_begin; d < o.deps_end; ++d) f(program.deps[d]);
    if (stream_prev[op] != UINT32_MAX) f(stream_prev[op]);
  };
  for (uint32_t i = 0; i < n; ++i) for_preds(i, [&](uint32_t p) { ++begin[p + 1], ++indegree[i]; });
  for (uint32_t i = 1; i <= n; ++i) begin[i] += begin[i - 1];
  std::vector<uint32_t> succ(begin[n]), fill(begin.begin(), begin.end() - 1);
  for (uint32_t i = 0; i < n; ++i) for_preds(i, [&](uint32_t p) { succ[fill[p]++] = i; });
  std::vector<uint32_t> ready;
  for (uint32_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push_back(i);
  uint32_t done = 0;
  while (!ready.empty()) {
    const uint32_t op = ready.back();
    ready.pop_back();
    ++done;
    for (uint32_t k = begin[op]; k < begin[op + 1]; ++k)
      if (--indegree[succ[k]] == 0) ready.push_back(succ[k]);
  }
  if (done == n) return;
  uint32_t start = 0;
  while (indegree[start] == 0) ++start;
  // Step to an unfinished predecessor until an op repeats: the repeat closes the cycle.
  std::vector<uint32_t> order(n, UINT32_MAX), path;
  uint32_t op = start;
  while (order[op] == UINT32_MAX) {
    order[op] = static_cast<uint32_t>(path.size());
    path.push_back(op);
    uint32_t next = UINT32_MAX;
    for_preds(op, [&](uint32_t p) {
      if (next == UINT32_MAX && indegree[p] != 0) next = p;
    });
    op = next;
  }
  std::vector<uint32_t> cycle(path.begin() + order[op], path.end());
  std::reverse(cycle.begin(), cycle.end());
  std::string text;
  for (const uint32_t c : cycle) text += op_name(program, c) + " -> ";
  text += op_name(program, cycle.front());
  fail("dependency cycle: " + text);
}

}  // namespace cs::trace
