#include "sim/net/analytical_network.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace cs::net {

void AnalyticalNetwork::send(VertexId src, VertexId dst, Bytes bytes, Done done) {
  if (src == dst) {
    stats_.count(nullptr, bytes);
    if (done) sim_.schedule_at(sim_.now(), std::move(done));
    return;
  }
  const Route& route = routing_.route(src, dst);
  stats_.count(&route, bytes);
  Time arrival = sim_.now();
  if (bytes > 0) {
    arrival = std::max(sim_.now() + transfer_time(bytes, route.bottleneck),
                       queue_at_ports(src, dst, route, bytes));
  }
  if (done) sim_.schedule_at(arrival + route.latency, std::move(done));
}

AnalyticalNetwork::AnalyticalNetwork(Simulator& sim, Routing& routing, bool trunks,
                                     bool hashed_paths)
    : sim_(sim), routing_(routing), use_trunks_(trunks) {
  const LoadBalancing& balancing = routing.topology().load_balancing;
  if (hashed_paths && balancing.mode == LoadBalancingMode::kStaticEcmp) hashed_flows_ = 1;
  if (hashed_paths && balancing.mode == LoadBalancingMode::kMultiFlowEcmp)
    hashed_flows_ = std::max(balancing.flows_per_message, 1);
}

const Trunks& AnalyticalNetwork::trunks() {
  // Hashed paths load each switch link on its own: there is no pool to queue at.
  if (!trunks_)
    trunks_ =
        use_trunks_ && hashed_flows_ == 0 ? oversubscribed_trunks(routing_.topology()) : Trunks{};
  return *trunks_;
}

int64_t AnalyticalNetwork::port_of(LinkId link) {
  const Topology& topology = routing_.topology();
  if (hashed_flows_ > 0 || is_endpoint_port(link)) return link;
  const int32_t trunk = trunks().trunk(link);
  return trunk < 0 ? -1 : static_cast<int64_t>(topology.num_links()) + trunk;
}

bool AnalyticalNetwork::is_endpoint_port(uint32_t port) {
  if (endpoint_link_.empty()) {
    const Topology& topology = routing_.topology();
    endpoint_link_.resize(topology.num_links());
    for (LinkId l = 0; l < topology.num_links(); ++l)
      endpoint_link_[l] = topology.is_endpoint_link(l);
  }
  return port < endpoint_link_.size() && endpoint_link_[port];
}

template <typename Visit>
void AnalyticalNetwork::for_each_link(VertexId src, VertexId dst, const Route& route,
                                      Visit&& visit) {
  if (!spreads(route)) {
    for (const LinkId l : route.links) visit(l, 1.0);
    return;
  }
  const uint64_t key = static_cast<uint64_t>(src) << 32 | dst;
  auto it = spread_cache_.find(key);
  SpreadPaths fresh;
  if (it == spread_cache_.end()) {
    fresh = spread_paths(routing_, src, dst, hashed_flows_);
    if (spread_links_ + fresh.links.size() <= kMaxSpreadLinks) {
      spread_links_ += fresh.links.size();
      it = spread_cache_.emplace(key, std::move(fresh)).first;
    }
  }
  const SpreadPaths& spread = it == spread_cache_.end() ? fresh : it->second;
  for (std::size_t i = 0; i < spread.links.size(); ++i) visit(spread.links[i], spread.weights[i]);
}

Bandwidth AnalyticalNetwork::port_bandwidth(uint32_t port) const {
  const Topology& topology = routing_.topology();
  return port < topology.num_links() ? topology.link(port).bandwidth
                                     : trunks_->bandwidth[port - topology.num_links()];
}

Time AnalyticalNetwork::queue_at(uint32_t port, Time own) {
  Port& state = port_state(port);
  const Time waited = fair_wait(state, own);
  enqueue(state, own, 1);
  return sim_.now() + own + waited;
}

AnalyticalNetwork::Port& AnalyticalNetwork::port_state(uint32_t port) {
  if (ports_.empty()) ports_.resize(routing_.topology().num_links() + trunks().bandwidth.size());
  return ports_[port];
}

