// Fast transfer models for sweeps: analytical (alpha-beta per route, busy ports) and ideal.
#pragma once

#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/simulator.h"
#include "sim/net/network.h"
#include "sim/net/routing.h"

namespace cs::net {

// A message takes route.latency (latency x hops) plus bytes / route.bottleneck, or longer where
// its ports are busy: each link that touches a GPU or NIC (Topology::is_endpoint_link, which no
// routing avoids) drains the bytes of the messages that cross it at its bandwidth, first sent
// first, and a message has arrived when every such link has passed its bytes on. So no GPU or NIC
// sends or receives faster than its links (eight GPUs' all-to-all or NVLS all-reduce no longer
// sum every peer's bandwidth), while each port's queue drains on its own, as cut-through
// switching lets it. The fabric's core, which routing and adaptive spraying keep from binding,
// is not seen.
class AnalyticalNetwork final : public Network {
 public:
  AnalyticalNetwork(Simulator& sim, Routing& routing) : sim_(sim), routing_(routing) {}

  void send(VertexId src, VertexId dst, Bytes bytes, Done done) override;
  // Takes its time alone plus `waits`, or longer where its ports are busy. Alone: its slowest
  // edge, or its busiest endpoint link (one touching a GPU or NIC, Topology::is_endpoint_link,
  // which no routing avoids) carrying every one of its edges that crosses it. Busy: it ends no
  // earlier than each of its endpoint links has passed the bytes that it and the fluid transfers
  // sent before it at the same instant put there, as the lanes of one phase of a fluid collective
  // (coll/fluid_form.h) run side by side on their servers' ports. Transfers sent at other times,
  // and the ports' bookings by messages, are not seen. With a slot, the time alone, the bytes per
  // port and the traffic are worked out once per edge list and mirror count.
  void send_fluid(std::span<const FluidEdge> edges, int32_t mirrors, Time waits, Done done,
                  FluidPlanSlot* slot) override;
  Time path_latency(VertexId src, VertexId dst) override {
    return src == dst ? Time{} : routing_.route(src, dst).latency;
  }
  // The message's own time, as send() charges it on idle ports: `sharing` slows nothing.
  Time alone_transfer_time(VertexId src, VertexId dst, double bytes, int32_t sharing) override;
  std::string_view name() const override { return "analytical"; }
  const TrafficStats& stats() const override { return stats_; }

 private:
  // What one fluid send takes alone, the bytes it puts on each endpoint link, and its traffic.
  struct FluidPlan {
    Time slowest;
    std::vector<std::pair<LinkId, double>> port_bytes;
    TrafficStats traffic;
  };
  FluidPlan plan_fluid(std::span<const FluidEdge> edges, int32_t mirrors);
  // Adds the plan's bytes to the ports of this instant's fluid transfers; returns when the
  // busiest of its ports has passed every byte booked on it at this instant.
  Time share_ports_with_this_instant(const FluidPlan& plan);
  // Queues `bytes` on the route's ports; returns when the last of them has passed them on.
  Time queue_at_ports(const Route& route, Bytes bytes);

  Simulator& sim_;
  Routing& routing_;
  TrafficStats stats_;
  static constexpr std::size_t kMaxFluidPlans = std::size_t{1} << 20;  // about 100 MB
  std::vector<FluidPlan> fluid_plans_;                                 // those named by slots
  std::vector<Time> port_drained_at_;  // per link, when its queued bytes have passed it
  // Fluid bytes per link sent at `instant_` (the links touched listed, to clear them after).
  Time instant_ = Time::max();
  std::vector<double> instant_port_bytes_;
  std::vector<LinkId> instant_ports_;
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
