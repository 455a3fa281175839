#include "sim/exec/all_to_all_v.h"

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

// P(N) for every server, as all_to_all_v_edges() defines it.
std::vector<double> server_reach(const workload::AllToAllV& v,
                                 const std::vector<std::vector<std::size_t>>& servers) {
  std::vector<double> reach(servers.size());
  double sum = 0;
  for (std::size_t n = 0; n < servers.size(); ++n) {
    double q = 0;
    for (const std::size_t m : servers[n]) q += v.share[m];
    reach[n] = 1.0 - std::pow(1.0 - std::min(q, 1.0), v.top_k);
    sum += reach[n];
  }
  if (sum > v.max_nodes)
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
  if (v.max_nodes <= 0 || servers.size() <= 1) {
    for (std::size_t s = 0; s < n; ++s)
      for (std::size_t d = 0; d < n; ++d) add(s, d, size * v.share[d]);
    return edges();
  }
  const std::vector<double> reach = server_reach(v, servers);
  const double token_bytes = size / std::max(v.copies_per_token, 1e-12);
  std::vector<std::size_t> place(n);  // each member's place on its server
  for (const auto& on : servers)
    for (std::size_t i = 0; i < on.size(); ++i) place[on[i]] = i;
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t k = 0; k < servers.size(); ++k) {
      const auto& on = servers[k];
      if (members[on.front()].node == members[s].node) {
        for (const std::size_t d : on) add(s, d, size * v.share[d]);
        continue;
      }
      // The member of server n on s's rail: the same place among its server's members.
      const std::size_t relay = on[std::min(place[s], on.size() - 1)];
      add(s, relay, token_bytes * reach[k]);
      for (const std::size_t d : on) add(relay, d, size * v.share[d]);
    }
  }
  return edges();
}

double apply_wire_model(std::vector<net::FluidEdge>& edges, const coll::WireModel& wire,
                        const net::Topology& topology) {
  double payload = 0, on_wire = 0;
  for (auto& e : edges) {
    const bool same_server = topology.vertex(e.src).node == topology.vertex(e.dst).node;
    payload += e.wire_bytes;
    e.wire_bytes *= wire.byte_factor / (same_server ? wire.nvlink_efficiency : wire.net_efficiency);
    on_wire += e.wire_bytes;
  }
  return on_wire > 0 ? payload / on_wire : 1.0;
}

}  // namespace cs::exec
