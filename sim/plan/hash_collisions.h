// How much slower hashed connections drain than sprayed ones: balls into bins, in expectation.
#pragma once

#include <cstdint>

namespace cs::plan {

// `flows` equal flows each hashed uniformly onto one of `links` equal links, and a transfer that
// ends when the busiest of `watched` such links (each loaded alike, independently) has drained:
// the expected load of that busiest link over the mean load flows / links, the factor by which
// hashing slows the transfer against spraying its bytes evenly. 1 when links <= 1 or watched <= 1
// (one link's expected load is the mean); it grows as the flows per link fall and the links
// watched rise: 256 flows over 16 links, 16,384 watched, about 2.1.
double hashed_busiest_link_factor(int64_t flows, int64_t links, int64_t watched);

}  // namespace cs::plan
