// Finds the links a degradation names: by their ends, a seeded random share, or a GPU's NICs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/net/topology.h"

namespace cs::net {

// A vertex's name: its kind and its index within that kind ("gpu3", "nic17", "nvswitch0",
// "switch42").
std::string vertex_name(const Topology& topology, VertexId v);

// Every link, both directions and parallel ones, between the two ends of "A-B" (vertex names).
// Throws std::invalid_argument saying why when the text is not "A-B", a vertex does not exist
// or no link joins the two.
std::vector<LinkId> links_named(const Topology& topology, std::string_view name);

// Exactly round(fraction x N) of the N network cables (pairs of adjacent vertices joined by
// network-class links, both directions together), chosen by `seed`; every link of each, in id
// order. The choice ranks cables by a hash of (seed, ends), so a larger fraction degrades a
// superset of a smaller one's cables.
std::vector<LinkId> random_cables(const Topology& topology, double fraction, uint64_t seed);

// The links between GPU `gpu`'s NICs and the switches they plug into, both directions (none on
// a topology without a network). Throws std::invalid_argument when there is no such GPU.
std::vector<LinkId> nic_links(const Topology& topology, int32_t gpu);

}  // namespace cs::net
