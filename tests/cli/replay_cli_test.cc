// `clustersim replay --set`: NCCL settings and the effects that act on the simulated cluster
// switch for a trace's replay as for a run; fields that shape the trace's ops are refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/test_helpers.h"

namespace cs::cli {
namespace {

using testing_support::run_cli;

// A small Llama trace, written once.
const std::string& small_trace() {
  static const std::string pb = [] {
    const std::string path = testing_support::temp_path("replay_set.pb");
    const auto gen =
        run_cli({"generate", "--preset", "llama3-8b", "--set", "model.num_layers=4", "-o", path});
    EXPECT_EQ(gen.code, 0) << gen.err;
    return path;
  }();
  return pb;
}

std::string line_of(const std::string& out, const std::string& label) {
  const auto at = out.find(label);
  return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

TEST(CliReplay, SetSwitchesAnEffectOfTheClusterAsRunDoes) {
  const auto on = run_cli({"replay", small_trace()});
  const auto off =
      run_cli({"replay", small_trace(), "--set", "effects.comm_compute_interference=false"});
  ASSERT_EQ(on.code, 0) << on.err;
  ASSERT_EQ(off.code, 0) << off.err;
  EXPECT_NE(line_of(on.out, "iteration time"), line_of(off.out, "iteration time"));
  EXPECT_NE(line_of(on.out, "interference (comm"), line_of(off.out, "interference (comm"));
  EXPECT_NE(line_of(off.out, "interference (comm").find("0.0000 s"), std::string::npos) << off.out;
  const auto latency_off =
      run_cli({"replay", small_trace(), "--set", "effects.nccl_step_latency=false"});
  ASSERT_EQ(latency_off.code, 0) << latency_off.err;
  EXPECT_NE(line_of(on.out, "iteration time"), line_of(latency_off.out, "iteration time"));
}

TEST(CliReplay, SetRefusesWhatTheTraceAlreadyHolds) {
  for (const std::string key : {"effects.elementwise_kernels", "model.num_layers"}) {
    const auto r = run_cli({"replay", small_trace(), "--set", key + "=false"});
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find("--set " + key + ": a trace holds its ops already"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("comm_compute_interference"), std::string::npos) << r.err;
  }
  const auto bad = run_cli({"replay", small_trace(), "--set", "nccl.bogus=1"});
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("no field 'bogus' in NcclConfig"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace cs::cli
