#include "sim/plan/hash_collisions.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace cs::plan {

double hashed_busiest_link_factor(int64_t flows, int64_t links, int64_t watched) {
  if (flows <= 0 || links <= 1 || watched <= 1) return 1;
  // A link's load is Binomial(flows, 1 / links); the busiest of `watched` has
  // E[max] = sum over k >= 0 of P(max > k) = sum of 1 - F(k)^watched. Below the mean minus 12
  // standard deviations F(k)^watched is 0 to double precision (each term is 1); beyond the mean
  // plus 40 it is 1 (each term 0), for any watched count a cluster has.
  const double n = static_cast<double>(flows);
  const double p = 1.0 / static_cast<double>(links);
  const double mean = n * p;
  const double sd = std::sqrt(mean * (1 - p));
  const auto from = static_cast<int64_t>(std::max(0.0, std::floor(mean - 12 * sd - 1)));
  const auto to = static_cast<int64_t>(std::min(n, std::ceil(mean + 40 * sd + 40)));
  // The probabilities of loads from..to, then P(load > k) summed from the top down.
  std::vector<double> tail(static_cast<std::size_t>(to - from + 2), 0.0);
  for (int64_t k = to; k >= from; --k) {
    const double log_pmf = std::lgamma(n + 1) - std::lgamma(static_cast<double>(k) + 1) -
                           std::lgamma(n - static_cast<double>(k) + 1) +
                           static_cast<double>(k) * std::log(p) +
                           (n - static_cast<double>(k)) * std::log1p(-p);
    const auto i = static_cast<std::size_t>(k - from);
    tail[i] = tail[i + 1] + std::exp(log_pmf);  // P(load >= k)
  }
  double expected_max = static_cast<double>(from);
  for (int64_t k = from; k < to; ++k) {
    const double above = std::min(1.0, tail[static_cast<std::size_t>(k - from + 1)]);
    expected_max += -std::expm1(static_cast<double>(watched) * std::log1p(-above));
  }
  return std::max(1.0, expected_max / mean);
}

}  // namespace cs::plan
