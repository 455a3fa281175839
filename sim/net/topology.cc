#include "sim/net/topology.h"

namespace cs::net {

VertexId Topology::add_vertex(const VertexInfo& info) {
  const auto v = static_cast<VertexId>(boost::add_vertex(info, graph_));
  if (info.kind == VertexKind::kGpu) {
    graph_[v].index = static_cast<int32_t>(gpus_.size());
    gpus_.push_back(v);
  }
  if (info.kind == VertexKind::kNvSwitch) ++nvswitches_;
  return v;
}

LinkId Topology::add_link(VertexId from, VertexId to, Bandwidth bw, Time latency, LinkClass cls) {
  const auto id = static_cast<LinkId>(links_.size());
  auto [edge, added] = boost::add_edge(from, to, LinkInfo{id, bw, latency, cls}, graph_);
  (void)added;  // vecS out-edge lists allow parallel links, which model bundles of cables
  links_.push_back(edge);
  return id;
}

LinkId Topology::add_duplex_link(VertexId from, VertexId to, Bandwidth bw, Time latency,
                                 LinkClass cls) {
  const LinkId forward = add_link(from, to, bw, latency, cls);
  add_link(to, from, bw, latency, cls);
  return forward;
}

void Topology::scale_link_bandwidth(LinkId id, double factor) {
  Bandwidth& bw = graph_[links_.at(id)].bandwidth;
  bw = Bandwidth::bytes_per_s(bw.in_bytes_per_s() * factor);
}

}  // namespace cs::net
