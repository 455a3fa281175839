// The transfers of an expert-parallel all-to-all-v: sizes follow the shares, combine mirrors
// dispatch, NCCL sends every expert copy on its own, and DeepEP a token once per server over the
// network and once per GPU over NVLink.
#include "sim/exec/all_to_all_v.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "sim/net/topology_builder.h"

namespace cs::exec {
namespace {

std::vector<EpMember> members(int servers, int per_server) {
  std::vector<EpMember> m;
  for (int s = 0; s < servers; ++s)
    for (int g = 0; g < per_server; ++g)
      m.push_back({static_cast<net::VertexId>(s * per_server + g), s});
  return m;
}

workload::AllToAllV balanced(int n, int top_k, int max_nodes, bool deepep = true) {
  workload::AllToAllV v;
  v.share.assign(static_cast<std::size_t>(n), 1.0 / n);
  v.top_k = top_k;
  v.copies_per_token = top_k;
  v.max_nodes = max_nodes;
  v.deduplicated = deepep;
  return v;
}

// Bytes by (src, dst) GPU.
std::map<std::pair<net::VertexId, net::VertexId>, double> by_pair(
    const std::vector<net::FluidEdge>& edges) {
  std::map<std::pair<net::VertexId, net::VertexId>, double> out;
  for (const auto& e : edges) out[{e.src, e.dst}] += e.wire_bytes;
  return out;
}

TEST(AllToAllV, SizesFollowTheSharesAndCombineRunsBackwards) {
  workload::AllToAllV v = balanced(4, 2, 0, false);
  v.share = {0.4, 0.3, 0.2, 0.1};
  const auto gpus = members(1, 4);
  const auto dispatch = by_pair(all_to_all_v_edges(v, 1000, gpus));
  EXPECT_EQ(dispatch.size(), 12u);  // every ordered pair, no self-copies
  EXPECT_DOUBLE_EQ((dispatch.at({1, 0})), 400.0);
  EXPECT_DOUBLE_EQ((dispatch.at({0, 3})), 100.0);
  v.reverse = true;
  const auto combine = by_pair(all_to_all_v_edges(v, 1000, gpus));
  for (const auto& [pair, bytes] : dispatch)
    EXPECT_DOUBLE_EQ(combine.at({pair.second, pair.first}), bytes);
}

// 4 servers of 2, top 4 balanced, at most 2 servers per token: each token reaches a server with
// probability 1 - (3/4)^4 = 0.684 before the limit, 4 x 0.684 = 2.73 > 2, so each remote server
// gets 2 / 4 = 0.5 of a token's bytes over the network, once, from the member on its rail.
TEST(AllToAllV, NodeLimitedRoutingCrossesTheNetworkOncePerServer) {
  const auto gpus = members(4, 2);
  const workload::AllToAllV v = balanced(8, 4, 2);
  const Bytes bytes = 4000;  // 4 copies of 1000-byte tokens
  const auto pairs = by_pair(all_to_all_v_edges(v, bytes, gpus));
  // Member 0 (server 0, place 0) to server 1: one 500-byte hop to GPU 2, its rail peer.
  EXPECT_DOUBLE_EQ(pairs.at({0, 2}), 0.5 * 1000);
  EXPECT_EQ(pairs.count({0, 3}), 0u);  // not to the other GPU of server 1
  // GPU 2 forwards to its server-mate 3, for each of the three remote sources on its rail and for
  // itself, a token's bytes once when one of its 4 experts is on GPU 3: 1 - (7/8)^4, scaled by
  // the servers' 0.5 / 0.684.
  const double to_gpu = 1000 * (1 - std::pow(7.0 / 8, 4)) * 0.5 / (1 - std::pow(3.0 / 4, 4));
  EXPECT_NEAR(pairs.at({2, 3}), 4 * to_gpu, 1e-9);
  // Network bytes a GPU sends: 3 servers x 500, against 3 x 684 without the limit.
  double network = 0;
  for (const auto& [pair, b] : pairs)
    if (pair.first == 0 && pair.second / 2 != 0) network += b;
  EXPECT_DOUBLE_EQ(network, 1500.0);
  double unlimited = 0;
  for (const auto& [pair, b] : by_pair(all_to_all_v_edges(balanced(8, 4, 0), bytes, gpus)))
    if (pair.first == 0 && pair.second / 2 != 0) unlimited += b;
  EXPECT_NEAR(unlimited, 3 * 1000 * (1 - std::pow(3.0 / 4, 4)), 1e-9);
}

// NCCL's all-to-all of the permuted copies sends each expert copy straight to its GPU, however
// the routing limits the servers: 8 GPUs, each gets 1/8 of a member's 4000 bytes.
TEST(AllToAllV, NcclSendsEveryExpertCopyToItsGpu) {
  const auto pairs = by_pair(all_to_all_v_edges(balanced(8, 4, 2, false), 4000, members(4, 2)));
  EXPECT_EQ(pairs.size(), 56u);  // every ordered pair: no relays
  EXPECT_DOUBLE_EQ(pairs.at({0, 3}), 500.0);
  EXPECT_DOUBLE_EQ(pairs.at({0, 1}), 500.0);
}

// DeepEP within one server: a token's 8 experts over 8 GPUs reach a GPU with probability
// 1 - (7/8)^8, and it crosses to that GPU once, however many of its experts the GPU holds.
TEST(AllToAllV, DeepEpSendsATokenOncePerGpu) {
  const auto pairs = by_pair(all_to_all_v_edges(balanced(8, 8, 0), 8000, members(1, 8)));
  EXPECT_EQ(pairs.size(), 56u);
  EXPECT_NEAR(pairs.at({0, 5}), 1000 * (1 - std::pow(7.0 / 8, 8)), 1e-9);
  // NCCL's copies: 8000 / 8 = 1000, 1.52x more.
  const auto nccl = by_pair(all_to_all_v_edges(balanced(8, 8, 0, false), 8000, members(1, 8)));
  EXPECT_DOUBLE_EQ(nccl.at({0, 5}), 1000.0);
}

// A group split 6 + 2 over two servers: the six senders of the larger side reach the two members
// of the smaller one through relays at their place modulo 2, three senders each, not five
// through the last member.
TEST(AllToAllV, ASmallerServersMembersShareTheRelayingEvenly) {
  std::vector<EpMember> gpus = members(1, 6);
  gpus.push_back({6, 1});
  gpus.push_back({7, 1});
  const auto pairs = by_pair(all_to_all_v_edges(balanced(8, 4, 1), 8000, gpus));
  std::map<net::VertexId, int> senders;
  for (const auto& [pair, b] : pairs)
    if (pair.first < 6 && pair.second >= 6) ++senders[pair.second];
  EXPECT_EQ(senders[6], 3);
  EXPECT_EQ(senders[7], 3);
  EXPECT_GT(pairs.at({4, 6}), 0);  // place 4 wraps to the smaller side's place 0
}

// Between GPUs of one server bytes pay NVLink's payload efficiency, between servers the
// network transport's share, and both the protocol's byte factor.
TEST(AllToAllV, TheWireModelScalesEachEdgeByItsPath) {
  const net::Topology topo = net::build_topology(net::resolve_topology("dgx-h100"), 16, "dgx-h100");
  std::vector<net::FluidEdge> edges = {{topo.gpu(0), topo.gpu(1), 1000},
                                       {topo.gpu(0), topo.gpu(8), 1000}};
  coll::WireModel wire;
  wire.byte_factor = 1.25;
  wire.nvlink_efficiency = 0.8;
  wire.net_efficiency = 0.96;
  apply_wire_model(edges, wire, topo);
  EXPECT_DOUBLE_EQ(edges[0].wire_bytes, 1000 * 1.25 / 0.8);
  EXPECT_DOUBLE_EQ(edges[1].wire_bytes, 1000 * 1.25 / 0.96);
  // A library that reaches less of each rate (DeepEP's shares) takes longer on each path.
  std::vector<net::FluidEdge> deepep = {{topo.gpu(0), topo.gpu(1), 1000},
                                        {topo.gpu(0), topo.gpu(8), 1000}};
  apply_wire_model(deepep, wire, topo, {0.5, 0.8});
  EXPECT_DOUBLE_EQ(deepep[0].wire_bytes, 1000 * 1.25 / (0.8 * 0.5));
  EXPECT_DOUBLE_EQ(deepep[1].wire_bytes, 1000 * 1.25 / (0.96 * 0.8));
  // An ideal wire changes nothing.
  const auto before = edges;
  apply_wire_model(edges, coll::WireModel{}, topo);
  EXPECT_DOUBLE_EQ(edges[0].wire_bytes, before[0].wire_bytes);
  EXPECT_DOUBLE_EQ(edges[1].wire_bytes, before[1].wire_bytes);
}

// A DGX H100 GPU pushes 450 GB/s into NVLink and 50 GB/s (its 400 Gb/s NIC) into the network;
// the busiest endpoint's time is the larger of its bytes over those.
TEST(AllToAllV, EndpointTimeIsTheBusiestGpusFabric) {
  const net::Topology topo = net::build_topology(net::resolve_topology("dgx-h100"), 16, "dgx-h100");
  const auto bw = endpoint_bandwidth(topo);
  EXPECT_DOUBLE_EQ(bw[topo.gpu(0)].nvlink, 450e9);
  EXPECT_DOUBLE_EQ(bw[topo.gpu(0)].network, 50e9);
  // GPU 0 sends 900 MB to its server-mate (2 ms of NVLink) and 50 MB across (1 ms of NIC); GPU 1
  // receives the 900 MB: 2 ms is the busiest endpoint.
  std::vector<net::FluidEdge> edges = {{topo.gpu(0), topo.gpu(1), 900e6},
                                       {topo.gpu(0), topo.gpu(8), 50e6}};
  EXPECT_DOUBLE_EQ(endpoint_seconds(edges, topo, bw), 2e-3);
  edges[1].wire_bytes = 150e6;  // now the NIC: 3 ms
  EXPECT_DOUBLE_EQ(endpoint_seconds(edges, topo, bw), 3e-3);
}

// A DeepEP call's cost beyond its bytes: its part per call plus its part per token and peer; a
// profile without the figures gives none.
TEST(AllToAllV, DeepEpTokenCostGrowsWithTokensAndPeers) {
  const TokenCost gb200 = deepep_token_cost(compute::load_gpu_profile("gb200"));
  EXPECT_NEAR(gb200.of(4096, 0).as_us(), 95, 1e-6);
  EXPECT_NEAR(gb200.of(4096, 35).as_us(), 95 + 4096 * 35 * 1.24e-3, 1e-5);
  EXPECT_NEAR(gb200.of(2048, 35).as_us(), 95 + 2048 * 35 * 1.24e-3, 1e-5);
  EXPECT_NEAR(deepep_token_cost(compute::load_gpu_profile("b200")).of(4096, 7).as_us(),
              4096 * 7 * 7.5e-3, 1e-5);
  EXPECT_EQ(deepep_token_cost(compute::load_gpu_profile("h800")).of(4096, 63), Time{});
}

// DeepEP's peers: the other GPUs of its server over NVLink, one GPU of each other server.
TEST(AllToAllV, DeepEpPeersAreTheServersGpusAndTheOtherServers) {
  const auto group = [](std::vector<int32_t> nodes) {
    std::vector<EpMember> m;
    for (const int32_t n : nodes) m.push_back({static_cast<net::VertexId>(m.size()), n});
    return m;
  };
  EXPECT_EQ(deepep_peers(group({0, 0, 0, 0, 0, 0, 0, 0})), 7);
  EXPECT_EQ(deepep_peers(group({0, 0, 1, 1, 2, 2})), 1 + 2);
  EXPECT_EQ(deepep_peers(group({3})), 0);
  EXPECT_EQ(deepep_peers({}), 0);
}

}  // namespace
}  // namespace cs::exec
