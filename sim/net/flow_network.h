// Congestion-aware transfer model: each message is a flow whose rate is its max-min fair share.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/core/simulator.h"
#include "sim/core/units.h"
#include "sim/net/kept_plans.h"
#include "sim/net/max_min.h"
#include "sim/net/network.h"
#include "sim/net/routing.h"
#include "sim/net/topology.h"

namespace cs::net {

// Flows that share a link split its bandwidth max-min fairly (progressive filling). A message
// completes when its last byte leaves the sender under that shared model plus its route's
// latency, so a lone flow takes exactly route.latency + transfer_time(bytes, route.bottleneck).
//
// Rates change only when flows start or end. All starts and ends at one timestamp are batched
// into one recompute event, in which the max-min solver (max_min.h) re-solves only the flows the
// change can move. Flows whose rate did not change keep their finish time. The topology's load
// balancing decides the paths: one hashed flow per message (static ECMP), the message split evenly
// over several hashed paths (multi-flow ECMP, network messages only, as NCCL opens its queue pairs
// per network connection: modelled as one flow whose links carry the fraction of its paths that
// cross them, since NCCL stripes a message evenly over its queue pairs, so they advance together),
// or, adaptive, sprayed: on a tiered fabric one flow through the trunks of the switch tiers it
// crosses (see build_trunks), elsewhere one flow down the least-loaded equal-cost hops at its
// start. A fluid transfer (send_fluid) is one flow as well, whose links carry each edge's share of
// its bytes.
class FlowNetwork final : public Network {
 public:
  // `sim` and `routing` must outlive the network.
  FlowNetwork(Simulator& sim, const Topology& topology, Routing& routing);

  void send(VertexId src, VertexId dst, Bytes bytes, Done done) override;
  void send_fluid(std::span<const FluidEdge> edges, int32_t mirrors, Time waits, Done done,
                  FluidPlanSlot* slot) override;
  Time path_latency(VertexId src, VertexId dst) override;
  // The route's slowest link split evenly among `sharing` flows.
  Time alone_transfer_time(VertexId src, VertexId dst, double bytes, int32_t sharing) override;
  std::string_view name() const override { return "congestion_aware"; }
  const TrafficStats& stats() const override { return stats_; }

  // Memory per link of the topology, and per GPU pair that sends over `paths` hashed paths of
  // `hops` links each (the cached spread of multi-flow ECMP).
  static std::size_t bytes_per_link() { return MaxMin::bytes_per_link() + sizeof(bool); }
  static std::size_t bytes_per_spread_pair(std::size_t paths, std::size_t hops) {
    return sizeof(PairLinks) + 64 + paths * hops * (sizeof(LinkId) + sizeof(double));
  }

  // A view of one active flow, for tests and diagnostics.
  struct FlowView {
    VertexId src = 0;
    VertexId dst = 0;
    double rate_bytes_per_s = 0;  // as of the last recompute
    double remaining_bytes = 0;   // as of the flow's last update
  };
  // Active flows in slot order. Rates reflect the last recompute, which runs as an event at the
  // time of the change: run the simulator up to now() before reading them.
  std::vector<FlowView> active_flows() const;
  std::size_t num_active_flows() const { return solver_.num_flows(); }

  // Incremental recomputes (the default) re-solve only the flows whose fair share a change can
  // move; off, every recompute re-solves the whole connected component. Both give the max-min
  // allocation; the switch is for tests and benchmarks that compare them.
  void set_incremental(bool on) { solver_.set_incremental(on); }

  // Cost counters: how many recomputes ran, how many flows they revisited in total, and how many
  // water-fillings they took (an incremental recompute fills again each time its set grows).
  uint64_t recomputes() const { return solver_.solves(); }
  uint64_t recomputed_flows() const { return solver_.solved_flows(); }
  uint64_t solve_rounds() const { return solver_.fill_rounds(); }
  // How many fluid transfers were planned (their links and shares worked out) rather than sent
  // by a kept plan, and the room kept plans share (in edges plus links; kMaxFluidPlanEntries
  // unless a test sets less).
  uint64_t fluid_plans_built() const { return fluid_plans_built_; }
  void set_fluid_plan_room(std::size_t entries) { fluid_plans_.set_room(entries); }

 private:
  static constexpr uint32_t kNone = MaxMin::kNone;

