// Contention-free transfer models for fast sweeps: analytical (alpha-beta per route) and ideal.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "sim/core/simulator.h"
#include "sim/net/network.h"
#include "sim/net/routing.h"

namespace cs::net {

// Every message sees an otherwise empty network: it takes route.latency (latency x hops) plus
// bytes / route.bottleneck, however many others share its links.
class AnalyticalNetwork final : public Network {
 public:
  AnalyticalNetwork(Simulator& sim, Routing& routing) : sim_(sim), routing_(routing) {}

  void send(VertexId src, VertexId dst, Bytes bytes, Done done) override;
  // Takes as long as its slowest edge alone, or as its busiest endpoint link (one touching a GPU
  // or NIC, Topology::is_endpoint_link, which no routing avoids) carrying every edge of the
  // transfer that crosses it, if that is longer: the edges of one transfer share their servers'
  // ports, other transfers are still not seen. With a slot, that time and the traffic are worked
  // out once per edge list.
  void send_fluid(std::span<const FluidEdge> edges, int32_t mirrors, Time waits, Done done,
                  FluidPlanSlot* slot) override;
  Time path_latency(VertexId src, VertexId dst) override {
    return src == dst ? Time{} : routing_.route(src, dst).latency;
  }
  // Every message has its route to itself: `sharing` slows nothing.
  Time alone_transfer_time(VertexId src, VertexId dst, double bytes, int32_t sharing) override;
  std::string_view name() const override { return "analytical"; }
  const TrafficStats& stats() const override { return stats_; }

 private:
  // What one fluid send takes and adds to the traffic.
  struct FluidPlan {
    Time slowest;
    TrafficStats traffic;
  };
  FluidPlan plan_fluid(std::span<const FluidEdge> edges);

  Simulator& sim_;
  Routing& routing_;
  TrafficStats stats_;
  static constexpr std::size_t kMaxFluidPlans = std::size_t{1} << 20;  // about 100 MB
  std::vector<FluidPlan> fluid_plans_;                                 // those named by slots
};

// Communication is free: every message completes at the time it was sent (as a scheduled event,
// so callers never re-enter themselves). Traffic is still counted by link class, which is why
// it takes the routing.
class IdealNetwork final : public Network {
 public:
  IdealNetwork(Simulator& sim, Routing& routing) : sim_(sim), routing_(routing) {}

  void send(VertexId src, VertexId dst, Bytes bytes, Done done) override;
  void send_fluid(std::span<const FluidEdge> edges, int32_t mirrors, Time waits, Done done,
                  FluidPlanSlot* slot) override;
  Time path_latency(VertexId, VertexId) override { return Time{}; }
  Time alone_transfer_time(VertexId, VertexId, double, int32_t) override { return Time{}; }
  std::string_view name() const override { return "ideal"; }
  const TrafficStats& stats() const override { return stats_; }

 private:
  Simulator& sim_;
  Routing& routing_;
  TrafficStats stats_;
};

}  // namespace cs::net
