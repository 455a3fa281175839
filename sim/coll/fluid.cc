#include "sim/coll/fluid.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sim/coll/algorithms.h"

namespace cs::coll {
namespace {

// Coupled connections that move at one pace, then wait `walk` (their latency critical path).
struct Lane {
  std::vector<net::FluidEdge> edges;
  Time walk;
};
// Lanes that run side by side (a ring's channels); the next phase starts when all have ended.
using Phase = std::vector<Lane>;

// What one call needs to turn group ranks into edges and latencies.
struct Context {
  net::Network& network;
  const ScheduleKey& key;
  std::span<const net::VertexId> vertices;
  Bytes size;
  RunStats& stats;

  bool intra_node(uint32_t a, uint32_t b) const {
    return key.node_size > 0 && a / key.node_size == b / key.node_size;
  }
  // Route plus step latency of the connection a -> b, as a message on it pays after landing.
  Time latency(uint32_t a, uint32_t b) const {
    const Time step = intra_node(a, b) ? key.wire.intra_step_latency : key.wire.inter_step_latency;
    return network.path_latency(vertices[a], vertices[b]) + step;
  }
  // Adds the ring's connections (position p -> p+1), each carrying `payload` bytes of data.
  void add_ring(Lane& lane, const std::vector<uint32_t>& ring, double payload) const {
    if (ring.size() < 2) return;
    for (std::size_t p = 0; p < ring.size(); ++p) {
      const uint32_t a = ring[p], b = ring[(p + 1) % ring.size()];
      double scale = key.wire.byte_factor;
      if (intra_node(a, b)) scale /= key.wire.nvlink_efficiency;
      const double wire = payload * scale;
      stats.wire_bytes += static_cast<Bytes>(std::llround(wire));
      lane.edges.push_back({vertices[a], vertices[b], wire});
    }
  }
  // The largest latency along `length` consecutive connections of the ring, cyclically.
  Time walk(const std::vector<uint32_t>& ring, int64_t length) const {
    const auto n = static_cast<int64_t>(ring.size());
    if (n < 2 || length <= 0) return Time{};
    std::vector<Time> lat(static_cast<std::size_t>(n));
    Time total;
    for (int64_t p = 0; p < n; ++p) {
      lat[p] = latency(ring[p], ring[(p + 1) % n]);
      total += lat[p];
    }
    const int64_t laps = length / n, rest = length % n;
    Time window;
    for (int64_t p = 0; p < rest; ++p) window += lat[p];
    Time best = window;
    for (int64_t p = 1; p < n && rest > 0; ++p) {
      window += lat[(p + rest - 1) % n] - lat[p - 1];
      best = std::max(best, window);
    }
    return Time::ps(laps * total.count_ps()) + best;
  }
};

std::vector<Phase> ring_phases(const Context& ctx) {
  const auto& key = ctx.key;
  const auto n = static_cast<uint32_t>(key.n);
  const int64_t steps = key.op == Op::kAllReduce ? 2 * (key.n - 1) : key.n - 1;
  // Every shard moves `steps` times; channel ch moves 1/channels of each.
  const double payload = static_cast<double>(ctx.size) * static_cast<double>(steps) /
                         (static_cast<double>(n) * key.channels);
  Phase phase(static_cast<std::size_t>(key.channels));
  for (uint32_t ch = 0; ch < static_cast<uint32_t>(key.channels); ++ch) {
    const auto ring = channel_ring(n, static_cast<uint32_t>(key.local_size), ch);
    ctx.add_ring(phase[ch], ring, payload);
    phase[ch].walk = ctx.walk(ring, key.chunks * (steps - 1) + 1);
  }
  ctx.stats.bytes_sent = static_cast<Bytes>(steps) * ctx.size;
  ctx.stats.messages = static_cast<uint32_t>(
      std::min<int64_t>(int64_t{key.channels} * key.chunks * n * steps, UINT32_MAX));
  return {std::move(phase)};
}

// Every rank sends its whole buffer to the next at once: one step, so the run lasts as long as
// its slowest connection plus that connection's latency.
std::vector<Phase> send_recv_phases(const Context& ctx) {
  const auto n = static_cast<uint32_t>(ctx.key.n);
  const auto ring = iota_ranks(0, n);
  Phase phase(1);
  ctx.add_ring(phase[0], ring, static_cast<double>(ctx.size));
  phase[0].walk = ctx.walk(ring, 1);
  ctx.stats.bytes_sent = static_cast<Bytes>(n) * ctx.size;
  ctx.stats.messages = n;
  return {std::move(phase)};
}

std::vector<Phase> hierarchical_phases(const Context& ctx) {
  const auto& key = ctx.key;
  const auto n = static_cast<uint32_t>(key.n), local = static_cast<uint32_t>(key.local_size);
  const uint32_t nodes = n / local;
  const double size = static_cast<double>(ctx.size);
  std::vector<std::vector<uint32_t>> intra_rings, inter_rings;
  for (uint32_t q = 0; q < nodes; ++q) intra_rings.push_back(iota_ranks(q * local, local));
  for (uint32_t l = 0; l < local; ++l) inter_rings.push_back(iota_ranks(l, nodes, local));
  // Reduce-scatter and all-gather inside each server move (local - 1) / local of the buffer
  // per connection; the inter-server ring all-reduces the 1/local shard over `nodes` ranks.
  // Every ring is a lane of its own, as the rings of one phase do not wait for each other.
  const int64_t inter_steps = 2 * (int64_t{nodes} - 1);
  Phase scatter, across;
  for (const auto& ring : intra_rings) {
    Lane& lane = scatter.emplace_back();
    ctx.add_ring(lane, ring, size * (local - 1) / local);
    lane.walk = ctx.walk(ring, local - 1);
  }
  Phase gather = scatter;
  for (const auto& lane : gather)
    for (const auto& e : lane.edges) ctx.stats.wire_bytes += std::llround(e.wire_bytes);
  for (const auto& ring : inter_rings) {
    Lane& lane = across.emplace_back();
    ctx.add_ring(lane, ring, size * static_cast<double>(inter_steps) / n);
    lane.walk = ctx.walk(ring, inter_steps);
  }
  ctx.stats.bytes_sent =
      int64_t{nodes} * 2 * (local - 1) * ctx.size + inter_steps * static_cast<Bytes>(ctx.size);
  const int64_t messages =
      int64_t{nodes} * 2 * local * (local - 1) + int64_t{local} * nodes * inter_steps;
  ctx.stats.messages = static_cast<uint32_t>(std::min<int64_t>(messages, UINT32_MAX));
  std::vector<Phase> phases;
  for (Phase* phase : {&scatter, &across, &gather})
    if (local > 1 || phase == &across) phases.push_back(std::move(*phase));
  if (nodes == 1) phases.erase(phases.begin() + 1);  // no inter-server phase
  return phases;
}

// Owns itself from start() until its last phase ends.
class FluidRun {
 public:
  FluidRun(Simulator& sim, net::Network& network, std::function<void(const RunStats&)> done)
      : sim_(sim), network_(network), done_(std::move(done)) {
    stats_.start = sim.now();
  }
  RunStats& stats() { return stats_; }

