#include "sim/exec/all_to_all_v.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

namespace cs::exec {
namespace {

// Servers in order of first appearance, each with its members (EP indices).
std::vector<std::vector<std::size_t>> servers_of(std::span<const EpMember> members) {
  std::map<int32_t, std::size_t> index;
  std::vector<std::vector<std::size_t>> servers;
  for (std::size_t m = 0; m < members.size(); ++m) {
    const auto [it, fresh] = index.try_emplace(members[m].node, servers.size());
    if (fresh) servers.emplace_back();
    servers[it->second].push_back(m);
  }
  return servers;
}

// The chance that a token's top_k experts, drawn by the shares, include one among `share`'s
// members: 1 - (1 - their share)^top_k.
double reach_of(const workload::AllToAllV& v, double share) {
  return 1.0 - std::pow(1.0 - std::min(share, 1.0), v.top_k);
}

// Every server's share of the expert copies.
std::vector<double> server_shares(const workload::AllToAllV& v,
                                  const std::vector<std::vector<std::size_t>>& servers) {
  std::vector<double> shares(servers.size(), 0.0);
  for (std::size_t n = 0; n < servers.size(); ++n)
    for (const std::size_t m : servers[n]) shares[n] += v.share[m];
  return shares;
}

// P(N) for every server, as all_to_all_v_edges() defines it.
std::vector<double> server_reach(const workload::AllToAllV& v, std::span<const double> shares) {
  std::vector<double> reach(shares.size());
  double sum = 0;
  for (std::size_t n = 0; n < shares.size(); ++n) {
    reach[n] = reach_of(v, shares[n]);
    sum += reach[n];
  }
  if (v.max_nodes > 0 && sum > v.max_nodes)
    for (double& r : reach) r *= v.max_nodes / sum;
  return reach;
}

}  // namespace

std::vector<net::FluidEdge> all_to_all_v_edges(const workload::AllToAllV& v, Bytes bytes,
                                               std::span<const EpMember> members) {
  const std::size_t n = members.size();
  const double size = static_cast<double>(bytes);
  // Bytes by (sender, receiver) member: a relay's forwards and its own copies to one member
  // travel as one edge.
  std::vector<double> matrix(n * n, 0.0);
  auto add = [&](std::size_t from, std::size_t to, double b) {
    if (from != to && b > 0) matrix[from * n + to] += b;
  };
  auto edges = [&] {
    std::vector<net::FluidEdge> out;
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t z = 0; z < n; ++z) {
        const double b = matrix[a * n + z];
        if (b <= 0) continue;
        const net::VertexId from = members[a].gpu, to = members[z].gpu;
        out.push_back(v.reverse ? net::FluidEdge{to, from, b} : net::FluidEdge{from, to, b});
      }
    return out;
  };
  const auto servers = servers_of(members);
  if (!v.deduplicated) {
    for (std::size_t s = 0; s < n; ++s)
      for (std::size_t d = 0; d < n; ++d) add(s, d, size * v.share[d]);
    return edges();
  }
  const std::vector<double> shares = server_shares(v, servers);
  const std::vector<double> reach = server_reach(v, shares);
  const double token_bytes = size / std::max(v.copies_per_token, 1e-12);
  // What a token sends member d of server k: the chance that d holds one of its experts, scaled
  // as the server's reach is under node-limited routing.
  std::vector<double> to_member(n);
  for (std::size_t k = 0; k < servers.size(); ++k) {
    const double unlimited = reach_of(v, shares[k]);
    const double scale = unlimited > 0 ? reach[k] / unlimited : 0;
    for (const std::size_t d : servers[k])
      to_member[d] = token_bytes * reach_of(v, v.share[d]) * scale;
  }
  std::vector<std::size_t> place(n);  // each member's place on its server
  for (const auto& on : servers)
    for (std::size_t i = 0; i < on.size(); ++i) place[on[i]] = i;
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t k = 0; k < servers.size(); ++k) {
      const auto& on = servers[k];
      if (members[on.front()].node == members[s].node) {
        for (const std::size_t d : on) add(s, d, to_member[d]);
        continue;
      }
      // The member of server n on s's rail: the same place among its server's members. Where n
      // holds fewer of the group's members than s's server (a group straddling two racks), the
      // places wrap, so each of n's members relays for an equal share of the senders rather
      // than its last member for all the places it lacks.
      const std::size_t relay = on[place[s] % on.size()];
      add(s, relay, token_bytes * reach[k]);
      for (const std::size_t d : on) add(relay, d, to_member[d]);
    }
  }
  return edges();
}

