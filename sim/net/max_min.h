// Max-min fair rates of flows over weighted links, re-solved incrementally as flows come and go.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/net/topology.h"

namespace cs::net {

// Each flow crosses a set of links and puts `weight` x its rate on each: 1 on a single path, the
// share of its paths that cross the link for a flow spread over several, the sum of its edges'
// shares for a flow that stands for several connections. The allocation is max-min fair: no
// flow can go faster without slowing one that is no faster. Progressive filling (water-filling)
// finds it: take the link whose residual capacity, split by the weights of its unfrozen flows,
// is smallest; freeze those flows at that share; charge them to their other links; repeat.
//
// Adding and removing flows marks their links; solve() re-solves only the flows a change can
// move. Incremental (the default), it starts from the new flows and those whose bottleneck link
// changed, solves them against the fixed rates of all others, and adds any fixed flow that the
// new rates leave without a valid bottleneck (a full link on which no flow is faster), until none
// is left: the max-min allocation, usually found without touching most of a large component.
// Otherwise it re-solves the whole connected component of the changed links. A link that limits
// no one (slack: its flows could never fill it, or its one flow's tightest link is another) is
// neither filled nor crossed by either form.
class MaxMin {
 public:
  using FlowId = uint32_t;
  static constexpr uint32_t kNone = 0xFFFFFFFFu;

  // A link of `capacity` (>= 0, in the rates' unit, e.g. bytes per second). Ids count up from 0.
  LinkId add_link(double capacity);
  // Only for a link no flow crosses (a link reused, or one summed up before any flow starts):
  // the flows' standing demands depend on their links' capacities. Throws std::logic_error else.
  void set_capacity(LinkId l, double capacity);
  double capacity(LinkId l) const { return links_[l].capacity; }
  std::size_t num_links() const { return links_.size(); }
  uint32_t flows_on(LinkId l) const { return static_cast<uint32_t>(links_[l].flows.size()); }

  // A flow over `links` (at least one, each once) that carries weights[h] > 0 of its rate on
  // links[h]; `weights` may be longer than `links`. Throws std::invalid_argument otherwise. Its
  // rate is 0 until the next solve. A removed flow's id is reused, the last removed first.
  FlowId add_flow(std::span<const LinkId> links, std::span<const double> weights);
  void remove_flow(FlowId f);
  // The id the next add_flow returns.
  FlowId next_flow_id() const {
    return free_head_ != kNone ? free_head_ : static_cast<FlowId>(slots_.size());
  }
  // Ids given so far are below this.
  std::size_t flow_slots() const { return slots_.size(); }
  bool has_flow(FlowId f) const { return f < share_.size() && share_[f].num_hops > 0; }
  std::size_t num_flows() const { return num_flows_; }
  // As of the last solve that reached the flow.
  double rate(FlowId f) const { return share_[f].rate; }

  // What the flows' owner does as a solve takes each flow in: bring the flow's progress up to
  // date at its present rate() and say whether it is done. A done flow leaves at once (as by
  // remove_flow, but still listed in finished()): its rate can no longer matter.
  class Progress {
   public:
    virtual bool done(FlowId f) = 0;

   protected:
    ~Progress() = default;
  };
  // Re-solves what the changes since the last solve can move.
  void solve(Progress& progress);
  // The same where no flow is ever done.
  void solve();
  // The last solve's flows whose rate it changed (a new rate within 1e-12 of the old one keeps
  // the old, so that floating noise from another filling order moves nothing), in the order it
  // solved them, and the flows Progress found done, in the order it found them.
  const std::vector<FlowId>& changed() const { return changed_; }
  const std::vector<FlowId>& finished() const { return finished_; }

  // Off, every solve re-solves the whole component of the changed links. Both give the max-min
  // allocation; the switch is for tests and benchmarks that compare them, set before any flow.
  void set_incremental(bool on) { incremental_ = on; }
  // Cost counters: solves, the flows they revisited in all, and their water-fillings (an
  // incremental solve fills again each time its set grows).
  uint64_t solves() const { return solves_; }
  uint64_t solved_flows() const { return solved_flows_; }
  uint64_t fill_rounds() const { return fill_rounds_; }
  // The links those water-fillings filled, in all.
  uint64_t filled_links() const { return filled_links_; }

  // Memory the solver keeps per link.
  static std::size_t bytes_per_link() {
    return sizeof(LinkState) + sizeof(LinkTag) + sizeof(LinkFill);
  }

