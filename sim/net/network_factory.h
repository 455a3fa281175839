// Chooses a transfer model by name: congestion-aware flows (default), analytical, or ideal.
#pragma once

#include <memory>
#include <string_view>

#include "sim/core/simulator.h"
#include "sim/net/network.h"
#include "sim/net/routing.h"
#include "sim/net/topology.h"

namespace cs::net {

enum class NetworkMode { kCongestionAware, kAnalytical, kIdeal };

// Accepts "congestion_aware", "analytical" or "ideal"; throws std::invalid_argument otherwise.
NetworkMode parse_network_mode(std::string_view text);
std::string_view to_string(NetworkMode mode);

// What a network model takes beyond its mode: the effects that act inside it.
struct NetworkOptions {
  // The analytical model queues traffic across an oversubscribed tier at its trunks (trunks.h).
  bool oversubscribed_trunks = true;
  // On a hashing fabric, the analytical model queues traffic at each link of its hashed paths.
  bool hashed_paths = true;
  bool operator==(const NetworkOptions&) const = default;
};

// `sim`, `topology` and `routing` must outlive the returned network.
std::unique_ptr<Network> make_network(NetworkMode mode, Simulator& sim, const Topology& topology,
                                      Routing& routing, const NetworkOptions& options = {});

}  // namespace cs::net
