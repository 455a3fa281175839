// The cluster as a directed Boost.Graph of GPUs, NVSwitches, NICs and switches joined by links.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/units.h"

namespace cs::net {

using VertexId = uint32_t;
using LinkId = uint32_t;

enum class VertexKind : uint8_t { kGpu, kNvSwitch, kNic, kSwitch };
// Which fabric a link belongs to; reports split communication volume by it.
enum class LinkClass : uint8_t { kNvlink, kPcie, kNetwork };

struct VertexInfo {
  VertexKind kind = VertexKind::kGpu;
  int32_t tier = -1;   // network tier of a switch (0 = leaf), -1 otherwise
  int32_t node = -1;   // server index of a GPU, NVSwitch or NIC, -1 for network switches
  int32_t index = -1;  // GPU index for GPUs, running index within its kind otherwise
  // Set only by the tiered builder, and what lets routing take its O(path) up/down fast path:
  // a switch's group within its tier, the server of a GPU, NVSwitch or NIC. -1 (explicit
  // graphs) means routing falls back to generic shortest paths.
  int32_t group = -1;
};

// How messages use equal-cost paths (proto/topology.proto LoadBalancing says why each exists).
enum class LoadBalancingMode : uint8_t { kStaticEcmp, kMultiFlowEcmp, kAdaptive };
struct LoadBalancing {
  LoadBalancingMode mode = LoadBalancingMode::kStaticEcmp;
  int32_t flows_per_message = 1;  // kMultiFlowEcmp only
};

struct LinkInfo {
  LinkId id = 0;
  Bandwidth bandwidth;
  Time latency;
  LinkClass link_class = LinkClass::kNetwork;
};

using Graph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, VertexInfo, LinkInfo>;

// Owns the graph and indexes its GPUs and links by dense ids.
class Topology {
 public:
  VertexId add_vertex(const VertexInfo& info);
  LinkId add_link(VertexId from, VertexId to, Bandwidth bw, Time latency, LinkClass cls);
  // Adds both directions with the same properties; returns the id of from->to (to->from is +1).
  LinkId add_duplex_link(VertexId from, VertexId to, Bandwidth bw, Time latency, LinkClass cls);

  // Multiplies one link's bandwidth by `factor` (a degraded cable or a slow NIC); call before
  // routing or a network reads the topology.
  void scale_link_bandwidth(LinkId id, double factor);

  const Graph& graph() const { return graph_; }
  std::size_t num_vertices() const { return boost::num_vertices(graph_); }
  std::size_t num_links() const { return links_.size(); }
  std::size_t num_gpus() const { return gpus_.size(); }

  // Whether GPUs share NVSwitches (NVLink SHARP needs one): false for one-GPU servers and
  // direct NVLink meshes.
  bool has_nvswitch() const { return nvswitches_ > 0; }

  // The vertex of GPU `index` (0-based, in rank order: GPUs of server 0 first).
  VertexId gpu(int32_t index) const { return gpus_.at(static_cast<std::size_t>(index)); }
  const VertexInfo& vertex(VertexId v) const { return graph_[v]; }
  const LinkInfo& link(LinkId id) const { return graph_[links_[id]]; }
  VertexId link_source(LinkId id) const {
    return static_cast<VertexId>(boost::source(links_[id], graph_));
  }
  VertexId link_target(LinkId id) const {
    return static_cast<VertexId>(boost::target(links_[id], graph_));
  }
  // Whether the link touches a GPU or a NIC: one server's own port, which every route to or from
  // that GPU or NIC must take, whatever the routing.
  bool is_endpoint_link(LinkId id) const {
    const auto own = [&](VertexId v) {
      return vertex(v).kind == VertexKind::kGpu || vertex(v).kind == VertexKind::kNic;
    };
    return own(link_source(id)) || own(link_target(id));
  }

  std::string name;
  std::string gpu_type;
  LoadBalancing load_balancing;
  // Each NIC's data rate in Gb/s, as NCCL's model reads it (tiered topologies; 0: unknown, the
  // GPU profile's nic_bandwidth_gbits stands).
  double nic_gbits = 0;
  // NodeFabric nvlink_bandwidth_gbytes, GB/s per direction: each GPU's into the NVSwitch, or each
  // pair's in an NVLink mesh (tiered topologies; 0: unknown).
  double nvlink_gbytes = 0;
  // Channel pairs NCCL runs over each NIC where the topology gives its channel count
  // (NodeFabric nccl_channels; 0: the model's rule), and whether the NICs sit behind the CPU
  // (NodeFabric nic_behind_cpu).
  int32_t nccl_pairs_per_nic = 0;
  bool nic_behind_cpu = false;
  // NodeFabric nic_transport_efficiency (0: NCCL over InfiniBand's).
  double nic_transport_efficiency = 0;

 private:
  Graph graph_;
  std::vector<Graph::edge_descriptor> links_;
  std::vector<VertexId> gpus_;
  int64_t nvswitches_ = 0;
};

}  // namespace cs::net
