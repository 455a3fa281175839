// MXFP8 and NVFP4 (issue 29, point 2): block-scaled GEMMs on Blackwell, their quantize kernels,
// the scales in memory, and refusal on GPUs without block-scaled tensor cores.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/compute/gpu_profile.h"
#include "sim/compute/precision_formats.h"
#include "sim/config/run_config.h"
#include "sim/plan/memory_report.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/memory.h"
#include "tests/support/run_fixtures.h"
#include "tests/support/test_helpers.h"

namespace cs::run {
namespace {

using testing_support::error_of;
using testing_support::group_seconds;

clustersim::RunConfig on_b200(const std::string& preset, const std::string& precision,
                              std::vector<std::string> more = {}) {
  std::vector<std::string> sets{"cluster.gpu=b200", "precision=" + precision, "network=ANALYTICAL"};
  sets.insert(sets.end(), more.begin(), more.end());
  return load_run_config("", preset, sets).config;
}

double step_s(const clustersim::RunConfig& c) {
  return simulate_step(c, "test").iteration_time_s;
}

TEST(BlockScaledPrecision, StoredBytesCountTheBlockScales) {
  // MXFP8: one E8M0 byte per 32 FP8 elements; NVFP4: one E4M3 byte per 16 FP4 elements.
  EXPECT_DOUBLE_EQ(compute::stored_bytes_per_element(clustersim::BF16), 2.0);
  EXPECT_DOUBLE_EQ(compute::stored_bytes_per_element(clustersim::FP8), 1.0);
  EXPECT_DOUBLE_EQ(compute::stored_bytes_per_element(clustersim::MXFP8), 1.0 + 1.0 / 32);
  EXPECT_DOUBLE_EQ(compute::stored_bytes_per_element(clustersim::NVFP4), 0.5 + 1.0 / 16);
}

TEST(BlockScaledPrecision, Llama405bStepOrdersByPrecisionOnB200) {
  const double bf16 = step_s(on_b200("llama3-405b", "BF16"));
  const double fp8 = step_s(on_b200("llama3-405b", "FP8"));
  const double mxfp8 = step_s(on_b200("llama3-405b", "MXFP8"));
  const double nvfp4 = step_s(on_b200("llama3-405b", "NVFP4"));
  EXPECT_LT(fp8, bf16);
  // MXFP8 runs at the FP8 rate and writes its scales too: never faster than FP8.
  EXPECT_GE(mxfp8, fp8);
  EXPECT_LT(mxfp8, bf16);
  EXPECT_LT(nvfp4, mxfp8);
}

TEST(BlockScaledPrecision, QuantizeKernelsAreTheirOwnSwitchableLine) {
  const auto on = simulate_step(on_b200("llama3-8b", "MXFP8"), "test");
  const auto off = simulate_step(on_b200("llama3-8b", "MXFP8", {"effects.fp8_casts=false"}), "t");
  EXPECT_GT(group_seconds(on, "fp8_cast"), 0);
  EXPECT_EQ(group_seconds(off, "fp8_cast"), 0);
  // The MXFP8 casts write their copies' scales: more bytes than FP8's casts of the same tensors.
  const auto fp8 = simulate_step(on_b200("llama3-8b", "FP8"), "test");
  EXPECT_GT(group_seconds(on, "fp8_cast"), group_seconds(fp8, "fp8_cast"));
}

TEST(BlockScaledPrecision, Fp8OnBlackwellWritesNoTransposedCopy) {
  // TE skips a per-tensor FP8 tensor's transpose where FP8 GEMMs take every layout (compute
  // capability 10.x): a cast writes 1 byte per element against MXFP8's 2 x (1 + 1/32), and the
  // norm outputs need no transpose kernel. Block-scaled formats keep both copies everywhere.
  EXPECT_EQ(compute::quantized_copies(compute::load_gpu_profile("b200"), clustersim::FP8), 1);
  EXPECT_EQ(compute::quantized_copies(compute::load_gpu_profile("h100"), clustersim::FP8), 2);
  EXPECT_EQ(compute::quantized_copies(compute::load_gpu_profile("b200"), clustersim::MXFP8), 2);
  EXPECT_EQ(compute::quantized_copies(compute::load_gpu_profile("b200"), clustersim::BF16), 0);
  const auto fp8 = simulate_step(on_b200("llama3-8b", "FP8"), "test");
  const auto mx = simulate_step(on_b200("llama3-8b", "MXFP8"), "test");
  EXPECT_GT(group_seconds(mx, "fp8_cast"),
            (2.0 + 2.0 * 1.03125) / 3.0 * group_seconds(fp8, "fp8_cast"));
}

TEST(BlockScaledPrecision, KeptLinearInputsIncludeTheScales) {
  const auto c8 = on_b200("llama3-8b", "FP8"), mx = on_b200("llama3-8b", "MXFP8");
  const auto nv = on_b200("llama3-8b", "NVFP4"), bf = on_b200("llama3-8b", "BF16");
  const auto act = [](const clustersim::RunConfig& c) {
    return static_cast<double>(workload::estimate_stage_memory(c, 0, 1).activations);
  };
  EXPECT_GT(act(mx), act(c8));
  EXPECT_LT(act(nv), act(c8));
  EXPECT_LT(act(c8), act(bf));
  // The memory report names the kept copies' bytes per element, scales included.
  EXPECT_DOUBLE_EQ(plan::build_memory_report(mx, "t").quantized_input_bytes, 1.0 + 1.0 / 32);
  EXPECT_DOUBLE_EQ(plan::build_memory_report(nv, "t").quantized_input_bytes, 0.5 + 1.0 / 16);
  EXPECT_EQ(plan::build_memory_report(bf, "t").quantized_input_bytes, 0.0);
}

TEST(BlockScaledPrecision, FirstAndLastLayersCanStayInBf16) {
  // Megatron-Core first_last_layers_bf16: those layers' GEMMs at the BF16 rate, no casts.
  const double nvfp4 = step_s(on_b200("llama3-8b", "NVFP4"));
  const double last4 = step_s(on_b200("llama3-8b", "NVFP4", {"num_layers_at_end_in_bf16=4"}));
  const double bf16 = step_s(on_b200("llama3-8b", "BF16"));
  EXPECT_GT(last4, nvfp4);
  EXPECT_LT(last4, bf16);
  // All 32 layers in BF16 is the BF16 step; under BF16 the fields change nothing.
  EXPECT_DOUBLE_EQ(step_s(on_b200("llama3-8b", "NVFP4", {"num_layers_at_start_in_bf16=32"})), bf16);
  EXPECT_DOUBLE_EQ(step_s(on_b200("llama3-8b", "BF16", {"num_layers_at_end_in_bf16=4"})), bf16);
  const std::string msg = error_of(
      [&] { simulate_step(on_b200("llama3-8b", "NVFP4", {"num_layers_at_end_in_bf16=33"}), "f"); });
  EXPECT_NE(msg.find("num_layers_at_end_in_bf16 = 33"), std::string::npos) << msg;
}

TEST(BlockScaledPrecision, RefusedOnHopperNamingTheField) {
  for (const char* precision : {"MXFP8", "NVFP4"}) {
    SCOPED_TRACE(precision);
    const auto c = load_run_config("", "llama3-8b",
                                   {"cluster.gpu=h100", std::string("precision=") + precision})
                       .config;
    const std::string msg = error_of([&] { simulate_step(c, "cfg.textproto"); });
    EXPECT_NE(msg.find("cfg.textproto: precision: "), std::string::npos) << msg;
    EXPECT_NE(msg.find("GPU 'h100' (architecture: hopper)"), std::string::npos) << msg;
  }
}

TEST(BlockScaledPrecision, Fp8IsRefusedOnAmpereAsTransformerEngineRefusesIt) {
  // A100 has no FP8 tensor cores: FP8 is refused rather than run as BF16 GEMMs plus FP8 casts.
  const auto c = load_run_config("", "llama3-8b", {"cluster.gpu=a100", "precision=FP8"}).config;
  const std::string msg = error_of([&] { simulate_step(c, "cfg.textproto"); });
  EXPECT_NE(msg.find("cfg.textproto: precision: FP8 needs FP8 tensor cores"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("GPU 'a100' (architecture: ampere)"), std::string::npos) << msg;
  EXPECT_EQ(error_of([&] {
              simulate_step(load_run_config("", "llama3-8b", {"cluster.gpu=a100"}).config, "c");
            }),
            "");
}

}  // namespace
}  // namespace cs::run
