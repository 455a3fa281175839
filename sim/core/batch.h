// Independent simulations spread over threads and MPI ranks: the one runner sweep and plan share.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace cs {

// Called as items finish (done, total), from one thread at a time.
using BatchProgress = std::function<void(std::size_t, std::size_t)>;

// Runs body(i) for every i in [0, n) on up to `jobs` threads (at least 1, the caller's among
// them). The first exception stops handing out items; it is rethrown once running items end.
void run_batch(std::size_t n, int jobs, const std::function<void(std::size_t)>& body,
               const BatchProgress& on_done = {});

// The items of [0, total) that MPI rank `rank` of `ranks` runs: round robin, since neighbouring
// items (points of a sweep, candidates ranked by estimate) often cost alike.
std::vector<std::size_t> rank_share(std::size_t total, int rank, int ranks);

// The records of every rank's gathered text, one per line, in rank order.
std::vector<std::string> gathered_lines(const std::vector<std::string>& gathered);

}  // namespace cs
