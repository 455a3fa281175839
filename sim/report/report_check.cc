#include "sim/report/report_check.h"

#include <cmath>
#include <string>

#include "sim/workload/dims.h"

namespace cs::report {

namespace {

[[noreturn]] void fail(const std::string& field, const char* why) {
  throw InternalError("internal error: report field " + field + " " + why +
                      "; this is a simulator bug, please report it with the config");
}

void finite(double v, const std::string& field) {
  if (!std::isfinite(v)) fail(field, "is not a finite number");
}

// Times, sizes, counts and money.
void non_negative(double v, const std::string& field) {
  finite(v, field);
  if (v < 0) fail(field, "is negative");
}

void fraction(double v, const std::string& field) {
  non_negative(v, field);
  if (v > 1) fail(field, "is above 1 (more than the whole)");
}

void check_cost(const cost::RunCost& c) {
  for (const auto& [v, name] : {std::pair{c.price_per_gpu_hour, "price_per_gpu_hour"},
                                {c.train_tokens, "train_tokens"},
                                {c.steps, "steps"},
                                {c.wall_days, "wall_days"},
                                {c.gpu_hours, "gpu_hours"},
                                {c.dollars, "dollars"},
                                {c.mtbf_hours, "mtbf_hours"},
                                {c.checkpoint_tb, "checkpoint_tb"},
                                {c.checkpoint_write_s, "checkpoint_write_s"},
                                {c.checkpoint_interval_s, "checkpoint_interval_s"},
                                {c.restart_s, "restart_s"},
                                {c.effective_wall_days, "effective_wall_days"},
                                {c.effective_dollars, "effective_dollars"},
                                {c.interruptions_total_per_day, "interruptions_total_per_day"}})
    non_negative(v, std::string("cost.") + name);
  for (const double v : c.interruptions_per_day) non_negative(v, "cost.interruptions_per_day");
  fraction(c.goodput, "cost.goodput");
  // A run that trains takes time and money; 0 would read as "free and instant".
  if (!(c.goodput > 0)) fail("cost.goodput", "is 0: the run never finishes");
  if (!(c.effective_wall_days > 0) && c.wall_days > 0)
    fail("cost.effective_wall_days", "is 0 for a run that takes time");
}

void check_stages(const StepReport& r) {
  for (std::size_t s = 0; s < r.stages.size(); ++s) {
    const auto& f = r.stages[s];
    const std::string at = "stages[" + std::to_string(s) + "].";
    fraction(f.bubble_fraction, at + "bubble_fraction");
    fraction(f.analytic_bubble_fraction, at + "analytic_bubble_fraction");
    non_negative(f.compute_s, at + "compute_s");
    for (const auto& d : workload::kDims)
      non_negative(f.comm_wait_s[static_cast<std::size_t>(d.dim)],
                   at + "comm_wait_s." + std::string(d.key));
    non_negative(f.interference_s, at + "interference_s");
    non_negative(f.host_dispatch_s, at + "host_dispatch_s");
    non_negative(f.side_stream_hold_s, at + "side_stream_hold_s");
    non_negative(f.memory_gb, at + "memory_gb");
  }
  for (const auto& [group, seconds] : r.compute_by_kernel_group_s)
    non_negative(seconds, "compute_by_kernel_group_s." + group);
}

void check_comm(const StepReport& r) {
  for (const double v : r.comm_bytes_by_op) non_negative(v, "comm_bytes_by_op");
  for (const double v : r.comm_bytes_by_dim) non_negative(v, "comm_bytes_by_dim");
  non_negative(r.comm_bytes_nvlink, "comm_bytes_nvlink");
  non_negative(r.comm_bytes_network, "comm_bytes_network");
  non_negative(r.comm_bytes_pcie, "comm_bytes_pcie");
  for (const auto& c : r.collectives_run) {
    non_negative(c.calls, "collectives_run.calls");
    non_negative(c.mean_bytes, "collectives_run.mean_size_bytes");
  }
  for (const auto& d : workload::kDims) {
    const auto i = static_cast<std::size_t>(d.dim);
    non_negative(r.exposed_s[i], "exposed_s." + std::string(d.key));
    non_negative(r.peer_wait_s[i], "peer_wait_s." + std::string(d.key));
    if (r.peer_wait_s[i] > r.exposed_s[i] * (1 + 1e-9) + 1e-12)
      fail("peer_wait_s." + std::string(d.key), "is above the exposed time it is part of");
  }
  non_negative(r.interference_s, "interference_s");
  non_negative(r.host_dispatch_s, "host_dispatch_s");
  non_negative(r.side_stream_hold_s, "side_stream_hold_s");
}

void check_memory(const StepReport& r) {
  const auto& m = r.memory;
  for (const auto& [v, name] : {std::pair{m.weights_gb, "weights_gb"},
                                {m.gradients_gb, "gradients_gb"},
                                {m.optimizer_gb, "optimizer_gb"},
                                {m.activations_gb, "activations_gb"},
                                {m.other_gb, "other_gb"},
                                {m.peak_gb, "peak_gb"},
                                {m.capacity_gb, "capacity_gb"}})
    non_negative(v, std::string("memory.") + name);
  const auto& o = r.offload;
  for (const auto& [v, name] : {std::pair{o.d2h_s, "d2h_s"},
                                {o.cpu_adam_s, "cpu_adam_s"},
                                {o.h2d_s, "h2d_s"},
                                {o.host_dram_gb, "host_dram_gb"},
                                {o.host_nvme_gb, "host_nvme_gb"},
                                {o.host_dram_capacity_gb, "host_dram_capacity_gb"},
                                {o.host_nvme_capacity_gb, "host_nvme_capacity_gb"}})
    non_negative(v, std::string("offload.") + name);
}

void check_variability(const VariabilityFigures& v) {
  for (const auto& [x, name] : {std::pair{v.speed_min, "speed_min"},
                                {v.speed_max, "speed_max"},
                                {v.jitter_cv, "jitter_cv"},
                                {v.busy_min_s, "busy_min_s"},
                                {v.busy_mean_s, "busy_mean_s"},
                                {v.busy_max_s, "busy_max_s"}})
    non_negative(x, std::string("variability.") + name);
  for (const auto& [rank, busy] : v.stage_busiest) non_negative(busy, "variability.stage_busiest");
}

void check_moe(const MoeFigures& e) {
  for (const auto& [x, name] : {std::pair{e.all_to_all_s, "all_to_all_s"},
                                {e.all_to_all_exposed_s, "all_to_all_exposed_s"},
                                {e.tokens_max_over_mean, "tokens_max_over_mean"},
                                {e.tokens_max_over_mean_worst, "tokens_max_over_mean_worst"},
                                {e.expert_memory_gb, "expert_memory_gb"},
                                {e.deepep_token_s, "deepep_token_s"}})
    non_negative(x, std::string("moe.") + name);
  fraction(e.dropped_share, "moe.dropped_share");
  // What an effect adds: negative where it saves time.
  finite(e.grouped_gemm_s, "moe.grouped_gemm_s");
  finite(e.all_to_all_wire_s, "moe.all_to_all_wire_s");
  finite(e.token_permute_s, "moe.token_permute_s");
}

}  // namespace

void check_report(const StepReport& r) {
  if (!(r.iteration_time_s > 0) || !std::isfinite(r.iteration_time_s))
    fail("iteration_time_s", "is not a positive finite time");
  non_negative(r.tokens_per_s, "tokens_per_s");
  non_negative(r.tflops_per_gpu, "tflops_per_gpu");
  non_negative(r.model_flops_per_step, "model_flops_per_step");
  // Model FLOPs per second over the GPUs' peak: above 1 would beat the hardware.
  fraction(r.mfu, "mfu");
  fraction(r.hfu, "hfu");
  fraction(r.bubble_fraction, "bubble_fraction");
  fraction(r.analytic_bubble_fraction, "analytic_bubble_fraction");
  check_stages(r);
  check_comm(r);
  check_memory(r);
  check_cost(r.cost);
  non_negative(r.dp_bytes_per_sample, "dp_bytes_per_sample");
  check_variability(r.variability);
  check_moe(r.moe);
}

}  // namespace cs::report
