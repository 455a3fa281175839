#include "sim/report/variability_report.h"

#include <string>

#include "sim/report/text_rows.h"

namespace cs::report {

Json variability_json(const VariabilityFigures& v) {
  Json j = {{"speed_min", v.speed_min},
            {"speed_max", v.speed_max},
            {"slow_gpus", v.slow_gpus},
            {"jitter_cv", v.jitter_cv},
            {"degraded_links", v.degraded_links},
            {"busy_min_s", v.busy_min_s},
            {"busy_min_rank", v.busy_min_rank},
            {"busy_mean_s", v.busy_mean_s},
            {"busy_max_s", v.busy_max_s},
            {"busy_max_rank", v.busy_max_rank},
            {"finishing_ranks", v.finishing_ranks},
            {"finishing_first", v.finishing_first}};
  Json& busiest = j["stage_busiest"] = Json::array();
  for (std::size_t s = 0; s < v.stage_busiest.size(); ++s)
    busiest.push_back({{"stage", static_cast<int>(s)},
                       {"rank", v.stage_busiest[s].first},
                       {"busy_s", v.stage_busiest[s].second}});
  return j;
}

void print_variability(std::ostream& out, const VariabilityFigures& v) {
  if (!v.enabled) return;
  row(out, "variability",
      fmt("speed %.3f", v.speed_min) + fmt("..%.3f", v.speed_max) + " (" +
          std::to_string(v.slow_gpus) + " GPUs below 1), " + fmt("jitter cv %.3f, ", v.jitter_cv) +
          std::to_string(v.degraded_links) + " degraded links");
  row(out, "  busy min / mean / max",
      fmt("%.4f", v.busy_min_s) + " (rank " + std::to_string(v.busy_min_rank) + ") / " +
          fmt("%.4f", v.busy_mean_s) + " / " + fmt("%.4f s", v.busy_max_s) + " (rank " +
          std::to_string(v.busy_max_rank) + ")");
  std::string first;
  for (const int32_t rank : v.finishing_first)
    first += (first.empty() ? "" : ",") + std::to_string(rank);
  if (static_cast<std::size_t>(v.finishing_ranks) > v.finishing_first.size()) first += ",...";
  row(out, "  ranks ending the step", std::to_string(v.finishing_ranks) + " (" + first + ")");
  std::string busiest;
  for (const auto& [rank, busy] : v.stage_busiest)
    busiest += (busiest.empty() ? "" : ", ") + std::to_string(rank) + fmt(" %.4f", busy);
  row(out, "  busiest rank per stage", busiest + " s");
}

}  // namespace cs::report