void apply_wire_model(std::vector<net::FluidEdge>& edges, const coll::WireModel& wire,
                      const net::Topology& topology, KernelShares shares) {
  const double nvlink = wire.nvlink_efficiency * shares.nvlink;
  const double network = wire.net_efficiency * shares.network;
  for (auto& e : edges) {
    const bool same_server = topology.vertex(e.src).node == topology.vertex(e.dst).node;
    e.wire_bytes *= wire.byte_factor / (same_server ? nvlink : network);
  }
}

KernelShares deepep_shares(const compute::GpuProfile& gpu) {
  return {gpu.has_deepep_nvlink_share() ? gpu.deepep_nvlink_share() : 1.0,
          gpu.has_deepep_network_share() ? gpu.deepep_network_share() : 1.0};
}

Time TokenCost::of(int64_t tokens, int32_t peers) const {
  return Time::from_us(call_us) +
         Time::from_seconds(static_cast<double>(tokens) * peers * ns_per_token_peer * 1e-9);
}

TokenCost deepep_token_cost(const compute::GpuProfile& gpu) {
  return {gpu.deepep_call_us(), gpu.deepep_ns_per_token_peer()};
}

int32_t deepep_peers(std::span<const EpMember> members) {
  if (members.empty()) return 0;
  const auto servers = servers_of(members);  // the first member's server comes first
  return static_cast<int32_t>(servers.front().size() - 1 + servers.size() - 1);
}

std::vector<EndpointBandwidth> endpoint_bandwidth(const net::Topology& topology) {
  std::vector<EndpointBandwidth> bw(topology.num_vertices());
  std::vector<double> nic_out(topology.num_vertices(), 0.0);
  for (net::LinkId l = 0; l < topology.num_links(); ++l) {
    const auto from = topology.link_source(l);
    const auto& link = topology.link(l);
    const bool gpu = topology.vertex(from).kind == net::VertexKind::kGpu;
    if (gpu && link.link_class == net::LinkClass::kNvlink)
      bw[from].nvlink += link.bandwidth.in_bytes_per_s();
    if (topology.vertex(from).kind == net::VertexKind::kNic &&
        link.link_class == net::LinkClass::kNetwork)
      nic_out[from] += link.bandwidth.in_bytes_per_s();
  }
  for (net::LinkId l = 0; l < topology.num_links(); ++l) {
    const auto from = topology.link_source(l), to = topology.link_target(l);
    if (topology.vertex(from).kind == net::VertexKind::kGpu &&
        topology.vertex(to).kind == net::VertexKind::kNic)
      bw[from].network += std::min(nic_out[to], topology.link(l).bandwidth.in_bytes_per_s());
  }
  return bw;
}

double endpoint_seconds(std::span<const net::FluidEdge> edges, const net::Topology& topology,
                        std::span<const EndpointBandwidth> bandwidth) {
  // Bytes by vertex: sent and received within the server, sent and received across servers.
  std::vector<std::array<double, 4>> bytes(bandwidth.size(), {0, 0, 0, 0});
  for (const auto& e : edges) {
    const int across = topology.vertex(e.src).node == topology.vertex(e.dst).node ? 0 : 2;
    bytes[e.src][across] += e.wire_bytes;
    bytes[e.dst][across + 1] += e.wire_bytes;
  }
  double seconds = 0;
  for (std::size_t v = 0; v < bytes.size(); ++v) {
    const auto& b = bytes[v];
    const auto& c = bandwidth[v];
    if (c.nvlink > 0) seconds = std::max(seconds, std::max(b[0], b[1]) / c.nvlink);
    if (c.network > 0) seconds = std::max(seconds, std::max(b[2], b[3]) / c.network);
  }
  return seconds;
}

}  // namespace cs::exec
