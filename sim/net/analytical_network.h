// Fast transfer models for sweeps: analytical (alpha-beta per route, busy ports) and ideal.
#pragma once

#include <cmath>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/core/simulator.h"
#include "sim/net/kept_plans.h"
#include "sim/net/network.h"
#include "sim/net/routing.h"
#include "sim/net/trunks.h"

namespace cs::net {

// A message takes route.latency (latency x hops) plus bytes / route.bottleneck, or longer where
// its ports are busy: each link that touches a GPU or NIC (Topology::is_endpoint_link, which no
// routing avoids) drains the bytes of the messages that cross it at its bandwidth, sharing it
// fairly among those queued (queue_at), and a message has arrived when every such link has
// passed its bytes on. So no GPU or NIC sends or receives faster than its links (eight GPUs'
// all-to-all or NVLS all-reduce no longer sum every peer's bandwidth), while each port's queue
// drains on its own, as cut-through switching lets it. The fabric's core, which routing and
// adaptive spraying keep from binding where it has full bisection, is seen only where a tier is
// oversubscribed: with `trunks` on, bytes that leave or enter such a tier's switch group queue at
// its pooled up-links (trunks.h) as at a port, so that traffic across a 1:7 tier drains at a
// seventh of its senders' rate. Where the fabric hashes connections onto paths instead of spraying
// them (static or multi-flow ECMP) and `hashed_paths` is on, there is no pool: every switch link is
// a port, and a message queues its bytes at the links of its hashed paths (a share of them on each
// of multi-flow ECMP's paths, spread_paths), as the congestion-aware model loads them, so that
// connections hashed onto one link drain at its rate together.
class AnalyticalNetwork final : public Network {
 public:
  AnalyticalNetwork(Simulator& sim, Routing& routing, bool trunks = true, bool hashed_paths = true);

  void send(VertexId src, VertexId dst, Bytes bytes, Done done) override;
  // Takes its time alone plus `waits`, or longer where its ports are busy. Alone: its slowest
  // edge, or its busiest endpoint link (one touching a GPU or NIC, Topology::is_endpoint_link,
  // which no routing avoids) carrying every one of its edges that crosses it. Busy: the fluid
  // transfers sent at one instant (the lanes of one phase of a fluid collective, coll/fluid_form.h,
  // or the phases of many groups' collectives) share each port they cross max-min fairly,
  // whatever the order they were sent in: at one rate while they share it, so that each ends when
  // its own bytes have passed at that rate, and none later than the port takes for all of theirs
  // (equal transfers end together, a small one beside a large one early). Endpoint ports see
  // only that instant's fluid transfers; queued ports (trunks, hashed switch links) also share
  // with what earlier transfers and messages left there (queue_at). With a slot, the time alone,
  // the bytes per port and the traffic are worked out once per edge list and mirror count.
  void send_fluid(std::span<const FluidEdge> edges, int32_t mirrors, Time waits, Done done,
                  FluidPlanSlot* slot) override;
  Time path_latency(VertexId src, VertexId dst) override {
    return src == dst ? Time{} : routing_.route(src, dst).latency;
  }
  // The message's own time, as send() charges it on idle ports: `sharing` slows nothing.
  Time alone_transfer_time(VertexId src, VertexId dst, double bytes, int32_t sharing) override;
  std::string_view name() const override { return "analytical"; }
  const TrafficStats& stats() const override { return stats_; }
  // The room slots' plans share, in ports (kMaxFluidPlanPorts unless a test sets less).
  void set_fluid_plan_room(std::size_t ports) { fluid_plans_.set_room(ports); }

