// Direct: every rank sends to its peers at once, with nothing to wait for (all-to-all, and
// send/recv as nccl-tests runs it).
#include <utility>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/entries.h"
#include "sim/coll/fluid_form.h"

namespace cs::coll {
namespace {

// Every rank sends block d to rank d at once (rank r starts with d = r+1, staggered as NCCL
// does), plus its own block as a local copy.
Schedule build_all_to_all(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  ScheduleBuilder b(key, 2 * n, 2);  // units [0, n): send blocks; [n, 2n): receive slots
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t o = 1; o <= n; ++o) {
      const uint32_t d = (r + o) % n;
      b.add(Message{r, d, d, n + r, 1, Action::kCopy});
    }
  }
  return std::move(b).build();
}

// Rank r sends its buffer to rank (r+1) mod n.
Schedule build_send_recv(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  ScheduleBuilder b(key, 2, 2);  // unit 0: send buffer; unit 1: receive buffer
  for (uint32_t r = 0; r < n; ++r) b.add(Message{r, (r + 1) % n, 0, 1, 1, Action::kCopy});
  return std::move(b).build();
}

// Every rank sends its whole buffer to the next at once (ring attention's hop): one step, so the
// run lasts as long as its slowest connection plus that connection's latency.
std::vector<FluidPhase> send_recv_fluid_phases(const FluidContext& ctx) {
  const auto n = static_cast<uint32_t>(ctx.key.n);
  const auto ring = iota_ranks(0, n);
  FluidPhase phase(1);
  ctx.add_ring(phase[0], ring, static_cast<double>(ctx.size));
  phase[0].walk = ctx.walk(ring, 1);
  ctx.stats.bytes_sent = static_cast<Bytes>(n) * ctx.size;
  ctx.stats.messages = n;
  return {std::move(phase)};
}

}  // namespace

// No pipelining: the sends wait for nothing, so neither chunks nor a window apply. NCCL runs
// all-to-all and send/recv as point-to-point sends, outside its cost model, so `nccl` keeps its
// default.
AlgorithmInfo direct_algorithm() {
  AlgorithmInfo a;
  a.value = Algorithm::kDirect;
  a.name = "direct";
  OpForm all_to_all;
  all_to_all.op = Op::kAllToAll;
  all_to_all.build = build_all_to_all;
  OpForm send_recv;
  send_recv.op = Op::kSendRecv;
  send_recv.build = build_send_recv;
  send_recv.fluid = {[](const ScheduleKey&) { return true; }, send_recv_fluid_phases};
  a.ops = {all_to_all, send_recv};
  return a;
}

}  // namespace cs::coll