Time AnalyticalNetwork::fair_wait(const Port& port, Time own) const {
  const Time now = sim_.now();
  if (port.drained <= now) return Time{};
  // Shared fairly with the bookings still draining, taken as k equal ones of their busy period's
  // mean length (k at least one): alongside them it passes its bytes at 1 / (k + 1) of the rate,
  // so it waits k times its own time, or for the whole backlog if that is less.
  const Time backlog = port.drained - now;
  // In 128 bits: a large booking behind many small ones has k times its time far past 2^63.
  const __int128 busy = port.busy.count_ps();
  const __int128 k = (static_cast<__int128>(backlog.count_ps()) * port.bookings + busy - 1) / busy;
  const __int128 share = static_cast<__int128>(own.count_ps()) * std::max<__int128>(k, 1);
  return share < backlog.count_ps() ? Time::ps(static_cast<int64_t>(share)) : backlog;
}

void AnalyticalNetwork::enqueue(Port& port, Time own, int64_t count) const {
  const Time now = sim_.now();
  if (port.drained <= now) {  // idle: a new busy period
    port.drained = now;
    port.busy = Time{};
    port.bookings = 0;
  }
  port.drained += own;
  port.busy += own;
  port.bookings += count;
}

Time AnalyticalNetwork::queue_at_ports(VertexId src, VertexId dst, const Route& route,
                                       Bytes bytes) {
  Time last = sim_.now();
  for_each_link(src, dst, route, [&](LinkId l, double share) {
    const int64_t port = port_of(l);
    if (port >= 0)
      last = std::max(last, queue_at(static_cast<uint32_t>(port),
                                     transfer_time(static_cast<Bytes>(std::llround(bytes * share)),
                                                   port_bandwidth(static_cast<uint32_t>(port)))));
  });
  return last;
}

AnalyticalNetwork::PortSums AnalyticalNetwork::sum_ports(std::span<const FluidEdge> edges,
                                                         int32_t mirrors) {
  PortSums sums;
  // Runs past the first are its images on other GPUs (send_fluid's mirrors): their endpoint ports
  // are loaded as run 0's are, by this transfer and by every other lane of its phase alike, so
  // run 0's stand for all in the time and in the ports booked. A trunk or a hashed switch link
  // carries every run's bytes, and those of every transfer before it: it is queued on as well.
  const std::size_t run0 = edges.size() / static_cast<std::size_t>(std::max(mirrors, 1));
  const bool images_queue = !trunks().empty() || hashed_flows_ > 0;
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const FluidEdge& e = edges[i];
    if (e.src == e.dst || e.wire_bytes <= 0) continue;
    const Route& route = routing_.route(e.src, e.dst);
    const auto bytes = static_cast<Bytes>(std::llround(e.wire_bytes));
    sums.traffic.count(&route, bytes);
    sums.slowest_edge = std::max(sums.slowest_edge, transfer_time(bytes, route.bottleneck));
    if (sums.narrowest.in_bytes_per_s() <= 0 || route.bottleneck < sums.narrowest)
      sums.narrowest = route.bottleneck;
    const bool image = i >= run0;
    if (image && !images_queue) continue;
    const auto book = [&](const Route& path, double share) {
      for (const LinkId l : path.links) {
        const int64_t port = port_of(l);
        if (port < 0 || (image && is_endpoint_port(static_cast<uint32_t>(port)))) continue;
        if (plan_port_bytes_.size() <= static_cast<std::size_t>(port))
          plan_port_bytes_.resize(static_cast<std::size_t>(port) + 1, 0.0);
        double& booked = plan_port_bytes_[static_cast<std::size_t>(port)];
        if (booked == 0) plan_ports_.push_back(static_cast<uint32_t>(port));
        booked += e.wire_bytes * share;
      }
    };
    // Path by path, unsorted: the ports add the shares up.
    const int32_t paths = spreads(route) ? hashed_flows_ : 1;
    book(route, 1.0 / paths);
    for (int32_t k = 1; k < paths; ++k) {
      routing_.path_links(e.src, e.dst, static_cast<uint64_t>(k), scratch_path_);
      book(scratch_path_, 1.0 / paths);
    }
  }
  // By port, so that the plan (and what it books) does not depend on the edges' order.
  std::sort(plan_ports_.begin(), plan_ports_.end());
  sums.ports.reserve(plan_ports_.size());
  for (const uint32_t port : plan_ports_) {
    sums.ports.emplace_back(port, plan_port_bytes_[port]);
    plan_port_bytes_[port] = 0;
  }
  plan_ports_.clear();
  return sums;
}

