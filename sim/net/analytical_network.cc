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

Time AnalyticalNetwork::queue_at_ports(const Route& route, Bytes bytes) {
  const Topology& topology = routing_.topology();
  if (port_drained_at_.empty()) port_drained_at_.assign(topology.num_links(), Time{});
  Time last = sim_.now();
  for (const LinkId l : route.links) {
    if (!topology.is_endpoint_link(l)) continue;
    Time& drained = port_drained_at_[l];
    drained = std::max(drained, sim_.now()) + transfer_time(bytes, topology.link(l).bandwidth);
    last = std::max(last, drained);
  }
  return last;
}

AnalyticalNetwork::FluidPlan AnalyticalNetwork::plan_fluid(std::span<const FluidEdge> edges,
                                                           int32_t mirrors) {
  FluidPlan plan;
  const Topology& topology = routing_.topology();
  std::unordered_map<LinkId, double> endpoint_bytes;  // on the GPU and NIC links of the edges
  // Runs past the first are its images on other GPUs (send_fluid's mirrors): their ports are
  // loaded as run 0's are, by this transfer and by every other lane of its phase alike, so run
  // 0's stand for all in the time and in the ports booked.
  const std::size_t run0 = edges.size() / static_cast<std::size_t>(std::max(mirrors, 1));
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const FluidEdge& e = edges[i];
    if (e.src == e.dst || e.wire_bytes <= 0) continue;
    const Route& route = routing_.route(e.src, e.dst);
    const auto bytes = static_cast<Bytes>(std::llround(e.wire_bytes));
    plan.traffic.count(&route, bytes);
    plan.slowest = std::max(plan.slowest, transfer_time(bytes, route.bottleneck));
    if (i >= run0) continue;
    for (const LinkId l : route.links)
      if (topology.is_endpoint_link(l)) endpoint_bytes[l] += e.wire_bytes;
  }
  for (const auto& [link, bytes] : endpoint_bytes) {
    const auto b = static_cast<Bytes>(std::llround(bytes));
    plan.slowest = std::max(plan.slowest, transfer_time(b, topology.link(link).bandwidth));
    plan.port_bytes.emplace_back(link, bytes);
  }
  // By link, so that the plan (and what it books) does not depend on the hash map's order.
  std::sort(plan.port_bytes.begin(), plan.port_bytes.end());
  return plan;
}

Time AnalyticalNetwork::share_ports_with_this_instant(const FluidPlan& plan) {
  const Topology& topology = routing_.topology();
  if (instant_ != sim_.now()) {
    for (const LinkId l : instant_ports_) instant_port_bytes_[l] = 0;
    instant_ports_.clear();
    instant_ = sim_.now();
  }
  if (instant_port_bytes_.empty()) instant_port_bytes_.assign(topology.num_links(), 0.0);
  Time busiest;
  for (const auto& [link, bytes] : plan.port_bytes) {
    double& booked = instant_port_bytes_[link];
    if (booked == 0) instant_ports_.push_back(link);
    booked += bytes;
    const auto b = static_cast<Bytes>(std::llround(booked));
    busiest = std::max(busiest, transfer_time(b, topology.link(link).bandwidth));
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
  const Time ports = share_ports_with_this_instant(plan);
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
