#include "sim/net/analytical_network.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
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
    arrival =
        std::max(sim_.now() + transfer_time(bytes, route.bottleneck), queue_at_ports(route, bytes));
  }
  if (done) sim_.schedule_at(arrival + route.latency, std::move(done));
}

const Trunks& AnalyticalNetwork::trunks() {
  if (!trunks_) trunks_ = use_trunks_ ? oversubscribed_trunks(routing_.topology()) : Trunks{};
  return *trunks_;
}

int64_t AnalyticalNetwork::port_of(LinkId link) {
  const Topology& topology = routing_.topology();
  if (topology.is_endpoint_link(link)) return link;
  const int32_t trunk = trunks().trunk(link);
  return trunk < 0 ? -1 : static_cast<int64_t>(topology.num_links()) + trunk;
}

Bandwidth AnalyticalNetwork::port_bandwidth(uint32_t port) const {
  const Topology& topology = routing_.topology();
  return port < topology.num_links() ? topology.link(port).bandwidth
                                     : trunks_->bandwidth[port - topology.num_links()];
}

Time AnalyticalNetwork::queue_at(uint32_t port, double bytes) {
  if (port_drained_at_.empty())
    port_drained_at_.assign(routing_.topology().num_links() + trunks().bandwidth.size(), Time{});
  Time& drained = port_drained_at_[port];
  drained = std::max(drained, sim_.now()) +
            transfer_time(static_cast<Bytes>(std::llround(bytes)), port_bandwidth(port));
  return drained;
}

Time AnalyticalNetwork::queue_at_ports(const Route& route, Bytes bytes) {
  Time last = sim_.now();
  for (const LinkId l : route.links) {
    const int64_t port = port_of(l);
    if (port >= 0)
      last = std::max(last, queue_at(static_cast<uint32_t>(port), static_cast<double>(bytes)));
  }
  return last;
}

AnalyticalNetwork::FluidPlan AnalyticalNetwork::plan_fluid(std::span<const FluidEdge> edges,
                                                           int32_t mirrors) {
  FluidPlan plan;
  std::unordered_map<uint32_t, double> port_bytes;  // on the GPU and NIC links, and the trunks
  // Runs past the first are its images on other GPUs (send_fluid's mirrors): their endpoint ports
  // are loaded as run 0's are, by this transfer and by every other lane of its phase alike, so
  // run 0's stand for all in the time and in the ports booked. A trunk carries every run's bytes,
  // and those of every transfer before it: it is queued on (queue_at), not shared per instant.
  const std::size_t run0 = edges.size() / static_cast<std::size_t>(std::max(mirrors, 1));
  const auto links = static_cast<int64_t>(routing_.topology().num_links());
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const FluidEdge& e = edges[i];
    if (e.src == e.dst || e.wire_bytes <= 0) continue;
    const Route& route = routing_.route(e.src, e.dst);
    const auto bytes = static_cast<Bytes>(std::llround(e.wire_bytes));
    plan.traffic.count(&route, bytes);
    plan.slowest = std::max(plan.slowest, transfer_time(bytes, route.bottleneck));
    if (i >= run0 && trunks().empty()) continue;
    for (const LinkId l : route.links) {
      const int64_t port = port_of(l);
      if (port >= 0 && (i < run0 || port >= links))
        port_bytes[static_cast<uint32_t>(port)] += e.wire_bytes;
    }
  }
  for (const auto& [port, bytes] : port_bytes) {
    const auto b = static_cast<Bytes>(std::llround(bytes));
    plan.slowest = std::max(plan.slowest, transfer_time(b, port_bandwidth(port)));
    (port < links ? plan.port_bytes : plan.trunk_bytes).emplace_back(port, bytes);
  }
  // By port, so that the plan (and what it books) does not depend on the hash map's order.
  std::sort(plan.port_bytes.begin(), plan.port_bytes.end());
  std::sort(plan.trunk_bytes.begin(), plan.trunk_bytes.end());
  return plan;
}

Time AnalyticalNetwork::share_ports_with_this_instant(const FluidPlan& plan) {
  if (instant_ != sim_.now()) {
    for (const uint32_t p : instant_ports_) instant_port_bytes_[p] = 0;
    instant_ports_.clear();
    instant_ = sim_.now();
  }
  Time busiest;
  for (const auto& [port, bytes] : plan.port_bytes) {
    if (instant_port_bytes_.size() <= port) instant_port_bytes_.resize(port + 1, 0.0);
    double& booked = instant_port_bytes_[port];
    if (booked == 0) instant_ports_.push_back(port);
    booked += bytes;
    const auto b = static_cast<Bytes>(std::llround(booked));
    busiest = std::max(busiest, transfer_time(b, port_bandwidth(port)));
  }
  return busiest;
}

void AnalyticalNetwork::send_fluid(std::span<const FluidEdge> edges, int32_t mirrors, Time waits,
                                   Done done, FluidPlanSlot* slot) {
  // A plan holds run 0's ports: a slot sent with other mirrors is planned afresh.
  const auto planned = [&] {
    return slot && slot->network == slot_id_ && slot->mirrors == mirrors;
  };
  if (slot && !planned() && fluid_plans_.size() < kMaxFluidPlans) {
    *slot = {slot_id_, static_cast<uint32_t>(fluid_plans_.size()), mirrors};
    fluid_plans_.push_back(plan_fluid(edges, mirrors));
  }
  const bool kept = planned();
  FluidPlan fresh;
  if (!kept) fresh = plan_fluid(edges, mirrors);
  const FluidPlan& plan = kept ? fluid_plans_[slot->plan] : fresh;
  stats_.add(plan.traffic);
  Time ports = share_ports_with_this_instant(plan);
  for (const auto& [port, bytes] : plan.trunk_bytes)
    ports = std::max(ports, queue_at(port, bytes) - sim_.now());
  if (done) sim_.schedule_in(std::max(plan.slowest + waits, ports), std::move(done));
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