  // A flow's record beside its rates, which the solver keeps under the same id.
  struct Flow {
    Time latency;  // of the route: the last byte arrives this long after it leaves
    Done done;
    uint64_t seq = 0;  // start order: breaks ties between flows finishing at the same time
    VertexId src = 0;
    VertexId dst = 0;
    LinkId pace = kNone;  // a paced fluid transfer's own link, which caps its rate
  };
  // A flow's progress, which every recompute that revisits the flow brings up to date, apart
  // from its record: 16 bytes instead of a record spanning cache lines. Its finish time lives in
  // the finish heap.
  struct FlowClock {
    double remaining = 0;  // bytes still to leave the sender, as of `last_update`
    Time last_update;
  };
  // The links a message between one pair of GPUs loads, with the share of its rate each carries
  // (its weight in the solver), and the latency of its slowest path: cached per pair for
  // multi-flow ECMP.
  using PairLinks = SpreadPaths;

  // A fluid transfer's links and the share of its rate each carries, built once per distinct
  // edge list (unless routing is adaptive) since a run sends the same transfers again and again:
  // a folded pipeline transfer has one edge per represented rank.
  struct FluidPlan {
    std::vector<FluidEdge> edges;
    int32_t mirrors = 1;
    double reference = 0;  // bytes of the largest edge: what the flow moves
    double alone = 0;      // its rate alone on the network
    std::vector<LinkId> links;
    std::vector<double> weights;
    TrafficStats stats;  // what one send adds
    // Under adaptive routing, the edges that cross the network, whose paths are chosen by the
    // load at each send; links and weights then hold only the other edges' static paths.
    struct AdaptiveEdge {
      VertexId src, dst;
      double scale;
      bool image;
    };
    std::vector<AdaptiveEdge> adaptive;
  };
  // At most this many edges and links are kept in reusable plans (about 16 bytes each).
  static constexpr std::size_t kMaxFluidPlanEntries = std::size_t{1} << 24;
  // The plan for `edges`: the one `slot` names when this network filled it for these mirrors
  // and still keeps it, else a kept one with equal edges, else a new one (kept, and named in
  // `slot`, unless it alone needs more than the room).
  const FluidPlan& fluid_plan(std::span<const FluidEdge> edges, int32_t mirrors,
                              FluidPlanSlot* slot);
  FluidPlan build_fluid_plan(std::span<const FluidEdge> edges, int32_t mirrors);
  // `base` with its adaptive edges routed by the present load (in scratch_plan_).
  const FluidPlan& with_adaptive_paths(const FluidPlan& base);
  // Sorts the plan's links, takes their weights from link_share_ (clearing it) and its rate alone.
  void finish_links(FluidPlan& plan);

  // Starts one flow of `bytes` over `links`, each carrying `weight` of its rate (parallel arrays).
  void start_flow(const std::vector<LinkId>& links, const std::vector<double>& weights,
                  Time latency, VertexId src, VertexId dst, double bytes, Done done);
  LinkId allocate_pace_link(double capacity);
  // Adaptive routing on a tiered fabric, as InfiniBand's adaptive routing does it: packet by packet
  // over every up-port, so that a connection's bytes spread evenly over all its equal-cost paths.
  // Evenly spread, the links from one switch (or, above the leaves, one switch group) up to its
  // parent group all carry the same share, and so do the links down into one leaf (or group):
  // each such bundle binds as one link of their summed capacity, its trunk. A path then crosses
  // one trunk per tier up and one per tier down instead of the links of a single path, which
  // would collide with other flows' paths that spraying never lets meet, and a full-bisection
  // fabric binds nowhere above the NICs. Fills trunk_of_ (empty: no trunks).
  void build_trunks(const Topology& topology);
  // `links` with every switch-to-switch link replaced by its trunk, into trunk_route_.
  const std::vector<LinkId>& through_trunks(const std::vector<LinkId>& links);
  // A message spread evenly over the topology's `flows_per_message` hashed paths (cached).
  const PairLinks& spread_links(VertexId src, VertexId dst);
  bool spreads(const Route& route) const;
  void request_recompute();
  // Frees a flow the solver let go and schedules its callback one route latency later.
  void finish(uint32_t f);

