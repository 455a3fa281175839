#include "sim/run/post_validation.h"

#include <algorithm>

namespace cs::run {

Time rank_span(const exec::RankStats& stats) {
  return stats.finish - stats.lead_wait;
}

Time post_validated_step(std::span<const exec::RankStats> stats) {
  Time step;
  for (const exec::RankStats& s : stats) step = std::max(step, rank_span(s));
  return step;
}

}  // namespace cs::run