AnalyticalNetwork::FluidPlan AnalyticalNetwork::plan_from(const PortSums& sums, double scale,
                                                          double reference, Time slowest_edge,
                                                          const TrafficStats& traffic) {
  FluidPlan plan;
  plan.slowest = slowest_edge;
  plan.traffic = traffic;
  plan.bookings.reserve(sums.ports.size());
  for (const auto& [port, sum] : sums.ports) {
    const Booking& b = plan.bookings.emplace_back(
        Booking{.port = port,
                .queued = !is_endpoint_port(port),
                .weight = sum * scale / reference,
                .ps_per_weight = reference * 1e12 / port_bandwidth(port).in_bytes_per_s()});
    plan.slowest = std::max(plan.slowest, b.own());
  }
  return plan;
}

AnalyticalNetwork::FluidPlan AnalyticalNetwork::plan_fluid(std::span<const FluidEdge> edges,
                                                           int32_t mirrors) {
  const double bytes = edges.empty() ? 0 : edges.front().wire_bytes;
  const bool equal = bytes > 0 && std::all_of(edges.begin(), edges.end(), [&](const FluidEdge& e) {
                       return e.wire_bytes == bytes;
                     });
  if (!equal) {
    double reference = 0;
    for (const FluidEdge& e : edges)
      if (e.src != e.dst) reference = std::max(reference, e.wire_bytes);
    const PortSums sums = sum_ports(edges, mirrors);
    return plan_from(sums, 1.0, reference, sums.slowest_edge, sums.traffic);
  }
  // Every edge alike (a ring's or a PAT phase's lanes): the list's load per byte of an edge,
  // found once, scaled to this size.
  const PortSums& unit = unit_sums(edges, mirrors);
  const auto edge_bytes = static_cast<Bytes>(std::llround(bytes));
  TrafficStats traffic = unit.traffic;  // counted at one byte an edge
  for (Bytes& b : traffic.bytes_by_class) b *= edge_bytes;
  const Time slowest_edge =
      unit.traffic.messages > 0 ? transfer_time(edge_bytes, unit.narrowest) : Time{};
  return plan_from(unit, bytes, bytes, slowest_edge, traffic);
}

const AnalyticalNetwork::PortSums& AnalyticalNetwork::unit_sums(std::span<const FluidEdge> edges,
                                                                int32_t mirrors) {
  uint64_t hash = static_cast<uint64_t>(mirrors) * 0x9E3779B97F4A7C15ull;
  for (const FluidEdge& e : edges)
    hash = (hash ^ (static_cast<uint64_t>(e.src) << 32 | e.dst)) * 0x100000001B3ull;
  const auto same = [&](const UnitPlan& u) {
    return u.mirrors == mirrors && u.pairs.size() == edges.size() &&
           std::equal(edges.begin(), edges.end(), u.pairs.begin(),
                      [](const FluidEdge& e, uint64_t pair) {
                        return (static_cast<uint64_t>(e.src) << 32 | e.dst) == pair;
                      });
  };
  if (const auto index = unit_plans_.find(hash, same)) return unit_plans_[*index].sums;
  UnitPlan unit;
  unit.mirrors = mirrors;
  unit.pairs.reserve(edges.size());
  std::vector<FluidEdge> ones(edges.begin(), edges.end());
  for (FluidEdge& e : ones) {
    unit.pairs.push_back(static_cast<uint64_t>(e.src) << 32 | e.dst);
    e.wire_bytes = 1;
  }
  unit.sums = sum_ports(ones, mirrors);
  if (const auto index = unit_plans_.keep(hash, unit, unit.pairs.size() + unit.sums.ports.size()))
    return unit_plans_[*index].sums;
  scratch_unit_ = std::move(unit.sums);
  return scratch_unit_;
}

