#include "sim/net/analytical_network.h"

#include <utility>

namespace cs::net {

void count_message(TrafficStats& stats, const Route* route, Bytes bytes) {
  ++stats.messages;
  if (route == nullptr) return;
  const auto cls = static_cast<std::size_t>(route->link_class);
  stats.bytes_by_class[cls] += bytes;
  ++stats.messages_by_class[cls];
}

void AnalyticalNetwork::send(VertexId src, VertexId dst, Bytes bytes, Done done) {
  if (src == dst) {
    count_message(stats_, nullptr, bytes);
    if (done) sim_.schedule_at(sim_.now(), std::move(done));
    return;
  }
  const Route& route = routing_.route(src, dst);
  count_message(stats_, &route, bytes);
  Time delay = route.latency;
  if (bytes > 0) delay += transfer_time(bytes, route.bottleneck);
  if (done) sim_.schedule_in(delay, std::move(done));
}

void IdealNetwork::send(VertexId src, VertexId dst, Bytes bytes, Done done) {
  count_message(stats_, src == dst ? nullptr : &routing_.route(src, dst), bytes);
  if (done) sim_.schedule_at(sim_.now(), std::move(done));
}

}  // namespace cs::net
