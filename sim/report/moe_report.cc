#include "sim/report/moe_report.h"

#include <string>

#include "sim/report/text_rows.h"

namespace cs::report {

Json moe_json(const MoeFigures& m) {
  return {{"experts", m.experts},
          {"top_k", m.top_k},
          {"ep", m.ep},
          {"all_to_all_s", m.all_to_all_s},
          {"all_to_all_exposed_s", m.all_to_all_exposed_s},
          {"tokens_per_expert_max_over_mean", m.tokens_max_over_mean},
          {"tokens_per_expert_max_over_mean_worst_layer", m.tokens_max_over_mean_worst},
          {"dropped_share", m.dropped_share},
          {"expert_params_per_gpu", static_cast<double>(m.expert_params_per_gpu)},
          {"expert_memory_gb", m.expert_memory_gb},
          {"effects_s",
           {{"moe_grouped_gemm", m.grouped_gemm_s},
            {"moe_all_to_all_wire", m.all_to_all_wire_s},
            {"moe_token_permute_rate", m.token_permute_s},
            {"deepep_token_cost", m.deepep_token_s}}}};
}

void print_moe(std::ostream& out, const MoeFigures& m) {
  if (!m.enabled) return;
  row(out, "experts",
      std::to_string(m.experts) + " (top " + std::to_string(m.top_k) + ", EP " +
          std::to_string(m.ep) + ")");
  const double share = m.all_to_all_s > 0 ? m.all_to_all_exposed_s / m.all_to_all_s : 0;
  row(out, "  all-to-all (exposed)",
      fmt("%.4f s", m.all_to_all_s) + " (" + fmt("%.4f s", m.all_to_all_exposed_s) + ", " +
          fmt("%.0f%%", 100 * share) + ")");
  row(out, "  tokens per expert max/mean",
      fmt("%.2f", m.tokens_max_over_mean) + " (worst layer " +
          fmt("%.2f", m.tokens_max_over_mean_worst) + "), " + fmt("%.1f%%", 100 * m.dropped_share) +
          " dropped");
  row(out, "  effect moe_grouped_gemm",
      fmt("%+.4f s", m.grouped_gemm_s) + " compute (grouped GEMM vs an ideal one)");
  row(out, "  effect moe_token_permute_rate",
      fmt("%+.4f s", m.token_permute_s) + " compute (token permutations vs streaming copies)");
  row(out, "  effect moe_all_to_all_wire",
      fmt("%+.4f s", m.all_to_all_wire_s) + " all-to-all in flight (NVLink and NIC overheads)");
  row(out, "  effect deepep_token_cost",
      fmt("%+.4f s", m.deepep_token_s) +
          " all-to-all in flight (DeepEP's time beyond its bytes: per call, token and peer)");
  row(out, "  expert memory per GPU",
      fmt("%.1f GB", m.expert_memory_gb) + " (" +
          fmt("%.2f", static_cast<double>(m.expert_params_per_gpu) / 1e9) + " B params)");
}

}  // namespace cs::report
