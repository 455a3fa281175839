// The transfers of an expert-parallel all-to-all-v: who sends how many bytes to whom.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/coll/schedule.h"
#include "sim/core/units.h"
#include "sim/net/network.h"
#include "sim/net/topology.h"
#include "sim/workload/program.h"

namespace cs::exec {

// One member of the EP group: its GPU and its server.
struct EpMember {
  net::VertexId gpu = 0;
  int32_t node = 0;
};

// Edges of `v` among `members` (in EP order) for a collective whose members each send `bytes`.
// Without a node limit, member s sends bytes x share[d] to every other member d. With
// max_nodes > 0 (DeepSeek-V3's node-limited routing, deduplicated as DeepEP does), a token
// crosses the network once per server that holds one of its experts: member s sends each other
// server N its tokens' hidden states once, token bytes x P(N), to the member of N with its own
// local index (the same rail; modulo N's member count where N holds fewer), which forwards bytes x
// share[d] to each member d of N over NVLink. P(N) = 1 - (1 - Q_N)^top_k, the chance that a token's
// top_k experts (drawn by the shares, Q_N = server N's) include one on N, scaled down so that P
// sums to at most max_nodes over the servers. Reversed (combine), every edge runs the other way.
std::vector<net::FluidEdge> all_to_all_v_edges(const workload::AllToAllV& v, Bytes bytes,
                                               std::span<const EpMember> members);

// Puts `edges` on the wire as NCCL's point-to-point traffic meets it (`wire`, the plan NCCL's
// model gives the op): every edge's bytes times the protocol's byte_factor, and divided by the
// NVLink payload efficiency between GPUs of one server (H100: 20.6 of 25 GB/s per link) or by the
// network transport's share of the NIC rate between servers (96%).
void apply_wire_model(std::vector<net::FluidEdge>& edges, const coll::WireModel& wire,
                      const net::Topology& topology);

// What each vertex can push into and take from each fabric: for a GPU, the bandwidth of its
// NVLink links (to the NVSwitches) and of its NICs' network links. Indexed by VertexId.
struct EndpointBandwidth {
  double nvlink = 0;   // bytes/s
  double network = 0;  // bytes/s
};
std::vector<EndpointBandwidth> endpoint_bandwidth(const net::Topology& topology);

// The time `edges` need at the busiest endpoint: the largest of every GPU's bytes sent and
// received within its server over its NVLink bandwidth, and across servers over its NICs'. A
// lower bound on the coupled transfer's time (the switches inside the fabric are left out), used
// to tell which fabric a wire overhead slows.
double endpoint_seconds(std::span<const net::FluidEdge> edges, const net::Topology& topology,
                        std::span<const EndpointBandwidth> bandwidth);

}  // namespace cs::exec
