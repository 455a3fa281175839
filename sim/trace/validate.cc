#include "sim/trace/validate.h"

#include <algorithm>
#include <vector>

#include "sim/trace/trace_format.h"
#include "sim/trace/varying_ops.h"

namespace cs::trace {

namespace {

[[noreturn]] void fail_program_check(const std::string& where, const std::string& why) {
  throw TraceError(where + ": " + why);
}

// Every op's dependency range, stream, label, kernel and dependencies within the program.
void check_op_indices(const workload::Program& program, const std::string& where) {
  const auto n = static_cast<uint32_t>(program.ops.size());
  const auto fail = [&](uint32_t i, const std::string& why) {
    fail_program_check(where, op_name(program, i) + why);
  };
  for (uint32_t i = 0; i < n; ++i) {
    const auto& o = program.ops[i];
    if (o.deps_begin > o.deps_end || o.deps_end > program.deps.size())
      fail(i, ": dependency range out of bounds");
    if (static_cast<int>(o.stream) >= workload::kNumStreams) fail(i, ": unknown stream");
    if (o.label >= program.labels.size() && !program.labels.empty())
      fail(i, ": label index out of range");
    if (o.kernel != UINT32_MAX && o.kernel >= program.kernels.size())
      fail(i, ": kernel index out of range");
    for (uint32_t d = o.deps_begin; d < o.deps_end; ++d)
      if (program.deps[d] >= n) fail(i, ": depends on an op that is absent");
  }
}

// Checks that every op sits once on its own stream (dataflow programs: compute ops only), and
// returns each op's predecessor on its stream, one more thing it waits for.
std::vector<uint32_t> stream_predecessors(const workload::Program& program,
                                          const std::string& where) {
  const auto n = static_cast<uint32_t>(program.ops.size());
  std::vector<uint32_t> stream_prev(n, UINT32_MAX);
  std::vector<uint8_t> seen(n, 0);
  for (int s = 0; s < workload::kNumStreams; ++s) {
    uint32_t prev = UINT32_MAX;
    for (const uint32_t op : program.streams[s]) {
      if (op >= n)
        fail_program_check(where, "stream " + std::to_string(s) + " lists op " +
                                      std::to_string(op) + ", which is absent");
      if (static_cast<int>(program.ops[op].stream) != s)
        fail_program_check(where, op_name(program, op) + " is listed on stream " +
                                      std::to_string(s) + " but belongs to stream " +
                                      std::to_string(static_cast<int>(program.ops[op].stream)));
      if (seen[op]++)
        fail_program_check(where, op_name(program, op) + " is listed twice on its stream");
      stream_prev[op] = prev;
      prev = op;
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    const bool on_stream = !program.dataflow || program.ops[i].stream == workload::Stream::kCompute;
    if (on_stream && !seen[i]) fail_program_check(where, op_name(program, i) + " is on no stream");
    if (!on_stream && seen[i])
      fail_program_check(where, op_name(program, i) + " is a dataflow op but on a stream");
  }
  return stream_prev;
}

// An op's predecessors: its dependencies, then the op before it on its stream.
struct ProgramPreds {
  const workload::Program& program;
  const std::vector<uint32_t>& stream_prev;

  template <typename F>
  void each(uint32_t op, F&& f) const {
    const auto& o = program.ops[op];
    for (uint32_t d = o.deps_begin; d < o.deps_end; ++d) f(program.deps[d]);
    if (stream_prev[op] != UINT32_MAX) f(stream_prev[op]);
  }
};

// Kahn's algorithm over dependencies and stream order: each op's predecessors left unfinished
// (all 0 but on or behind a cycle); `done` counts the ops it finished.
std::vector<uint32_t> unfinished_predecessors(const ProgramPreds& preds, uint32_t n,
                                              uint32_t& done) {
  std::vector<uint32_t> indegree(n, 0), begin(n + 1, 0);
  for (uint32_t i = 0; i < n; ++i)
    preds.each(i, [&](uint32_t p) { ++begin[p + 1], ++indegree[i]; });
  for (uint32_t i = 1; i <= n; ++i) begin[i] += begin[i - 1];
  std::vector<uint32_t> succ(begin[n]), fill(begin.begin(), begin.end() - 1);
  for (uint32_t i = 0; i < n; ++i) preds.each(i, [&](uint32_t p) { succ[fill[p]++] = i; });
  std::vector<uint32_t> ready;
  for (uint32_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push_back(i);
  done = 0;
  while (!ready.empty()) {
    const uint32_t op = ready.back();
    ready.pop_back();
    ++done;
    for (uint32_t k = begin[op]; k < begin[op + 1]; ++k)
      if (--indegree[succ[k]] == 0) ready.push_back(succ[k]);
  }
  return indegree;
}

// "a -> b -> a": a cycle among the unfinished ops, found by walking back from the first of them
// through unfinished predecessors until an op repeats (the repeat closes the cycle).
std::string cycle_text(const ProgramPreds& preds, const std::vector<uint32_t>& indegree) {
  const auto n = static_cast<uint32_t>(indegree.size());
  uint32_t start = 0;
  while (indegree[start] == 0) ++start;
  std::vector<uint32_t> order(n, UINT32_MAX), path;
  uint32_t op = start;
  while (order[op] == UINT32_MAX) {
    order[op] = static_cast<uint32_t>(path.size());
    path.push_back(op);
    uint32_t next = UINT32_MAX;
    preds.each(op, [&](uint32_t p) {
      if (next == UINT32_MAX && indegree[p] != 0) next = p;
    });
    op = next;
  }
  std::vector<uint32_t> cycle(path.begin() + order[op], path.end());
  std::reverse(cycle.begin(), cycle.end());
  std::string text;
  for (const uint32_t c : cycle) text += op_name(preds.program, c) + " -> ";
  text += op_name(preds.program, cycle.front());
  return text;
}

}  // namespace

void check_program(const workload::Program& program, const std::string& where) {
  const auto n = static_cast<uint32_t>(program.ops.size());
  check_op_indices(program, where);
  check_varying(program, where);
  const std::vector<uint32_t> stream_prev = stream_predecessors(program, where);
  // Whatever Kahn's algorithm leaves lies on or behind a cycle.
  const ProgramPreds preds{program, stream_prev};
  uint32_t done = 0;
  const std::vector<uint32_t> indegree = unfinished_predecessors(preds, n, done);
  if (done == n) return;
  fail_program_check(where, "dependency cycle: " + cycle_text(preds, indegree));
}

}  // namespace cs::trace
