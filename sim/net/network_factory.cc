#include "sim/net/network_factory.h"

#include <stdexcept>
#include <string>

#include "sim/net/analytical_network.h"
#include "sim/net/flow_network.h"

namespace cs::net {

NetworkMode parse_network_mode(std::string_view text) {
  if (text == "congestion_aware") return NetworkMode::kCongestionAware;
  if (text == "analytical") return NetworkMode::kAnalytical;
  if (text == "ideal") return NetworkMode::kIdeal;
  throw std::invalid_argument("unknown network mode '" + std::string(text) +
                              "' (expected congestion_aware, analytical or ideal)");
}

std::string_view to_string(NetworkMode mode) {
  switch (mode) {
    case NetworkMode::kCongestionAware:
      return "congestion_aware";
    case NetworkMode::kAnalytical:
      return "analytical";
    case NetworkMode::kIdeal:
      return "ideal";
  }
  return "unknown";
}

std::unique_ptr<Network> make_network(NetworkMode mode, Simulator& sim, const Topology& topology,
                                      Routing& routing, const NetworkOptions& options) {
  switch (mode) {
    case NetworkMode::kCongestionAware:
      return std::make_unique<FlowNetwork>(sim, topology, routing);
    case NetworkMode::kAnalytical:
      return std::make_unique<AnalyticalNetwork>(sim, routing, options.oversubscribed_trunks,
                                                 options.hashed_paths);
    case NetworkMode::kIdeal:
      return std::make_unique<IdealNetwork>(sim, routing);
  }
  throw std::invalid_argument("unknown network mode");
}

}  // namespace cs::net