  static void start(std::unique_ptr<FluidRun> run, std::vector<Phase> phases, int32_t mirrors,
                    Time launch) {
    FluidRun* self = run.get();
    self->self_ = std::move(run);
    self->phases_ = std::move(phases);
    self->mirrors_ = mirrors;
    if (self->phases_.empty()) {
      self->sim_.schedule_in(Time{}, [self] { self->finish(); });
      return;
    }
    self->sim_.schedule_in(launch, [self] { self->run_phase(0); });
  }

 private:
  void run_phase(std::size_t i) {
    if (i == phases_.size()) {
      finish();
      return;
    }
    lanes_left_ = phases_[i].size();
    for (Lane& lane : phases_[i]) {
      network_.send_fluid(lane.edges, mirrors_, lane.walk, [this, i] {
        if (--lanes_left_ == 0) run_phase(i + 1);
      });
    }
  }

  void finish() {
    std::unique_ptr<FluidRun> keep = std::move(self_);
    stats_.end = sim_.now();
    sim_.schedule_in(Time{}, [done = std::move(done_), stats = stats_] {
      if (done) done(stats);
    });
  }

  Simulator& sim_;
  net::Network& network_;
  std::function<void(const RunStats&)> done_;
  std::vector<Phase> phases_;
  int32_t mirrors_ = 1;
  std::size_t lanes_left_ = 0;
  RunStats stats_;
  std::unique_ptr<FluidRun> self_;
};

}  // namespace

bool fluid_supported(const ScheduleKey& raw) {
  const ScheduleKey key = normalize(raw);
  // Rings whose connections are all alike: all inside one server or all between servers. A
  // rail-aligned ring mixes NVLink and network hops, and its critical path then stays on the
  // slow hops instead of paying every hop's latency, which the walk does not model.
  const bool uniform = key.node_size == 1 || key.node_size >= key.n;
  const bool ring =
      key.algo == Algorithm::kRing && uniform &&
      (key.op == Op::kAllReduce || key.op == Op::kReduceScatter || key.op == Op::kAllGather);
  // Hierarchical phases run one after another only with one chunk; with more, chunks pipeline
  // through the phases in a way the fluid phases do not follow closely enough (up to 0.8% off
  // on 16 H100s at 256 MiB).
  const bool hierarchical =
      key.algo == Algorithm::kHierarchical && key.op == Op::kAllReduce && key.chunks == 1;
  const bool send_recv = key.algo == Algorithm::kDirect && key.op == Op::kSendRecv;
  return (ring && (key.chunks == 1 || key.window == 1)) || hierarchical || send_recv;
}

void run_fluid_collective(Simulator& sim, net::Network& network, const ScheduleKey& raw,
                          std::span<const net::VertexId> rank_to_vertex, Bytes size,
                          std::function<void(const RunStats&)> done, int32_t mirrors) {
  const ScheduleKey key = normalize(raw);
  if (!fluid_supported(key))
    throw std::invalid_argument("no fluid form for " + std::string(to_string(key.algo)) + " " +
                                std::string(to_string(key.op)));
  if (mirrors < 1 || rank_to_vertex.size() != static_cast<std::size_t>(key.n) * mirrors)
    throw std::invalid_argument("run_fluid_collective needs one vertex per rank of each copy");
  if (size < 0) throw std::invalid_argument("collective size must not be negative");
  auto run = std::make_unique<FluidRun>(sim, network, std::move(done));
  if (key.n < 2) {
    FluidRun::start(std::move(run), {}, mirrors, Time{});
    return;
  }
  // Each copy's phases, merged lane by lane in copy order (the runs send_fluid expects).
  std::vector<Phase> phases;
  RunStats& total = run->stats();
  for (int32_t k = 0; k < mirrors; ++k) {
    RunStats stats;
    const Context ctx{network, key,
                      rank_to_vertex.subspan(static_cast<std::size_t>(k) * key.n, key.n), size,
                      stats};
    auto mine = key.algo == Algorithm::kRing           ? ring_phases(ctx)
                : key.algo == Algorithm::kHierarchical ? hierarchical_phases(ctx)
                                                       : send_recv_phases(ctx);
    total.bytes_sent += stats.bytes_sent;
    total.wire_bytes += stats.wire_bytes;
    total.messages += stats.messages;
    if (k == 0) {
      phases = std::move(mine);
      continue;
    }
    for (std::size_t p = 0; p < phases.size(); ++p) {
      for (std::size_t l = 0; l < phases[p].size(); ++l) {
        Lane& lane = phases[p][l];
        const Lane& other = mine[p][l];
        lane.edges.insert(lane.edges.end(), other.edges.begin(), other.edges.end());
        lane.walk = std::max(lane.walk, other.walk);
      }
    }
  }
  FluidRun::start(std::move(run), std::move(phases), mirrors, key.wire.launch_latency);
}

}  // namespace cs::coll