  // Re-solves the rates the changes at this instant can move (MaxMin::solve), bringing every
  // flow it revisits up to now first and finishing those numerically done, and moves the flows
  // whose rate changed in the finish heap.
  void recompute();
  // What the solver asks as it takes a flow in: its bytes left, brought up to now.
  struct Advance final : MaxMin::Progress {
    FlowNetwork& net;
    Time now;
    Advance(FlowNetwork& n, Time t) : net(n), now(t) {}
    bool done(MaxMin::FlowId f) override;
  };
  // When flow f's last byte leaves the sender at `rate` from now (Time::max() when starved).
  Time finish_at(uint32_t f, double rate) const;

  // Completions: flows sit in an indexed min-heap by (finish, seq) and the simulator holds a
  // single event for the earliest, so a rate change moves the flow in place instead of leaving
  // a cancelled event behind in the simulator's queue for every flow at every recompute. The
  // entries carry their keys and the heap is 4-ary, so a sift reads a few adjacent entries
  // instead of one flow record per comparison. An entry packs the flow's seq and slot in one
  // word (as the event queue's keys do), so four siblings fill one 64-byte line.
  static constexpr int kSlotBits = 26;  // 67M flows at once, 2^38 flow starts
  static constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;
  struct HeapEntry {
    Time finish;
    uint64_t key;  // seq << kSlotBits | flow slot: comparing keys compares seqs
    uint32_t flow() const { return static_cast<uint32_t>(key & kSlotMask); }
    bool before(const HeapEntry& o) const {
      return finish < o.finish || (finish == o.finish && key < o.key);
    }
  };
  static constexpr std::size_t kHeapArity = 4;
  void heap_place(std::size_t i, const HeapEntry& entry);
  void heap_sift_up(std::size_t i);
  void heap_sift_down(std::size_t i);
  // Moves flow f to `finish` (when its last byte leaves the sender; Time::max() when starved).
  void heap_update(uint32_t f, Time finish);
  void heap_remove(uint32_t f);
  // Gives the flows of moved_ their new finish times and restores the heap in one pass.
  void heap_rebuild_with_moved();
  void arm_timer();
  void on_timer();

  Simulator& sim_;
  Routing& routing_;
  LoadBalancing balancing_;
  Routing::LinkLoad link_load_;  // active flows per link, for adaptive routing
  // The same plus the edges of the fluid plan being routed (link_share_), so that a ring's own
  // connections avoid each other as they avoid other flows.
  Routing::LinkLoad plan_load_;
  Route chosen_;  // the path of the last adaptive message, kept for its capacity
  TrafficStats stats_;

  // The flows' rates over the links: the topology's links by their ids, then trunks and pace
  // links. Flow ids are the solver's; flows_, clock_ and heap_pos_ are indexed by them.
  MaxMin solver_;
  std::vector<Flow> flows_;
  std::vector<FlowClock> clock_;
  uint32_t last_started_ = kNone;                         // the flow start_flow started last
  std::unordered_map<uint64_t, PairLinks> spread_cache_;  // key: src << 32 | dst

  std::vector<HeapEntry> finish_heap_;
  std::vector<uint32_t> heap_pos_;  // by flow: index in finish_heap_, kNone if not queued
  EventId timer_;
  Time timer_at_;
  uint64_t next_seq_ = 0;

  std::vector<bool> private_link_;   // by link: touches a GPU or a NIC, or is a pace link
  std::vector<LinkId> trunk_of_;     // by topology link: its trunk, or itself (adaptive, tiered)
  std::vector<LinkId> trunk_route_;  // scratch: the last route through_trunks mapped
  // Pace links: one per paced fluid flow, after the topology's links, reused once it ends.
  std::vector<LinkId> free_pace_links_;
  bool recompute_pending_ = false;
  std::vector<std::pair<uint32_t, Time>> moved_;  // flows whose rate changed, new finish times
  std::vector<double> unit_weights_;              // all 1, for single-path flows
  std::vector<double> link_share_;  // scratch by link: a fluid flow's share, 0 when untouched
  KeptPlans<FluidPlan> fluid_plans_{kMaxFluidPlanEntries};  // filed by a hash of their edges
  uint64_t fluid_plans_built_ = 0;
  FluidPlan scratch_plan_;  // a plan not kept
  std::vector<LinkId> merged_links_;
  std::vector<double> merged_weights_;
};

}  // namespace cs::net
