// What a built topology holds, counted for tests against reference architectures' tables.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/net/topology.h"

namespace cs::testing_support {

// Vertices of `kind` in `tier` (GPUs, NICs and NVSwitches sit in tier -1, switches from 0 up).
inline std::size_t count_vertices(const net::Topology& t, net::VertexKind kind, int32_t tier = -1) {
  std::size_t n = 0;
  for (net::VertexId v = 0; v < t.num_vertices(); ++v)
    n += t.vertex(v).kind == kind && t.vertex(v).tier == tier;
  return n;
}

// Bandwidth of all links from tier `from` up to tier `from + 1` (from = -1: NICs to leaves).
inline double uplink_bytes_per_s(const net::Topology& t, int32_t from) {
  double sum = 0;
  for (net::LinkId id = 0; id < t.num_links(); ++id) {
    const net::VertexInfo& a = t.vertex(t.link_source(id));
    const net::VertexInfo& b = t.vertex(t.link_target(id));
    const bool a_is =
        from < 0 ? a.kind == net::VertexKind::kNic : a.kind == net::VertexKind::kSwitch;
    if (a_is && a.tier == (from < 0 ? -1 : from) && b.kind == net::VertexKind::kSwitch &&
        b.tier == from + 1)
      sum += t.link(id).bandwidth.in_bytes_per_s();
  }
  return sum;
}

}  // namespace cs::testing_support