 private:
  // A flow's record beside its share: what only adding and removing it read.
  struct FlowSlot {
    // The flow's rate alone (its tightest link's capacity / weight), the next tightest, and which
    // link is the tightest: what it could ever ask of each of its links.
    double alone = 0;
    double alone_second = 0;
    LinkId tightest = 0;
    uint32_t hop_capacity = 0;  // hops reserved for this slot in hops_
    // Where the solve round's list of the flow's links that can bind lies in fill_hops_.
    uint32_t fill_begin = 0;
    uint32_t fill_end = 0;
    // binding_hops_[flow]: whether it is kept up to date (else it is rebuilt when next read),
    // how much of it is in hop order (hops that joined since come after), and how many of its
    // hops' links were slack when last read.
    bool binding_known = false;
    uint32_t binding_sorted = 0;
    uint32_t binding_stale = 0;
    uint32_t next_free = kNone;
    // Neighbours in the list of flows whose bottleneck is the same link (LinkState::limited).
    uint32_t prev_limited = kNone;
    uint32_t next_limited = kNone;
  };
  // What a solve reads of every flow on every link it fills, and where its hops are, kept apart
  // from the flow's slot: those reads scatter over the flows, and this way each touches one
  // 32-byte entry.
  struct FlowShare {
    double rate = 0;      // as of the last solve
    double new_rate = 0;  // the solve's result; negative while not frozen
    uint32_t mark = 0;    // epoch of the last solve that visited this flow
    // The link whose filling froze the flow's rate at the last solve that solved it; kNone until
    // its first. It stays a bottleneck (full, and no flow on it faster) until it changes.
    LinkId bottleneck = kNone;
    uint32_t num_hops = 0;   // 0 while the slot is free
    uint32_t hop_begin = 0;  // this slot's hops in hops_, kept when the slot is reused
  };
  // Hop h of flow f, kept in one pooled array at share_[f].hop_begin + h, so a solve walks
  // contiguous memory. `pos` is the flow's index in the link's list.
  struct Hop {
    LinkId link;
    uint32_t pos : 31;
    uint32_t listed : 1;  // in the flow's binding_hops_ list
    double weight;
  };
  // One flow crossing a link: `hop` is the link's index on the flow's route, so that a
  // swap-remove can fix the moved flow's position; `weight` copies that hop's, so the filling
  // reads a link's flows without visiting their hop records.
  struct LinkEntry {
    uint32_t flow;
    uint32_t hop;
    double weight;
  };
  struct LinkState {
    std::vector<LinkEntry> flows;
    double capacity = 0;
    // The most its flows could ever send through it: the sum of weight x (the flow's rate alone,
    // leaving this link out). Below capacity the link can never limit any of them.
    double demand = 0;
    // The first of the flows whose bottleneck this link is, linked through their slots: what a
    // change to the link can move, without reading every flow that crosses it.
    uint32_t limited = kNone;
  };
  // What a solve checks of every link on a flow's route before it reads the link's record, 12
  // bytes a link where the record spans cache lines. `slack` caches slack(link), updated
  // whenever the link's flows or capacity change.
  struct LinkTag {
    uint32_t mark = 0;   // link epoch of the last solve round that visited this link
    uint32_t slot = 0;   // while marked: the link's index in comp_links_ (and fill_)
    bool slack = false;  // whether the link can limit none of its flows
    bool dirty = false;  // changed since the last solve
  };
  // Water-filling scratch of one link of the round, by its index in comp_links_: freezing a flow
  // charges each of its links here, in a small dense array, rather than in the link's record.
  struct LinkFill {
    double residual = 0;  // capacity left
    double unfrozen_weight = 0;
    double frozen_share = 0;  // the rate its filling froze flows at; infinite if none
    uint32_t unfrozen = 0;    // flows not yet frozen
  };
  // A link that can limit none of its flows, whatever else happens: max-min fairness does not
  // depend on it, so solves neither fill it nor cross it to reach other flows. Either its flows
  // could never fill it, or it carries one flow whose tightest link is another: that one bounds
  // the flow at least as tightly (a flow standing for many alike connections crosses many such
  // links, each as tight as its tightest).
  bool slack(const LinkState& link, LinkId l) const {
    return link.demand < link.capacity * (1 - 1e-9) ||
           (link.flows.size() == 1 && slots_[link.flows.front().flow].tightest != l);
  }
  // What flow f could ever ask of `link` (one of its hops), per unit of weight.
  double demand_of(const FlowSlot& slot, LinkId link) const {
    return link == slot.tightest ? slot.alone_second : slot.alone;
  }