void AnalyticalNetwork::send_fluid(std::span<const FluidEdge> edges, int32_t mirrors, Time waits,
                                   Done done, FluidPlanSlot* slot) {
  PendingFluid pending{.plan = kOwnPlan, .own_plan = {}, .waits = waits, .done = std::move(done)};
  // The plans this instant's transfers use are read when it settles: none may make room.
  if (pending_.empty()) instant_mark_ = fluid_plans_.mark();
  // A plan holds run 0's ports: a slot sent with other mirrors is planned afresh.
  if (slot && slot->network == slot_id_ && slot->mirrors == mirrors &&
      fluid_plans_.at(slot->plan, slot->generation)) {
    pending.plan = slot->plan;
  } else {
    pending.own_plan = plan_fluid(edges, mirrors);
    const std::size_t ports = pending.own_plan.bookings.size();
    if (slot) {
      if (const auto index =
              fluid_plans_.keep(std::nullopt, pending.own_plan, ports, instant_mark_)) {
        *slot = {slot_id_, *index, mirrors, fluid_plans_.generation(*index)};
        pending.plan = *index;
      }
    }
  }
  stats_.add(plan_of(pending).traffic);
  if (pending_.empty()) sim_.schedule_at(sim_.now(), [this] { settle_instant(); });
  pending_.push_back(std::move(pending));
}

void AnalyticalNetwork::settle_instant() {
  // One transfer alone at its instant (the common case) queues as it is timed; several first sum
  // what they book on each port.
  const bool several = pending_.size() > 1;
  if (several) {
    for (const PendingFluid& pending : pending_) {
      for (const Booking& b : plan_of(pending).bookings) {
        Port& port = port_state(b.port);
        if (port.instant_count == 0) instant_ports_.push_back(b.port);
        port.instant_own += b.own();
        port.instant_weight += b.weight;
        ++port.instant_count;
      }
    }
  }
  for (PendingFluid& pending : pending_) {
    const FluidPlan& plan = plan_of(pending);
    Time busy;
    for (const Booking& b : plan.bookings) {
      Port& port = port_state(b.port);
      const Time own = b.own();
      const Time waited = b.queued ? fair_wait(port, own) : Time{};
      // Max-min fair, the transfers through the port move at one rate while they share it: this
      // one's reference bytes at that rate take the port's time for their weights summed, or
      // less where some end before it, but never longer than the port takes for them all. Equal
      // transfers end at one instant, to send their next phases together.
      const Time through =
          several ? std::min(port.instant_own, b.time_for(port.instant_weight)) : own;
      busy = std::max(busy, waited + through);
      if (!several && b.queued) enqueue(port, own, 1);
    }
    if (pending.done)
      sim_.schedule_in(std::max(plan.slowest + pending.waits, busy), std::move(pending.done));
  }
  pending_.clear();
  for (const uint32_t p : instant_ports_) {
    Port& port = ports_[p];
    if (!is_endpoint_port(p)) enqueue(port, port.instant_own, port.instant_count);
    port.instant_own = Time{};
    port.instant_weight = 0;
    port.instant_count = 0;
  }
  instant_ports_.clear();
}

Time AnalyticalNetwork::alone_transfer_time(VertexId src, VertexId dst, double bytes,
                                            int32_t sharing) {
  if (src == dst || bytes <= 0) return Time{};
  return transfer_time(static_cast<Bytes>(std::llround(bytes * std::max(sharing, 1))),
                       routing_.route(src, dst).bottleneck);
}

void IdealNetwork::send_fluid(std::span<const FluidEdge> edges, int32_t, Time waits, Done done,
                              FluidPlanSlot*) {
  for (const FluidEdge& e : edges) {
    if (e.src == e.dst || e.wire_bytes <= 0) continue;
    stats_.count(&routing_.route(e.src, e.dst), static_cast<Bytes>(std::llround(e.wire_bytes)));
  }
  if (done) sim_.schedule_in(waits, std::move(done));
}

void IdealNetwork::send(VertexId src, VertexId dst, Bytes bytes, Done done) {
  stats_.count(src == dst ? nullptr : &routing_.route(src, dst), bytes);
  if (done) sim_.schedule_at(sim_.now(), std::move(done));
}

}  // namespace cs::net
