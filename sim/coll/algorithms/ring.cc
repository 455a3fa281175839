// Rings: all-reduce as a reduce-scatter then an all-gather around the ranks, those two halves on
// their own, and broadcast as a pipelined chain around each ring (NCCL's ring algorithm).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/entries.h"
#include "sim/coll/fluid_form.h"

namespace cs::coll {

Ready ring_steps(ScheduleBuilder& b, Ring& ring, bool reduce, const BlockUnit& block_unit,
                 uint32_t len, const Ready& ready) {
  const std::size_t l = ring.size();
  Ready out = ready;
  if (l < 2) return out;
  std::vector<int64_t> received(l, kNone);  // what position p received in the previous step
  std::vector<int64_t> now(l, kNone);
  for (std::size_t p = 0; p < l; ++p) out[ring.ranks[p]].clear();
  std::vector<uint32_t> deps;
  for (std::size_t s = 0; s + 1 < l; ++s) {
    for (std::size_t p = 0; p < l; ++p) {
      const std::size_t next = (p + 1) % l;
      const std::size_t block = (p + 2 * l - s - (reduce ? 1 : 0)) % l;
      deps.clear();
      ring.out[p].add_window_dep(ring.window, deps);
      if (s < static_cast<std::size_t>(ring.window)) {
        for (uint32_t d : ready[ring.ranks[p]]) deps.push_back(d);
        for (uint32_t d : ready[ring.ranks[next]]) deps.push_back(d);
      }
      if (s > 0) deps.push_back(static_cast<uint32_t>(received[p]));
      const uint32_t unit = block_unit(block);
      const uint32_t m = b.add(Message{ring.ranks[p], ring.ranks[next], unit, unit, len,
                                       reduce ? Action::kReduce : Action::kCopy},
                               deps);
      ring.out[p].sends.push_back(m);
      now[next] = m;
      if (!reduce) out[ring.ranks[next]].push_back(m);
    }
    received.swap(now);
  }
  if (reduce) {
    for (std::size_t p = 0; p < l; ++p) out[ring.ranks[p]] = {static_cast<uint32_t>(received[p])};
  }
  return out;
}

int32_t mesh_ring_count(int32_t n) {
  int32_t count = 1;
  for (int32_t k = 2; k < n; ++k) count *= k;
  return count;
}

std::vector<uint32_t> mesh_ring(uint32_t n, uint32_t c) {
  std::vector<uint32_t> order = iota_ranks(0, n);
  const auto count = static_cast<uint32_t>(mesh_ring_count(static_cast<int32_t>(n)));
  for (uint32_t k = 0; k < c % count; ++k) std::next_permutation(order.begin() + 1, order.end());
  return order;
}

std::vector<uint32_t> channel_ring(uint32_t n, uint32_t local, uint32_t ch, bool mesh) {
  if (local <= 1 || local >= n) return mesh ? mesh_ring(n, ch) : iota_ranks(0, n);
  std::vector<uint32_t> order;
  order.reserve(n);
  for (uint32_t q = 0; q * local < n; ++q) {
    // The last server may hold fewer members; its ring enters and leaves on its own indices.
    const uint32_t size = std::min(local, n - q * local);
    const uint32_t a = ch % size, b = (ch + 1) % size;
    const uint32_t entry = q % 2 == 0 ? a : b, exit = q % 2 == 0 ? b : a;
    order.push_back(q * local + entry);
    for (uint32_t i = 1; i < size; ++i) {
      const uint32_t l = (entry + i) % size;
      if (l != exit) order.push_back(q * local + l);
    }
    if (exit != entry) order.push_back(q * local + exit);
  }
  return order;
}

namespace {

// All-reduce: n shards × `chunks`; per chunk, n−1 reduce-scatter steps then n−1 all-gather steps
// around ranks 0→1→…→n−1→0 (or each channel's channel_ring). Each send waits for the step it
// forwards and for the send `window` places earlier on its connection (NCCL's ring primitives
// keep up to NCCL_STEPS slots in flight); every algorithm's connections follow that window rule.
// Reduce-scatter and all-gather are the first and the second half of that.
Schedule build_ring(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  const auto c = static_cast<uint32_t>(key.chunks);
  const auto channels = static_cast<uint32_t>(key.channels);
  // Shard-major layout (unit = shard·channels·c + channel·c + chunk), so that shard r is one
  // contiguous block; each channel moves its own slice of every shard.
  ScheduleBuilder b(key, n * channels * c);
  std::vector<Ring> rings;
  for (uint32_t ch = 0; ch < channels; ++ch)
    rings.emplace_back(channel_ring(n, static_cast<uint32_t>(key.local_size), ch, key.mesh),
                       key.window);
  const Ready none(n);
  for (uint32_t j = 0; j < c; ++j) {
    for (uint32_t ch = 0; ch < channels; ++ch) {
      Ring& ring = rings[ch];
      const BlockUnit unit = [&](std::size_t position) {
        return ring.ranks[position] * channels * c + ch * c + j;
      };
      if (key.op == Op::kAllGather) {
        ring_steps(b, ring, false, unit, 1, none);
      } else {
        const Ready reduced = ring_steps(b, ring, true, unit, 1, none);
        if (key.op == Op::kAllReduce) ring_steps(b, ring, false, unit, 1, reduced);
      }
    }
  }
  return std::move(b).build();
}

// Broadcast: a chain from the root around each channel's ring (ranks root, root+1, … with one
// channel; channel_ring's rail-aligned order across servers, so that each channel leaves a
// server on its own NIC), each channel carrying its slice of the buffer in `chunks` pieces, the
// last one `tail` / kTailParts as long as the others where tail > 0.
Schedule build_broadcast(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  const auto c = static_cast<uint32_t>(key.chunks);
  const auto channels = static_cast<uint32_t>(key.channels);
  const auto piece = static_cast<uint32_t>(key.tail == 0 ? 1 : kTailParts);
  const uint32_t last = key.tail == 0 ? 1 : static_cast<uint32_t>(key.tail);
  const uint32_t per_channel = (c - 1) * piece + last;
  ScheduleBuilder b(key, channels * per_channel);
  std::vector<uint32_t> deps;
  for (uint32_t ch = 0; ch < channels; ++ch) {
    const auto ring = channel_ring(n, static_cast<uint32_t>(key.local_size), ch, key.mesh);
    const auto root = static_cast<std::size_t>(
        std::find(ring.begin(), ring.end(), static_cast<uint32_t>(key.root)) - ring.begin());
    std::vector<Connection> chain(n);  // chain[p]: position p's sends to p+1
    std::vector<int64_t> got(n, kNone);
    for (uint32_t j = 0; j < c; ++j) {
      for (uint32_t p = 0; p + 1 < n; ++p) {
        deps.clear();
        chain[p].add_window_dep(key.window, deps);
        if (p > 0) deps.push_back(static_cast<uint32_t>(got[p]));
        const uint32_t unit = ch * per_channel + j * piece;
        const uint32_t m = b.add(Message{ring[(root + p) % n], ring[(root + p + 1) % n], unit, unit,
                                         j + 1 < c ? piece : last, Action::kCopy},
                                 deps);
        chain[p].sends.push_back(m);
        got[p + 1] = m;
      }
    }
  }
  return std::move(b).build();
}

bool uniform_hops(const ScheduleKey& key) {
  return key.node_size == 1 || key.node_size >= key.n;
}

// Rings whose connections are all alike (all inside one server or all between servers) with one
// chunk or one send in flight, and rings over servers of several members (rail-aligned or not)
// in one chunk, as auto_chunks cuts every ring. Chunks that pipeline through a window on a ring
// that mixes NVLink and network hops have no fluid form here.
bool ring_fluid_fits(const ScheduleKey& key) {
  if (uniform_hops(key)) return key.chunks == 1 || key.window == 1;
  return key.node_size > 1 && key.chunks == 1;
}

// The walk of one channel of a ring whose hops mix NVLink and the network, in one chunk: each
// connection sends `steps` messages, each after the one its sender received (chain), and after
// the one `window` places earlier on the same connection has landed. Its message schedule on an
// idle network ends after the longer of two paths:
// - the chain of `steps` consecutive connections, each message's transfer and latencies (small
//   messages, where latency rules; their transfers are short and far apart, so each has its link
//   to itself);
// - one connection that sends all its messages back to back, its link busy all along and shared
//   by the phase's other connections on it, paying its route latency once per window of sends
//   (the slow network hop, where bandwidth rules: the fast NVLink hops wait for it instead of
//   adding their latencies up).
// Both are lower bounds of the schedule's time, and it takes the larger exactly where one rules.
// Where the two are close (a few to tens of MiB per ring) the schedule takes longer than either:
// the NVLink messages of a GPU's channels then partly overlap and slow each other, which no
// fixed walk follows; tests/coll/fluid_test bounds the gap (2% with 2 or 4 members per server,
// 9% with 8, whose 7 NVLink channels per GPU load its port as much as its NIC is loaded; 21% at
// 16 MiB on H800 servers, whose 8 NVLinks carry about what their NICs do). The lane itself
// moves at its slowest connection's pace, so the walk is the rest.
// nccl-tests on Alps nodes of 4 GH200 side with this form at 1 MiB a channel a step: 89.5 GB/s
// at 256 MiB on 16 nodes (runs: 89.5). From 128 to 256 nodes their 4 GiB all-reduce takes 2.6
// to 7.4 ms longer (the best runs to the medians) for 1,024 more messages, 2.5 to 7 us each,
// where this form pays its 2 us route (nccl-gh200-alps-*). Adding every step's latency along
// the ring to the bandwidth time instead, as NCCL's cost model does, reads 81.4 on 16 nodes;
// keeping NCCL's 8 slots in flight, so that no route latency is paid per message, reads 91.5
// on 256 nodes against 83.5. The per-message route is also what a ring over many
// pods pays most: 24,576 ranks of llama3-24k (7.9 us to the next pod) reduce-scatter 945 MB in
// 197 ms, where NCCL's per-step latencies sum to 53.
Time mixed_ring_walk(const std::vector<FluidContext::MessageCost>& costs, int64_t steps,
                     int32_t window) {
  const int64_t waits = (steps + window - 1) / window;
  std::vector<Time> chain;
  Time slowest, busiest;
  for (const auto& c : costs) {
    chain.push_back(c.transfer + c.route + c.step);
    slowest = std::max(slowest, c.shared);
    busiest = std::max(busiest, Time::ps(steps * c.shared.count_ps()) +
                                    Time::ps(waits * c.route.count_ps()) + c.step);
  }
  const Time longest = std::max(cyclic_window_max(chain, steps), busiest);
  return std::max(Time{}, longest - Time::ps(steps * slowest.count_ps()));
}

// Each channel is one fluid transfer over its n connections: in a ring every step waits for the
// step before it, so the slowest connection sets the pace of all. Each connection carries its
// share of the buffer (steps x block), scaled by the wire model. With one send in flight per
// connection, each step waits for the message of the previous position plus that connection's
// route latency and step latency, so the critical path walks chunks x (steps - 1) + 1
// consecutive connections: the lane charges the largest such sum around the ring.
std::vector<FluidPhase> ring_fluid_phases(const FluidContext& ctx) {
  const auto& key = ctx.key;
  const auto n = static_cast<uint32_t>(key.n);
  const int64_t steps = key.op == Op::kAllReduce ? 2 * (key.n - 1) : key.n - 1;
  // Every shard moves `steps` times; channel ch moves 1/channels of each.
  const double payload = static_cast<double>(ctx.size) * static_cast<double>(steps) /
                         (static_cast<double>(n) * key.channels);
  FluidPhase phase(static_cast<std::size_t>(key.channels));
  for (uint32_t ch = 0; ch < static_cast<uint32_t>(key.channels); ++ch) {
    const auto ring = channel_ring(n, static_cast<uint32_t>(key.local_size), ch, key.mesh);
    ctx.add_ring(phase[ch], ring, payload);
    if (uniform_hops(key)) phase[ch].walk = ctx.walk(ring, key.chunks * (steps - 1) + 1);
    // Server by server, each server's connections the same as the first's (channel_ring).
    if (key.node_size >= 1 && key.node_size < key.n && key.n % key.node_size == 0)
      phase[ch].runs = key.n / key.node_size;
  }
  if (!uniform_hops(key)) {
    const auto costs = ctx.message_costs(phase, steps);
    for (std::size_t ch = 0; ch < phase.size(); ++ch)
      phase[ch].walk = mixed_ring_walk(costs[ch], steps, key.window);
  }
  ctx.stats.bytes_sent = static_cast<Bytes>(steps) * ctx.size;
  ctx.stats.messages = static_cast<uint32_t>(
      std::min<int64_t>(int64_t{key.channels} * key.chunks * n * steps, UINT32_MAX));
  return {std::move(phase)};
}

// A flat ring is pipelined across its n shards already: one chunk (see auto_chunks).
Pipelining ring_pipelining(const PipelineShape& s) {
  return {s.size / s.n, s.size / s.n + 1};
}

// What one hop of a broadcast chain moves in the route latency each of its messages pays before
// the next may go: about 0.5 us of NVLink through an NVSwitch at a GPU's ~300 GB/s (150 KB), or
// 1.5 us of a 400 Gb/s NIC (75 KB); taken as the 64 KiB auto_window keeps in flight.
constexpr double kChainHopBytes = 64 * kKiB;

// A broadcast's pieces stop where its schedule would pass about a million sends (channels x
// pieces x (n - 1)), never below kMaxAutoChunks: NCCL's 512 KiB slices up to 256 MiB a channel
// over 256 GPUs on 8 rails. There, 1 GiB in 64 even pieces of 2 MiB took 9.9 ms (109 GB/s), as the
// chain filled with 254 hops of 2 MiB; in NCCL's 256 slices, 5.8 ms (184 GB/s), 1.2 s to simulate.
constexpr int64_t kBroadcastSends = int64_t{1} << 20;

// Each channel carries its share of the buffer down the chain, one send in flight per connection
// (with more, the flow model would share the link among them and merge them into one piece). The
// piece count c that costs the chain least balances its fill, (n - 2) pieces of share / c, against
// what c sends cost each connection: c = sqrt((n - 2) share / kChainHopBytes). LL and LL128, which
// hand each line on as it lands, take that count of even pieces. Simple hands a slice on once all
// of it is written (src/device/broadcast.h; BROADCAST_SLICESTEPS = 1 step of NCCL_BUFFSIZE /
// NCCL_STEPS = 512 KiB), so its pieces are never shorter: the share goes in NCCL's slices, the last
// one short, while there are no more of them than that count, and past it in that count of even
// pieces, which stand for slices whose latencies NCCL's eight in flight hide. Pieces cut evenly
// from the whole buffer made the time fall as the size grew, as a second piece halved what each
// hop held (64 GH200s, LL: 349 us at 448 KiB, 288 us at 672 KiB).
Pipelining broadcast_pipelining(const PipelineShape& s) {
  const Bytes share = s.size / s.channels;
  const int64_t most = std::max<int64_t>(
      kMaxAutoChunks, kBroadcastSends / (int64_t{s.channels} * std::max(1, s.n - 1)));
  const double best = std::sqrt(std::max(0, s.n - 2) * static_cast<double>(share) / kChainHopBytes);
  const auto chunks = std::clamp<Bytes>(std::llround(best), 1, most);
  const bool simple = s.protocol != Protocol::kLl && s.protocol != Protocol::kLl128;
  if (simple && (share + kSlot - 1) / kSlot <= chunks) return {share, kSlot, true, 1, most};
  return {share, std::max<Bytes>((share + chunks - 1) / chunks, 1), false, 1, most};
}

}  // namespace

AlgorithmInfo ring_algorithm() {
  AlgorithmInfo a;
  a.value = Algorithm::kRing;
  a.name = "ring";
  a.nccl = NcclAlgo::kRing;
  for (const Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter}) {
    OpForm ring;
    ring.op = op;
    ring.build = build_ring;
    ring.pipelining = ring_pipelining;
    ring.channels = true;
    ring.fluid = {ring_fluid_fits, ring_fluid_phases};
    a.ops.push_back(ring);
  }
  OpForm broadcast;
  broadcast.op = Op::kBroadcast;
  broadcast.build = build_broadcast;
  broadcast.pipelining = broadcast_pipelining;
  broadcast.channels = true;
  a.ops.push_back(broadcast);
  return a;
}

}  // namespace cs::coll
