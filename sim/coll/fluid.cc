#include "sim/coll/fluid.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/registry.h"
#include "sim/coll/fluid_form.h"

namespace cs::coll {

bool FluidContext::intra_node(uint32_t a, uint32_t b) const {
  return key.node_size > 0 && a / key.node_size == b / key.node_size;
}

Time FluidContext::latency(uint32_t a, uint32_t b) const {
  const Time step = intra_node(a, b) ? key.wire.intra_step_latency : key.wire.inter_step_latency;
  return network.path_latency(vertices[a], vertices[b]) + step;
}

void FluidContext::add_ring(FluidLane& lane, const std::vector<uint32_t>& ring,
                            double payload) const {
  if (ring.size() < 2) return;
  for (std::size_t p = 0; p < ring.size(); ++p) {
    const uint32_t a = ring[p], b = ring[(p + 1) % ring.size()];
    double scale = key.wire.byte_factor;
    scale /= intra_node(a, b) ? key.wire.nvlink_efficiency : key.wire.net_efficiency;
    const double wire = payload * scale;
    stats.wire_bytes += static_cast<Bytes>(std::llround(wire));
    lane.edges.push_back({vertices[a], vertices[b], wire});
  }
}

Time FluidContext::walk(const std::vector<uint32_t>& ring, int64_t length) const {
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

namespace {

// Kept alive by the callbacks it has pending (the simulator's and the network's), so that a run
// abandoned mid-way (a step that fails) is freed with them.
class FluidRun {
 public:
  FluidRun(Simulator& sim, net::Network& network, std::function<void(const RunStats&)> done)
      : sim_(sim), network_(network), done_(std::move(done)) {
    stats_.start = sim.now();
  }
  RunStats& stats() { return stats_; }

  static void start(std::shared_ptr<FluidRun> run, std::vector<FluidPhase> phases, int32_t mirrors,
                    Time launch) {
    run->phases_ = std::move(phases);
    run->mirrors_ = mirrors;
    if (run->phases_.empty()) {
      run->sim_.schedule_in(Time{}, [run] { run->finish(); });
      return;
    }
    run->sim_.schedule_in(launch, [run] { run_phase(run, 0); });
  }

 private:
  static void run_phase(const std::shared_ptr<FluidRun>& run, std::size_t i) {
    if (i == run->phases_.size()) {
      run->finish();
      return;
    }
    run->lanes_left_ = run->phases_[i].size();
    for (FluidLane& lane : run->phases_[i]) {
      run->network_.send_fluid(lane.edges, run->mirrors_, lane.walk, [run, i] {
        if (--run->lanes_left_ == 0) run_phase(run, i + 1);
      });
    }
  }

  void finish() {
    stats_.end = sim_.now();
    sim_.schedule_in(Time{}, [done = std::move(done_), stats = stats_] {
      if (done) done(stats);
    });
  }

  Simulator& sim_;
  net::Network& network_;
  std::function<void(const RunStats&)> done_;
  std::vector<FluidPhase> phases_;
  int32_t mirrors_ = 1;
  std::size_t lanes_left_ = 0;
  RunStats stats_;
};

}  // namespace

bool fluid_supported(const ScheduleKey& raw) {
  const ScheduleKey key = normalize(raw);
  const FluidForm& fluid = find_form(key.algo, key.op)->fluid;
  return fluid.fits != nullptr && fluid.fits(key);
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
  auto run = std::make_shared<FluidRun>(sim, network, std::move(done));
  if (key.n < 2) {
    FluidRun::start(std::move(run), {}, mirrors, Time{});
    return;
  }
  // Each copy's phases, merged lane by lane in copy order (the runs send_fluid expects).
  std::vector<FluidPhase> phases;
  RunStats& total = run->stats();
  for (int32_t k = 0; k < mirrors; ++k) {
    RunStats stats;
    const FluidContext ctx{network, key,
                           rank_to_vertex.subspan(static_cast<std::size_t>(k) * key.n, key.n), size,
                           stats};
    auto mine = find_form(key.algo, key.op)->fluid.phases(ctx);
    total.bytes_sent += stats.bytes_sent;
    total.wire_bytes += stats.wire_bytes;
    total.messages += stats.messages;
    if (k == 0) {
      phases = std::move(mine);
      continue;
    }
    for (std::size_t p = 0; p < phases.size(); ++p) {
      for (std::size_t l = 0; l < phases[p].size(); ++l) {
        FluidLane& lane = phases[p][l];
        const FluidLane& other = mine[p][l];
        lane.edges.insert(lane.edges.end(), other.edges.begin(), other.edges.end());
        lane.walk = std::max(lane.walk, other.walk);
      }
    }
  }
  FluidRun::start(std::move(run), std::move(phases), mirrors, key.wire.launch_latency);
}

}  // namespace cs::coll
