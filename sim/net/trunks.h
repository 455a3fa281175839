// The trunks of a tiered fabric's oversubscribed switch groups, as pooled ports for fast models.
#pragma once

#include <cstdint>
#include <vector>

#include "proto/topology.pb.h"
#include "sim/core/units.h"
#include "sim/net/topology.h"

namespace cs::net {

// A switch group (a tier's switches of one group, e.g. a pod's cluster switches) whose links up
// carry less than its links down is oversubscribed: traffic that leaves it, or enters it from
// above, shares its up-links, or the down-links into it, which adaptive routing and ECMP spread
// it over. Each such group has two trunks, out and in; a trunk's bandwidth is its links' sum.
// Groups with full bisection have none: their endpoints bind first.
struct Trunks {
  std::vector<int32_t> of_link;      // per link: its trunk, or -1
  std::vector<Bandwidth> bandwidth;  // per trunk

  bool empty() const { return bandwidth.empty(); }
  int32_t trunk(LinkId link) const { return empty() ? -1 : of_link[link]; }
};

// The trunks of `topology`'s oversubscribed groups (none for graphs without tiers and groups).
Trunks oversubscribed_trunks(const Topology& topology);

// An oversubscribed tier as a topology description gives it, for estimates that build no graph:
// the GPUs (in rank order) under each of its switch groups, and its ratio of links down to up.
struct OversubscribedDomain {
  int64_t gpus = 0;
  double ratio = 1;
};
// `description`'s oversubscribed tiers, lowest first (none for explicit graphs).
std::vector<OversubscribedDomain> oversubscribed_domains(const clustersim::Topology& description);

// A tier of a fabric that hashes each connection onto its paths (static or multi-flow ECMP), as a
// topology description gives it: the GPUs (in rank order) under each of its groups, the links up
// out of each group, over which connections leaving it are hashed, and the ratio of the group's
// NIC bandwidth to those links' (its oversubscription).
struct HashedTier {
  int64_t gpus = 0;
  int64_t uplinks = 0;
  double ratio = 1;
};
// `description`'s tiers that have a tier above them, lowest first, where its load balancing
// hashes paths; none for adaptive routing and explicit graphs.
std::vector<HashedTier> hashed_tiers(const clustersim::Topology& description);

// Every tier as a route between two servers sees it: the GPUs (in rank order) under each of its
// groups, and the latency of a route whose ends share a group of this tier and none below (up
// from one GPU through its NIC to a switch of the tier and down to the other).
struct TierSpan {
  int64_t gpus = 0;
  double route_latency_s = 0;
};
// `description`'s tiers, lowest first (none for explicit graphs).
std::vector<TierSpan> tier_spans(const clustersim::Topology& description);

}  // namespace cs::net
