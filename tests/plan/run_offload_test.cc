// Simulated effects of issue 6 in `run`: offload ops and their slowdown, gradient accumulation's
// 1/K data-parallel traffic per sample, checkpointing's recompute, cost figures.
#include <gtest/gtest.h>

#include "sim/config/run_config.h"
#include "sim/cost/host.h"
#include "sim/run/step_simulation.h"
#include "tests/support/run_fixtures.h"

namespace cs::run {
namespace {

// The small Llama on the analytical network.
clustersim::RunConfig analytical(std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), "network=ANALYTICAL");
  return testing_support::small_llama(std::move(overrides));
}

TEST(GradientAccumulation, KTimesLessDataParallelTrafficPerSample) {
  const auto one = analytical({"parallel.tp=2", "parallel.dp=4", "parallel.zero_stage=0",
                               "parallel.gradient_accumulation_steps=1"});
  const auto r1 = simulate_step(one, "K=1");
  EXPECT_EQ(r1.accumulation_steps, 1);
  for (int k : {2, 4}) {
    auto c = one;
    c.mutable_parallel()->set_gradient_accumulation_steps(k);
    const auto rk = simulate_step(c, "K");
    EXPECT_EQ(rk.accumulation_steps, k);
    // Same gradient bytes per step, k times the samples.
    EXPECT_NEAR(rk.dp_bytes_per_sample * k / r1.dp_bytes_per_sample, 1.0, 1e-9) << k;
  }
}

TEST(GradientAccumulation, StepsSetTheGlobalBatch) {
  auto c = analytical({"parallel.tp=2", "parallel.dp=4", "parallel.microbatch_size=2",
                       "parallel.gradient_accumulation_steps=3"});
  apply_gradient_accumulation(c, "test");
  EXPECT_EQ(c.parallel().global_batch_size(), 3 * 4 * 2);
}

TEST(Offload, OptimizerOffloadOpsAreTimedFromTheirBytesAndSlowTheStep) {
  const auto base = analytical({"parallel.tp=2", "parallel.dp=2", "parallel.global_batch_size=4",
                                "parallel.zero_stage=1", "cluster.gpu=h100"});
  auto off = base;
  off.mutable_offload()->set_optimizer(clustersim::OffloadConfig::CPU);
  PreparedStep prepared = prepare_step(off, "offload");
  const auto& prog = prepared.programs.front();
  const cost::HostFigures host = cost::host_figures(compute::load_gpu_profile("h100"));
  int d2h = 0, adam = 0, h2d = 0;
  for (const auto& op : prog.ops) {
    const std::string& label = prog.labels[op.label];
    if (label == "offload_grad_d2h" || label == "offload_param_h2d") {
      // A PCIe copy: bytes / bandwidth, on the DP stream (its own timeline row).
      EXPECT_EQ(op.stream, workload::Stream::kDp);
      EXPECT_NEAR(op.duration.as_seconds(), static_cast<double>(op.bytes) / host.pcie_bytes_per_s,
                  1e-11);
      (label == "offload_grad_d2h" ? d2h : h2d)++;
    }
    if (label == "cpu_adam") ++adam;
    EXPECT_NE(label, "adam_step");  // the GPU optimizer is gone
  }
  EXPECT_GT(d2h, 0);
  EXPECT_EQ(adam, 1);
  EXPECT_EQ(h2d, 1);
  const auto r_base = simulate_step(base, "base");
  const auto r_off = simulate_step(off, "offload");
  EXPECT_GT(r_off.iteration_time_s, r_base.iteration_time_s);
  EXPECT_TRUE(r_off.offload.enabled);
  EXPECT_GT(r_off.offload.cpu_adam_s, 0);
  EXPECT_EQ(r_off.memory.optimizer_gb, 0);
  EXPECT_GT(r_off.offload.host_dram_gb, 0);
  // The step is longer by at least the CPU optimizer step minus the GPU one it replaces.
  EXPECT_GE(r_off.iteration_time_s - r_base.iteration_time_s, r_off.offload.cpu_adam_s * 0.5);
}

TEST(Offload, ParameterOffloadFetchesEveryLayerShard) {
  auto c =
      analytical({"parallel.tp=2", "parallel.dp=2", "parallel.global_batch_size=4",
                  "parallel.zero_stage=3", "offload.optimizer=CPU", "offload.parameters=NVME"});
  const auto r = simulate_step(c, "infinity");
  EXPECT_GT(r.offload.h2d_s, 0);
  EXPECT_GT(r.offload.host_nvme_gb, 0);
  EXPECT_EQ(r.memory.weights_gb, 0);
}

TEST(CheckpointEveryK, RecomputeAppearsInHardwareWork) {
  const auto base = analytical({"parallel.tp=2", "parallel.dp=2", "parallel.global_batch_size=4"});
  auto k2 = base;
  k2.mutable_parallel()->set_checkpoint_every_k_layers(2);
  auto full = base;
  full.mutable_parallel()->set_recompute(clustersim::ParallelConfig::FULL);
  const auto r0 = simulate_step(base, "none");
  const auto r2 = simulate_step(k2, "k2");
  const auto rf = simulate_step(full, "full");
  // Every layer's forward is recomputed once either way: the same compute as FULL.
  EXPECT_NEAR(r2.stages[0].compute_s, rf.stages[0].compute_s, 1e-9);
  EXPECT_GT(r2.stages[0].compute_s, r0.stages[0].compute_s);
  EXPECT_LT(r2.memory.activations_gb, r0.memory.activations_gb);
}

TEST(Cost, ReportTurnsStepTimeIntoARun) {
  auto c = analytical(
      {"parallel.tp=2", "parallel.dp=2", "parallel.global_batch_size=4", "cost.train_tokens=1e9"});
  const auto r = simulate_step(c, "cost");
  EXPECT_DOUBLE_EQ(r.cost.price_per_gpu_hour, 3.5);
  EXPECT_NEAR(r.cost.steps, 1e9 / r.tokens_per_step, 1e-6);
  EXPECT_NEAR(r.cost.gpu_hours, r.cost.steps * r.iteration_time_s * r.gpus / 3600, 1e-6);
  EXPECT_NEAR(r.cost.dollars, r.cost.gpu_hours * 3.5, 1e-6);
}

}  // namespace
}  // namespace cs::run
