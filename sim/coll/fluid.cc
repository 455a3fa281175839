#include "sim/coll/fluid.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <unordered_map>
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
  return std::max(network.path_latency(vertices[a], vertices[b]), step);
}

void FluidContext::add_edge(FluidLane& lane, uint32_t a, uint32_t b, double payload) const {
  double scale = key.wire.byte_factor;
  scale /= intra_node(a, b) ? key.wire.nvlink_efficiency : key.wire.net_efficiency;
  const double wire = payload * scale;
  stats.wire_bytes += static_cast<Bytes>(std::llround(wire));
  lane.edges.push_back({vertices[a], vertices[b], wire});
}

void FluidContext::add_ring(FluidLane& lane, const std::vector<uint32_t>& ring,
                            double payload) const {
  if (ring.size() < 2) return;
  for (std::size_t p = 0; p < ring.size(); ++p)
    add_edge(lane, ring[p], ring[(p + 1) % ring.size()], payload);
}

Time FluidContext::walk(const std::vector<uint32_t>& ring, int64_t length) const {
  const auto n = static_cast<int64_t>(ring.size());
  if (n < 2 || length <= 0) return Time{};
  std::vector<Time> lat(static_cast<std::size_t>(n));
  for (int64_t p = 0; p < n; ++p) lat[p] = latency(ring[p], ring[(p + 1) % n]);
  return cyclic_window_max(lat, length);
}

std::vector<std::vector<FluidContext::MessageCost>> FluidContext::message_costs(
    const FluidPhase& phase, int64_t messages) const {
  std::unordered_map<net::VertexId, uint32_t> rank_of;
  for (uint32_t r = 0; r < vertices.size(); ++r) rank_of.emplace(vertices[r], r);
  // Edges of the phase per (rank, link class), leaving and arriving: who shares a GPU's NVLink
  // port or its NIC with whom.
  struct Ends {
    uint32_t a, b;
    bool intra;
  };
  const auto ends = [&](const net::FluidEdge& e) {
    const uint32_t a = rank_of.at(e.src), b = rank_of.at(e.dst);
    return Ends{a, b, intra_node(a, b)};
  };
  std::vector<int32_t> out(2 * vertices.size()), in(2 * vertices.size());
  std::vector<int32_t> lane_out(out.size()), lane_in(in.size());  // one lane's, reset after it
  const auto count = [&](const FluidLane& lane, std::vector<int32_t>& from,
                         std::vector<int32_t>& to, int32_t step) {
    for (const net::FluidEdge& e : lane.edges) {
      if (e.src == e.dst || e.wire_bytes <= 0) continue;
      const Ends x = ends(e);
      from[2 * x.a + x.intra] += step;
      to[2 * x.b + x.intra] += step;
    }
  };
  for (const FluidLane& lane : phase) count(lane, out, in, 1);
  const double per_message = 1.0 / static_cast<double>(std::max<int64_t>(messages, 1));
  std::vector<std::vector<MessageCost>> costs(phase.size());
  for (std::size_t l = 0; l < phase.size(); ++l) {
    count(phase[l], lane_out, lane_in, 1);
    for (const net::FluidEdge& e : phase[l].edges) {
      MessageCost cost;
      if (e.src != e.dst) {
        const Ends x = ends(e);
        cost.route = network.path_latency(e.src, e.dst);
        cost.step = step_after_route(
            x.intra ? key.wire.intra_step_latency : key.wire.inter_step_latency, cost.route);
        if (e.wire_bytes > 0) {
          const double bytes = e.wire_bytes * per_message;
          const int32_t sharing = std::max(out[2 * x.a + x.intra], in[2 * x.b + x.intra]);
          cost.transfer = network.alone_transfer_time(e.src, e.dst, bytes, 1);
          cost.shared = network.alone_transfer_time(e.src, e.dst, bytes, sharing);
          const int32_t own = std::max(lane_out[2 * x.a + x.intra], lane_in[2 * x.b + x.intra]);
          cost.own = Time::ps(own * cost.transfer.count_ps());
        }
      }
      costs[l].push_back(cost);
    }
    count(phase[l], lane_out, lane_in, -1);
  }
  return costs;
}

Time cyclic_window_max(std::span<const Time> costs, int64_t length) {
  const auto n = static_cast<int64_t>(costs.size());
  if (n == 0 || length <= 0) return Time{};
  Time total;
  for (const Time c : costs) total += c;
  const int64_t laps = length / n, rest = length % n;
  Time window;
  for (int64_t p = 0; p < rest; ++p) window += costs[p];
  Time best = window;
  for (int64_t p = 1; p < n && rest > 0; ++p) {
    window += costs[(p + rest - 1) % n] - costs[p - 1];
    best = std::max(best, window);
  }
  return Time::ps(laps * total.count_ps()) + best;
}

namespace {

// Kept alive by the callbacks it has pending (the simulator's and the network's), so that a run
// abandoned mid-way (a step that fails) is freed with them.
class FluidRun {
 public:
  FluidRun(Simulator& sim, net::Network& network, std::shared_ptr<const FluidPlan> plan,
           int32_t mirrors, bool alike_servers, std::function<void(const RunStats&)> done)
      : sim_(sim),
        network_(network),
        plan_(std::move(plan)),
        mirrors_(mirrors),
        alike_servers_(alike_servers),
        done_(std::move(done)) {
    stats_ = plan_->stats;
    stats_.start = sim.now();
  }

  static void start(const std::shared_ptr<FluidRun>& run, Time launch) {
    if (run->plan_->phases.empty()) {
      run->sim_.schedule_in(Time{}, [run] { run->finish(); });
      return;
    }
    run->sim_.schedule_in(launch, [run] { run_phase(run, 0); });
  }