 private:
  // What a fluid transfer puts on one port: `weight` bytes per byte it moves (its reference),
  // which the port passes in `ps_per_weight` x weight picoseconds.
  struct Booking {
    uint32_t port = 0;
    bool queued = true;  // not an endpoint port: it keeps a queue across instants
    double weight = 0;
    double ps_per_weight = 0;
    // The port's time alone for this transfer's bytes, and for `weights` x its reference bytes.
    Time own() const { return time_for(weight); }
    Time time_for(double weights) const {
      return Time::ps(Time::checked_ps(std::ceil(weights * ps_per_weight)));
    }
  };
  // What one fluid send takes alone, what it books on each port (port_of) and its traffic. It
  // moves its reference bytes (its largest edge's) as one flow, at one rate on every port.
  struct FluidPlan {
    Time slowest;
    std::vector<Booking> bookings;  // by port
    TrafficStats traffic;
  };
  // Ports are the links (by id) and then the trunks. An endpoint link is its own port; a switch
  // link is too where paths are hashed, and otherwise its trunk's, or none (-1).
  int64_t port_of(LinkId link);
  // Endpoint ports are shared by the fluid transfers of an instant; the others are queued on.
  bool is_endpoint_port(uint32_t port);
  // Whether a message on `route` is split over multi-flow ECMP's hashed paths.
  bool spreads(const Route& route) const {
    return hashed_flows_ > 1 && route.link_class == LinkClass::kNetwork;
  }
  // Calls visit(link, share of the bytes) once for each link the message loads, in link order
  // where it is spread over hashed paths.
  template <typename Visit>
  void for_each_link(VertexId src, VertexId dst, const Route& route, Visit&& visit);
  const Trunks& trunks();
  Bandwidth port_bandwidth(uint32_t port) const;
  // The bytes an edge list puts on each port (by port), its traffic, its slowest edge alone and
  // the narrowest of its routes.
  struct PortSums {
    std::vector<std::pair<uint32_t, double>> ports;
    TrafficStats traffic;
    Time slowest_edge;
    Bandwidth narrowest;
  };
  PortSums sum_ports(std::span<const FluidEdge> edges, int32_t mirrors);
  // The plan of sums whose port bytes are scaled by `scale`, moving `reference` bytes.
  FluidPlan plan_from(const PortSums& sums, double scale, double reference, Time slowest_edge,
                      const TrafficStats& traffic);
  FluidPlan plan_fluid(std::span<const FluidEdge> edges, int32_t mirrors);
  // The sums of `edges` at one byte an edge, found once per list of pairs and mirror count: a
  // run sends the same lanes at many sizes (every bucket of a data-parallel reduction), and on
  // hashed paths walking a list's 16 paths an edge is what costs.
  const PortSums& unit_sums(std::span<const FluidEdge> edges, int32_t mirrors);
  // Times the fluid transfers sent at this instant, once all are sent (an event at the same
  // instant): each ends when its ports have passed its bytes beside the others'.
  void settle_instant();
  // Queues `bytes` on the ports of the message's links; returns when the last has passed them on.
  Time queue_at_ports(VertexId src, VertexId dst, const Route& route, Bytes bytes);
  // Queues bytes the port takes `own` to pass on; returns when these have passed, sharing the
  // port fairly with those still waiting (not first come first served, so a small message is not
  // held for a large one's whole transfer).
  Time queue_at(uint32_t port, Time own);
  struct Port;
  Port& port_state(uint32_t port);
  // How long a booking of `own` waits behind what is still queued at the port: k x own, for the k
  // bookings of its busy period's mean length that are still draining, or the whole backlog if
  // that is less.
  Time fair_wait(const Port& port, Time own) const;
  // Adds `count` bookings of `own` seconds in all to the port's queue.
  void enqueue(Port& port, Time own, int64_t count) const;

  Simulator& sim_;
  Routing& routing_;
  bool use_trunks_;
  // Multi-flow ECMP's paths per message where the fabric hashes and the effect is on; 0: the
  // fabric is not hashed (adaptive), or the effect is off.
  int32_t hashed_flows_ = 0;
  // The spread of each pair that sent messages, kept up to a bound on their links (12 bytes
  // each, about 50 MB).
  static constexpr std::size_t kMaxSpreadLinks = std::size_t{1} << 22;
  std::unordered_map<uint64_t, SpreadPaths> spread_cache_;  // key: src << 32 | dst
  std::size_t spread_links_ = 0;                            // the links they hold
  std::optional<Trunks> trunks_;                            // found on first use
  TrafficStats stats_;
  // Plans named by slots, kept up to a bound on their ports (24 bytes each, about 400 MB), as
  // hashed paths give a data-parallel phase over thousands of servers tens of thousands of switch
  // links.
  static constexpr std::size_t kMaxFluidPlanPorts = std::size_t{1} << 24;
  KeptPlans<FluidPlan> fluid_plans_{kMaxFluidPlanPorts};
  uint64_t instant_mark_ = 0;  // fluid_plans_.mark() at this instant's first transfer
  // unit_sums' lists, by a hash of their pairs, kept up to a bound on their pairs and ports (about
  // 200 MB).
  struct UnitPlan {
    int32_t mirrors = 0;
    std::vector<uint64_t> pairs;  // src << 32 | dst of each edge
    PortSums sums;
  };
  static constexpr std::size_t kMaxUnitPlanEntries = std::size_t{1} << 24;
  KeptPlans<UnitPlan> unit_plans_{kMaxUnitPlanEntries};
  PortSums scratch_unit_;  // a list past the bound
  // Per port: when its queued bytes have passed it, what its current busy period has queued
  // (the bookings' own times, summed, and their count), and what this instant's fluid transfers
  // book there, not yet queued (their own times and weights, summed, and their count).
  struct Port {
    Time drained;
    Time busy;
    int64_t bookings = 0;
    Time instant_own;
    double instant_weight = 0;
    int32_t instant_count = 0;
  };
  std::vector<Port> ports_;
  // The fluid transfers sent at this instant and not yet timed: the plan (in fluid_plans_, or
  // kOwnPlan: its own), the pace and what to call at the end.
  struct PendingFluid {
    uint32_t plan = 0;
    FluidPlan own_plan;
    Time waits;
    Done done;
  };
  static constexpr uint32_t kOwnPlan = 0xFFFFFFFFu;
  std::vector<PendingFluid> pending_;
  const FluidPlan& plan_of(const PendingFluid& pending) const {
    return pending.plan == kOwnPlan ? pending.own_plan : fluid_plans_[pending.plan];
  }
  std::vector<uint32_t> instant_ports_;  // the ports this instant's fluid transfers book
  // plan_fluid's bytes per port (zero outside a plan) and the ports it touched.
  std::vector<double> plan_port_bytes_;
  std::vector<uint32_t> plan_ports_;
  Route scratch_path_;
  std::vector<char> endpoint_link_;  // per link, found on first use
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
