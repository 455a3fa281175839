// Fast transfer models for sweeps: analytical (alpha-beta per route, busy ports) and ideal.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/simulator.h"
#include "sim/net/network.h"
#include "sim/net/routing.h"
#include "sim/net/trunks.h"

namespace cs::net {

// A message takes route.latency (latency x hops) plus bytes / route.bottleneck, or longer where
// its ports are busy: each link that touches a GPU or NIC (Topology::is_endpoint_link, which no
// routing avoids) drains the bytes of the messages that cross it at its bandwidth, first sent
// first, and a message has arrived when every such link has passed its bytes on. So no GPU or NIC
// sends or receives faster than its links (eight GPUs' all-to-all or NVLS all-reduce no longer
// sum every peer's bandwidth), while each port's queue drains on its own, as cut-through
// switching lets it. The fabric's core, which routing and adaptive spraying keep from binding
// where it has full bisection, is seen only where a tier is oversubscribed: with `trunks` on,
// bytes that leave or enter such a tier's switch group queue at its pooled up-links (trunks.h)
// as at a port, so that traffic across a 1:7 tier drains at a seventh of its senders' rate.
class AnalyticalNetwork final : public Network {
 public:
  AnalyticalNetwork(Simulator& sim, Routing& routing, bool trunks = true)
      : sim_(sim), routing_(routing), use_trunks_(trunks) {}

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
  // What one fluid send takes alone, the bytes it puts on each port (an endpoint link, or a
  // trunk: port_of) and its traffic.
  struct FluidPlan {
    Time slowest;
    std::vector<std::pair<uint32_t, double>> port_bytes;   // endpoint links
    std::vector<std::pair<uint32_t, double>> trunk_bytes;  // trunks, by port
    TrafficStats traffic;
  };
  // Ports are the links (by id) and then the trunks; a link's port is its trunk's where it has
  // one, and none (-1) where it is neither an endpoint link nor in a trunk.
  int64_t port_of(LinkId link);
  const Trunks& trunks();
  Bandwidth port_bandwidth(uint32_t port) const;
  FluidPlan plan_fluid(std::span<const FluidEdge> edges, int32_t mirrors);
  // Adds the plan's bytes to the ports of this instant's fluid transfers; returns when the
  // busiest of its ports has passed every byte booked on it at this instant.
  Time share_ports_with_this_instant(const FluidPlan& plan);
  // Queues `bytes` on the route's ports; returns when the last of them has passed them on.
  Time queue_at_ports(const Route& route, Bytes bytes);
  // Queues `bytes` on one port; returns when it has passed them on.
  Time queue_at(uint32_t port, double bytes);

  Simulator& sim_;
  Routing& routing_;
  bool use_trunks_;
  std::optional<Trunks> trunks_;  // found on first use
  TrafficStats stats_;
  static constexpr std::size_t kMaxFluidPlans = std::size_t{1} << 20;  // about 100 MB
  std::vector<FluidPlan> fluid_plans_;                                 // those named by slots
  std::vector<Time> port_drained_at_;  // per port, when its queued bytes have passed it
  // Fluid bytes per port sent at `instant_` (the ports touched listed, to clear them after).
  Time instant_ = Time::max();
  std::vector<double> instant_port_bytes_;
  std::vector<uint32_t> instant_ports_;
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
