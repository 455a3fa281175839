#include "sim/net/analytical_network.h"

#include <utility>

namespace cs::net {

void AnalyticalNetwork::send(VertexId src, VertexId dst, Bytes bytes, Done done) {
  if (src == dst) {
    stats_.count(nullptr, bytes);
    if (done) sim_.schedule_at(sim_.now(), std::move(done));
    return;
  }
  const Route& route = routing_.route(src, dst);
  stats_.count(&route, bytes);
  Time delay = route.latency;
  if (bytes > 0) delay += transfer_time(bytes, route.bottleneck);
  if (done) sim_.schedule_in(delay, std::move(done));
}

void IdealNetwork::send(VertexId src, VertexId dst, Bytes bytes, Done done) {
  stats_.count(src == dst ? nullptr : &routing_.route(src, dst), bytes);
  if (done) sim_.schedule_at(sim_.now(), std::move(done));
}

}  // namespace cs::net
