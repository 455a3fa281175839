// Host figures and cost: CPU Adam bound by the node's DRAM share, config overrides, $/GPU-hour
// defaults, and a whole run's closed-form cost.
#include "sim/cost/host.h"

#include <gtest/gtest.h>

namespace cs::cost {
namespace {

compute::GpuProfile gpu(const std::string& name) {
  return compute::load_gpu_profile(name);
}

TEST(Cost, ClosedForm) {
  const RunCost c = run_cost(/*step=*/10, /*tokens per step=*/1e6, /*gpus=*/1024, 3.5, 1e12);
  EXPECT_DOUBLE_EQ(c.steps, 1e6);
  EXPECT_DOUBLE_EQ(c.wall_days, 1e7 / 86400);
  EXPECT_DOUBLE_EQ(c.gpu_hours, 1e7 / 3600 * 1024);
  EXPECT_DOUBLE_EQ(c.dollars, c.gpu_hours * 3.5);
  EXPECT_DOUBLE_EQ(price_per_gpu_hour(gpu("a100")), 2.0);
  EXPECT_DOUBLE_EQ(price_per_gpu_hour(gpu("h100")), 3.5);
  EXPECT_DOUBLE_EQ(price_per_gpu_hour(gpu("h800")), 2.0);
  EXPECT_DOUBLE_EQ(price_per_gpu_hour(gpu("h200")), 4.5);
  clustersim::CostConfig given;
  given.set_price_per_gpu_hour(1.25);
  EXPECT_DOUBLE_EQ(price_per_gpu_hour(gpu("h100"), given), 1.25);
}

TEST(Host, CpuAdamIsBoundByTheNodesDramShare) {
  const HostFigures h = host_figures(gpu("h100"));
  const double params = 1e9;
  EXPECT_DOUBLE_EQ(cpu_adam_seconds(h, params, false),
                   28.0 * params / (h.host_memory_bytes_per_s * h.cpu_adam_efficiency / 8));
  EXPECT_GT(cpu_adam_seconds(h, params, true), cpu_adam_seconds(h, params, false));
  clustersim::OffloadConfig o;
  o.set_host_memory_gb(512);
  EXPECT_DOUBLE_EQ(host_figures(gpu("a100"), o).host_memory_bytes, 512e9);
  EXPECT_DOUBLE_EQ(host_figures(gpu("a100")).host_memory_bytes, 1e12);
  // The servers' figures as the DGX A100 and DGX H100 datasheets give them (profiles' host).
  EXPECT_DOUBLE_EQ(host_figures(gpu("h100")).host_memory_bytes, 2e12);
  EXPECT_DOUBLE_EQ(host_figures(gpu("h100")).host_memory_bytes_per_s, 2 * 307.2e9);
  EXPECT_DOUBLE_EQ(host_figures(gpu("a100")).host_memory_bytes_per_s, 2 * 204.8e9);
  EXPECT_DOUBLE_EQ(host_figures(gpu("h800")).nvme_capacity_bytes, 8 * 3.84e12);
}

}  // namespace
}  // namespace cs::cost
