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
  std::vector<net::FluidEdge> edges;
  const double size = static_cast<double>(bytes);
  auto add = [&](std::size_t from, std::size_t to, double b) {
    if (from == to || b <= 0) return;
    const net::VertexId a = members[from].gpu, z = members[to].gpu;
    edges.push_back(v.reverse ? net::FluidEdge{z, a, b} : net::FluidEdge{a, z, b});
  };
  const auto servers = servers_of(members);
  if (v.max_nodes <= 0 || servers.size() <= 1) {
    for (std::size_t s = 0; s < members.size(); ++s)
      for (std::size_t d = 0; d < members.size(); ++d) add(s, d, size * v.share[d]);
    return edges;
  }
  const std::vector<double> reach = server_reach(v, servers);
  const double token_bytes = size / std::max(v.copies_per_token, 1e-12);
  std::vector<std::size_t> place(members.size());  // each member's place on its server
  for (const auto& on : servers)
    for (std::size_t i = 0; i < on.size(); ++i) place[on[i]] = i;
  for (std::size_t s = 0; s < members.size(); ++s) {
    for (std::size_t n = 0; n < servers.size(); ++n) {
      const auto& on = servers[n];
      if (members[on.front()].node == members[s].node) {
        for (const std::size_t d : on) add(s, d, size * v.share[d]);
        continue;
      }
      // The member of server n on s's rail: the same place among its server's members.
      const std::size_t relay = on[std::min(place[s], on.size() - 1)];
      add(s, relay, token_bytes * reach[n]);
      for (const std::size_t d : on) add(relay, d, size * v.share[d]);
    }
  }
  return edges;
}

}  // namespace cs::exec