 private:
  static void run_phase(const std::shared_ptr<FluidRun>& run, std::size_t i) {
    const auto& phases = run->plan_->phases;
    if (i == phases.size()) {
      run->finish();
      return;
    }
    run->lanes_left_ = phases[i].size();
    for (const FluidLane& lane : phases[i]) {
      const int32_t mirrors = run->alike_servers_ ? run->mirrors_ * lane.runs : run->mirrors_;
      run->network_.send_fluid(
          lane.edges, mirrors, lane.walk,
          [run, i] {
            if (--run->lanes_left_ == 0) run_phase(run, i + 1);
          },
          &lane.slot);
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
  std::shared_ptr<const FluidPlan> plan_;
  int32_t mirrors_ = 1;
  bool alike_servers_ = false;
  std::function<void(const RunStats&)> done_;
  std::size_t lanes_left_ = 0;
  RunStats stats_;
};

void check_fluid_call(const ScheduleKey& key, std::size_t vertices, Bytes size, int32_t mirrors) {
  if (!fluid_supported(key))
    throw std::invalid_argument("no fluid form for " + std::string(to_string(key.algo)) + " " +
                                std::string(to_string(key.op)));
  if (mirrors < 1 || vertices != static_cast<std::size_t>(key.n) * mirrors)
    throw std::invalid_argument("run_fluid_collective needs one vertex per rank of each copy");
  if (size < 0) throw std::invalid_argument("collective size must not be negative");
}

}  // namespace

bool fluid_supported(const ScheduleKey& raw) {
  const ScheduleKey key = normalize(raw);
  const FluidForm& fluid = find_form(key.algo, key.op)->fluid;
  return fluid.fits != nullptr && fluid.fits(key);
}

FluidPlan plan_fluid_collective(net::Network& network, const ScheduleKey& raw,
                                std::span<const net::VertexId> rank_to_vertex, Bytes size,
                                int32_t mirrors) {
  const ScheduleKey key = normalize(raw);
  check_fluid_call(key, rank_to_vertex.size(), size, mirrors);
  FluidPlan plan;
  plan.launch = key.wire.launch_latency;
  if (key.n < 2) return plan;
  // Each copy's phases, merged lane by lane in copy order (the runs send_fluid expects).
  for (int32_t k = 0; k < mirrors; ++k) {
    RunStats stats;
    const FluidContext ctx{network, key,
                           rank_to_vertex.subspan(static_cast<std::size_t>(k) * key.n, key.n), size,
                           stats};
    auto mine = find_form(key.algo, key.op)->fluid.phases(ctx);
    plan.stats.bytes_sent += stats.bytes_sent;
    plan.stats.wire_bytes += stats.wire_bytes;
    plan.stats.messages += stats.messages;
    if (k == 0) {
      plan.phases = std::move(mine);
      continue;
    }
    for (std::size_t p = 0; p < plan.phases.size(); ++p) {
      for (std::size_t l = 0; l < plan.phases[p].size(); ++l) {
        FluidLane& lane = plan.phases[p][l];
        const FluidLane& other = mine[p][l];
        lane.edges.insert(lane.edges.end(), other.edges.begin(), other.edges.end());
        lane.walk = std::max(lane.walk, other.walk);
      }
    }
  }
  return plan;
}

void run_fluid_plan(Simulator& sim, net::Network& network, std::shared_ptr<const FluidPlan> plan,
                    int32_t mirrors, std::function<void(const RunStats&)> done,
                    bool alike_servers) {
  const Time launch = plan->phases.empty() ? Time{} : plan->launch;
  FluidRun::start(std::make_shared<FluidRun>(sim, network, std::move(plan), mirrors, alike_servers,
                                             std::move(done)),
                  launch);
}

void run_fluid_collective(Simulator& sim, net::Network& network, const ScheduleKey& key,
                          std::span<const net::VertexId> rank_to_vertex, Bytes size,
                          std::function<void(const RunStats&)> done, int32_t mirrors) {
  run_fluid_plan(sim, network,
                 std::make_shared<const FluidPlan>(
                     plan_fluid_collective(network, key, rank_to_vertex, size, mirrors)),
                 mirrors, std::move(done));
}

std::shared_ptr<const FluidPlan> FluidPlanCache::plan(net::Network& network, const ScheduleKey& key,
                                                      std::span<const net::VertexId> vertices,
                                                      Bytes size, int32_t mirrors) {
  std::size_t hash = std::hash<Bytes>{}(size) ^ (static_cast<std::size_t>(mirrors) << 48);
  for (const net::VertexId v : vertices) hash = hash * 1000003u ^ v;
  auto& bucket = plans_[hash];
  for (const Entry& e : bucket) {
    if (e.key == key && e.size == size && e.mirrors == mirrors &&
        std::equal(e.vertices.begin(), e.vertices.end(), vertices.begin(), vertices.end()))
      return e.plan;
  }
  auto made = std::make_shared<const FluidPlan>(
      plan_fluid_collective(network, key, vertices, size, mirrors));
  std::size_t edges = vertices.size();
  for (const FluidPhase& phase : made->phases)
    for (const FluidLane& lane : phase) edges += lane.edges.size();
  // Kept while the cache stays small (about 24 bytes an edge); larger runs plan again.
  if (cached_edges_ + edges <= kMaxCachedEdges) {
    cached_edges_ += edges;
    bucket.push_back({key, size, mirrors, {vertices.begin(), vertices.end()}, made});
  }
  return made;
}

}  // namespace cs::coll
