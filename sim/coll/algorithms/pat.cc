// PAT (NCCL 2.23+, "parallel aggregated trees"): all-gather and reduce-scatter in log2(n) steps
// for groups of one GPU per server, where a ring pays a network hop per rank. Modelled as Bruck's
// doubling: at step k every rank passes what it has gathered to the rank 2^k below it (all-gather),
// or the reverse, halving, with partial sums (reduce-scatter).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/entries.h"
#include "sim/coll/fluid_form.h"

namespace cs::coll {
namespace {

// The doubling steps for n ranks: distance d = 2^k and the blocks each rank passes, min(d, n - d)
// (together n - 1: every block reaches every rank once).
std::vector<std::pair<uint32_t, uint32_t>> doubling_steps(uint32_t n) {
  std::vector<std::pair<uint32_t, uint32_t>> steps;
  for (uint32_t d = 1; d < n; d *= 2) steps.emplace_back(d, std::min(d, n - d));
  return steps;
}

// Adds the messages moving blocks [first, first + count) (mod n, one unit per block) from `src` to
// `dst`: one message, or two where the run wraps past block n - 1.
void add_blocks(ScheduleBuilder& b, uint32_t n, uint32_t src, uint32_t dst, uint32_t first,
                uint32_t count, Action action, const std::vector<uint32_t>& deps,
                std::vector<uint32_t>& sent) {
  const uint32_t head = std::min(count, n - first);
  sent.push_back(b.add(Message{src, dst, first, first, head, action}, deps));
  if (count > head) sent.push_back(b.add(Message{src, dst, 0, 0, count - head, action}, deps));
}

// All-gather: rank r starts with block r; at step (d, c) it sends blocks [r, r + c) to r - d and
// receives [r + d, r + d + c) from r + d, having then [r, r + d + c).
// Reduce-scatter: the same steps backwards, each send adding its partial sums of the blocks the
// receiver collects, so that rank r ends with block r summed over every rank.
Schedule build_pat(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  const bool gather = key.op == Op::kAllGather;
  ScheduleBuilder b(key, n);
  std::vector<std::pair<uint32_t, uint32_t>> steps = doubling_steps(n);
  if (!gather) std::reverse(steps.begin(), steps.end());
  // Every message into each rank so far: a send forwards or sums what they brought.
  std::vector<std::vector<uint32_t>> landed(n), next(n);
  for (const auto& [d, c] : steps) {
    for (auto& v : next) v.clear();
    for (uint32_t r = 0; r < n; ++r) {
      if (gather) {
        add_blocks(b, n, r, (r + n - d) % n, r, c, Action::kCopy, landed[r], next[(r + n - d) % n]);
      } else {
        add_blocks(b, n, r, (r + d) % n, (r + d) % n, c, Action::kReduce, landed[r],
                   next[(r + d) % n]);
      }
    }
    for (uint32_t r = 0; r < n; ++r)
      landed[r].insert(landed[r].end(), next[r].begin(), next[r].end());
  }
  return std::move(b).build();
}

// Each step is one phase: its n connections (r to r - d, or r + d) as the cycles of that shift,
// each carrying its blocks, then the step's latency.
std::vector<FluidPhase> pat_fluid_phases(const FluidContext& ctx) {
  const auto n = static_cast<uint32_t>(ctx.key.n);
  const bool gather = ctx.key.op == Op::kAllGather;
  const double block = static_cast<double>(ctx.size) / n;
  std::vector<std::pair<uint32_t, uint32_t>> steps = doubling_steps(n);
  if (!gather) std::reverse(steps.begin(), steps.end());
  std::vector<FluidPhase> phases;
  for (const auto& [d, c] : steps) {
    const uint32_t shift = gather ? n - d : d;  // r sends to r + shift
    FluidPhase& phase = phases.emplace_back(1);
    const uint32_t cycles = std::gcd(n, shift);
    for (uint32_t start = 0; start < cycles; ++start) {
      std::vector<uint32_t> cycle;
      for (uint32_t r = start;; r = (r + shift) % n) {
        cycle.push_back(r);
        if ((r + shift) % n == start) break;
      }
      ctx.add_ring(phase[0], cycle, block * c);
      phase[0].walk = std::max(phase[0].walk, ctx.walk(cycle, 1));
    }
    ctx.stats.messages += n + c - 1;  // the c - 1 runs that wrap past block n - 1 take two
  }
  ctx.stats.bytes_sent = static_cast<Bytes>(n - 1) * ctx.size;
  return phases;
}

// Connections all alike: inside one server, or one GPU per server.
bool pat_fluid_fits(const ScheduleKey& key) {
  return key.node_size == 1 || key.node_size >= key.n;
}

}  // namespace

AlgorithmInfo pat_algorithm() {
  AlgorithmInfo a;
  a.value = Algorithm::kPat;
  a.name = "pat";
  a.nccl = NcclAlgo::kPat;
  for (const Op op : {Op::kAllGather, Op::kReduceScatter}) {
    OpForm form;
    form.op = op;
    form.build = build_pat;
    form.fluid = {pat_fluid_fits, pat_fluid_phases};
    a.ops.push_back(form);
  }
  return a;
}

}  // namespace cs::coll
