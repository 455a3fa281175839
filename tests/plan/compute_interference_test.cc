// The estimate's compute slowdown beside communication: the simulation's law (exec/interference.h)
// applied to the time each kernel spends beside each load.
#include <gtest/gtest.h>

#include "sim/compute/gpu_profile.h"
#include "sim/config/run_config.h"
#include "sim/plan/compute_interference.h"

namespace cs::plan {
namespace {

struct Fixture {
  clustersim::RunConfig config = load_run_config("", "llama3-8b", {}).config;
  compute::GpuProfile gpu = compute::load_gpu_profile("h100");
  workload::StageWork work;
  workload::Op gemm;

  Fixture() {
    workload::KernelCall call;
    call.kernel = compute::gemm("gemm", 8192, 8192, 8192, 2);
    work.kernels.push_back(call);
    gemm.kernel = 0;
  }
};

// A GEMM of 10 ms with a network collective in flight over its last 5 ms and a ring exchange over
// its last 2: 3 ms at the first's slowdown and 2 at both's together.
TEST(ComputeInterference, ChargesEachStretchOfAKernelAtTheLoadBesideIt) {
  Fixture f;
  const ComputeInterference interference(f.config, f.gpu);
  ASSERT_TRUE(interference.on());
  const exec::InterferenceModel model = exec::interference_model(f.gpu);
  exec::CommLoad both = model.network_collective;
  both += model.ring_exchange;
  const auto slowdown = [&](const exec::CommLoad& load) {
    return exec::kernel_slowdown(model, compute::KernelKind::kGemm, 0.010,
                                 f.work.kernels[0].kernel.bytes, load,
                                 exec::kernel_ctas(model, f.work.kernels[0].kernel));
  };
  ASSERT_GT(slowdown(model.network_collective), 1);
  const std::vector<KernelSpan> kernels = {{0, 0.010, &f.gemm}};
  const std::vector<CommSpan> spans = {{0.005, 0.020, model.network_collective},
                                       {0.008, 0.030, model.ring_exchange}};
  EXPECT_NEAR(interference.extra_seconds(f.work, kernels, spans),
              0.003 * (slowdown(model.network_collective) - 1) + 0.002 * (slowdown(both) - 1),
              1e-12);
  // Communication before or after the kernel costs it nothing.
  EXPECT_EQ(interference.extra_seconds(f.work, kernels, {{0.010, 0.020, both}}), 0);
}

TEST(ComputeInterference, SlowsNothingWithTheEffectOff) {
  Fixture f;
  f.config.mutable_effects()->set_comm_compute_interference(false);
  const ComputeInterference interference(f.config, f.gpu);
  EXPECT_FALSE(interference.on());
  const exec::CommLoad load = exec::interference_model(f.gpu).network_collective;
  EXPECT_EQ(interference.extra_seconds(f.work, {{0, 1, &f.gemm}}, {{0, 1, load}}), 0);
}

}  // namespace
}  // namespace cs::plan
