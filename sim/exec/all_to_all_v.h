// The transfers of an expert-parallel all-to-all-v: who sends how many bytes to whom.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/coll/schedule.h"
#include "sim/compute/gpu_profile.h"
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
// NCCL's all-to-all of the permuted copies (not v.deduplicated): member s sends bytes x share[d]
// to every other member d, each expert copy on its own. DeepEP (v.deduplicated) sends a token's
// hidden state once per GPU and once per server: member s sends each other server N its tokens
// once, token bytes x P(N), to the member of N with its own local index (the same rail; modulo
// N's member count where N holds fewer), which forwards token bytes x P(d) to each member d of N
// over NVLink, as s does to the members of its own server. P(d) = 1 - (1 - share[d])^top_k, the
// chance that a token's top_k experts (drawn by the shares) include one on d, and P(N) the same
// for server N's share; with max_nodes > 0 (DeepSeek-V3's node-limited routing) the P(N) are
// scaled down to sum to at most max_nodes, and each server's P(d) with them. Reversed (combine),
// every edge runs the other way.
std::vector<net::FluidEdge> all_to_all_v_edges(const workload::AllToAllV& v, Bytes bytes,
                                               std::span<const EpMember> members);

// The share of the wire model's rate a library's kernels reach, over NVLink and the network
// (gpu.proto deepep_nvlink_share, deepep_network_share); 1: NCCL's own.
struct KernelShares {
  double nvlink = 1.0;
  double network = 1.0;
};

// Puts `edges` on the wire as NCCL's point-to-point traffic meets it (`wire`, the plan NCCL's
// model gives the op): every edge's bytes times the protocol's byte_factor, and divided by the
// NVLink payload efficiency between GPUs of one server (H100: 20.6 of 25 GB/s per link) or by the
// network transport's share of the NIC rate between servers (96%), each times `shares` for a
// library (DeepEP) that reaches less.
void apply_wire_model(std::vector<net::FluidEdge>& edges, const coll::WireModel& wire,
                      const net::Topology& topology, KernelShares shares = {});

// DeepEP's shares on `gpu`'s servers; 1 where the profile has no figure.
KernelShares deepep_shares(const compute::GpuProfile& gpu);

// What a library's all-to-all takes beyond its bytes: a part per call, and a part per token it
// routes and peer it exchanges with (gpu.proto deepep_call_us, deepep_ns_per_token_peer).
struct TokenCost {
  double call_us = 0;
  double ns_per_token_peer = 0;
  Time of(int64_t tokens, int32_t peers) const;
};

// DeepEP's token cost on `gpu`; 0 where the profile has no figure.
TokenCost deepep_token_cost(const compute::GpuProfile& gpu);

// The peers a DeepEP kernel of `members`' first exchanges with: the other members of its server
// (or NVLink domain) over NVLink, and one member of each other server over the network.
int32_t deepep_peers(std::span<const EpMember> members);

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
