#include "sim/run/moe_figures.h"

#include <algorithm>

#include "sim/run/moe_effects.h"
#include "sim/workload/moe.h"

namespace cs::run {

report::MoeFigures moe_figures(const clustersim::RunConfig& config,
                               const std::vector<exec::RankStats>& stats,
                               const workload::MemoryBreakdown& peak,
                               const compute::KernelCostModel& cost) {
  report::MoeFigures f;
  const auto& model = config.model();
  if (!model.has_moe()) return f;
  f.enabled = true;
  f.experts = model.moe().num_experts();
  f.top_k = model.moe().top_k();
  f.ep = config.parallel().ep();
  for (const auto& st : stats) {
    f.all_to_all_s += st.all_to_all.as_seconds() / static_cast<double>(stats.size());
    f.all_to_all_exposed_s +=
        st.wait_for(workload::Dim::kEp).as_seconds() / static_cast<double>(stats.size());
    f.all_to_all_wire_s += st.all_to_all_wire.as_seconds() / static_cast<double>(stats.size());
    f.deepep_token_s += st.all_to_all_token_cost.as_seconds() / static_cast<double>(stats.size());
  }
  const MoeKernelEffects effects = moe_kernel_effects(config, cost);
  f.grouped_gemm_s = effects.grouped_gemm_s;
  f.token_permute_s = effects.token_permute_s;
  const workload::RoutingTable routing(config);
  double sum = 0, dropped = 0, worst = 0;
  int32_t layers = 0;
  for (int32_t l = 0; l < model.num_layers(); ++l) {
    if (!workload::is_moe_layer(model, l)) continue;
    const workload::ExpertLoad load = routing.load(l);
    const double ratio = load.max_over_mean();
    sum += ratio;
    worst = std::max(worst, ratio);
    dropped += load.dropped;
    ++layers;
  }
  if (layers > 0) {
    f.tokens_max_over_mean = sum / layers;
    f.tokens_max_over_mean_worst = worst;
    f.dropped_share = dropped / layers;
  }
  f.expert_params_per_gpu = peak.expert_params;
  f.expert_memory_gb = static_cast<double>(peak.expert_states) / 1e9;
  return f;
}

}  // namespace cs::run