  FlowId allocate_flow();
  Hop* hops(FlowId f) { return hops_.data() + share_[f].hop_begin; }
  const Hop* hops(FlowId f) const { return hops_.data() + share_[f].hop_begin; }
  void reserve_hops(FlowId f, std::size_t num_hops);
  void set_alone_rates(FlowId f);
  void attach(FlowId f);
  // Takes the flow off its links, marking them for the next solve when `mark` is set, and frees
  // its slot.
  void detach(FlowId f, bool mark);
  void mark_dirty(LinkId l);
  // Recomputes whether link l is slack; a link that turns tight joins its flows' lists of
  // binding hops (one that turns slack stays listed, and is skipped, until the list is compacted).
  void update_slack(LinkId l);
  // Flow f's hops whose links can bind, in hop order.
  const std::vector<uint32_t>& binding_hops(FlowId f);
  // Moves flow f to the list of the flows `l` limits (kNone: to none).
  void set_bottleneck(FlowId f, LinkId l);

  // A solve re-solves a set of flows (comp_flows_, marked with epoch_) over their links that can
  // bind (comp_links_, marked with link_epoch_); flows outside the set keep their rates.
  bool in_set(FlowId f) const { return share_[f].mark == epoch_; }
  void add_to_set(FlowId f);
  void next_epochs();
  void next_link_epoch();
  // Adds flow f's links that can bind and are not yet in comp_links_, and lists all its links
  // that can bind in fill_hops_.
  void add_binding_links(FlowId f);
  // Marks link l as the next of comp_links_.
  void add_link_to_set(LinkTag& tag, LinkId l);
  // The whole connected component of the changed links (the non-incremental solve).
  void collect_component();
  // The incremental seed: new flows, and flows whose bottleneck is a changed link.
  void seed_from_dirty_links();
  // Asks `progress` about the set's flows from index `from` on, takes out those done, and moves
  // `from` past the rest.
  void advance_set(std::size_t& from, Progress& progress);
  void collect_links();
  // The filling's start: each link's residual capacity once the fixed flows are charged, and the
  // heap of its fair shares (unordered).
  void start_fill();
  void water_fill();
  // Adds the fixed flows the last filling invalidated: above a share it froze on a shared link,
  // or whose bottleneck is no longer full or no longer theirs. Returns whether the set grew.
  bool grow_set();
  // Takes the solved rates that moved, listing them in changed_.
  void commit_rates();

  std::vector<FlowSlot> slots_;   // by flow id
  std::vector<FlowShare> share_;  // by flow id
  std::vector<Hop> hops_;
  uint32_t free_head_ = kNone;
  std::size_t num_flows_ = 0;

  std::vector<LinkState> links_;
  std::vector<LinkTag> tags_;  // by link
  std::vector<LinkId> dirty_links_;
  std::vector<FlowId> new_flows_;  // added since the last solve (some may be gone again)
  bool incremental_ = true;
  uint32_t epoch_ = 0;
  uint32_t link_epoch_ = 0;

  // Solve scratch, kept to avoid reallocating.
  std::vector<FlowId> comp_flows_;
  std::vector<LinkId> comp_links_;
  std::vector<LinkFill> fill_;  // by index in comp_links_
  // Each set flow's links that can bind, by index in comp_links_, with its weight on each: what
  // freezing it charges, without walking its other hops (a flow standing for thousands of hashed
  // connections crosses tens of thousands of links, most of them slack).
  struct FillHop {
    uint32_t slot;
    double weight;
  };
  std::vector<FillHop> fill_hops_;
  // By flow: the indices of its hops whose links can bind (not slack), and perhaps some whose
  // links have turned slack since. A flow standing for thousands of hashed connections crosses
  // tens of thousands of links, a few percent of them tight, and every solve that takes it in
  // reads this list rather than all its hops. Kept across slot reuse for its capacity.
  std::vector<std::vector<uint32_t>> binding_hops_;
  std::vector<FlowId> done_;
  std::vector<FlowId> grown_;
  std::vector<FlowId> changed_;
  std::vector<FlowId> finished_;
  // A link in the filling's heap: its fair share's bits (shares are never negative, so their
  // bits order like their values), its id (which breaks ties) and its index in comp_links_, in
  // one integer that compares without branches.
  using FillKey = unsigned __int128;
  static FillKey fill_key(double share, LinkId link, uint32_t slot) {
    const auto bits = std::bit_cast<uint64_t>(share + 0.0);  // + 0.0: -0.0 sorts as 0.0
    return static_cast<FillKey>(bits) << 64 | static_cast<FillKey>(link) << 32 | slot;
  }
  std::vector<FillKey> heap_;

  uint64_t solves_ = 0;
  uint64_t solved_flows_ = 0;
  uint64_t fill_rounds_ = 0;
  uint64_t filled_links_ = 0;
};

}  // namespace cs::net
