// Trace inputs whose numbers cannot be true: refused with the field and the reason, never run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "sim/run/step_simulation.h"
#include "sim/trace/chakra.h"
#include "sim/trace/chakra_groups.h"
#include "sim/trace/trace_format.h"
#include "tests/support/moe_fixtures.h"
#include "tests/support/run_fixtures.h"
#include "tests/support/test_helpers.h"
#include "tests/support/trace_fixtures.h"

namespace cs::trace {
namespace {

std::string trace_load_error(const clustersim::trace::Trace& t) {
  try {
    testing_support::round_trip(t);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

clustersim::trace::Trace small_layout_trace() {
  return to_trace(run::prepare_step(testing_support::small_llama({"parallel.dp=1", "parallel.pp=2",
                                                                  "parallel.global_batch_size=4"}),
                                    "test"));
}

TEST(TraceNumbers, TamperedMetadataIsRefusedByField) {
  ASSERT_EQ(trace_load_error(small_layout_trace()), "");  // the untampered trace loads
  auto t = small_layout_trace();
  t.mutable_metadata()->set_peak_held(0, -1);
  EXPECT_NE(trace_load_error(t).find("metadata.peak_held[0] = -1"), std::string::npos)
      << trace_load_error(t);
  t = small_layout_trace();
  t.mutable_metadata()->set_world_size(0);
  EXPECT_NE(trace_load_error(t).find("metadata.world_size = 0"), std::string::npos)
      << trace_load_error(t);
  t = small_layout_trace();
  t.mutable_metadata()->mutable_costs()->set_t_f(-1);
  EXPECT_NE(trace_load_error(t).find("metadata.costs.t_f"), std::string::npos)
      << trace_load_error(t);
}

TEST(TraceNumbers, ADurationThatWouldWrapTheClockIsRefused) {
  auto t = small_layout_trace();
  // Two ops of 2^62 ps each: their sum wraps a signed 64-bit clock.
  t.mutable_programs(0)->mutable_ops(0)->set_duration_ps(int64_t{1} << 62);
  t.mutable_programs(0)->mutable_ops(1)->set_duration_ps(int64_t{1} << 62);
  EXPECT_NE(trace_load_error(t).find("duration_ps = 4611686018427387904"), std::string::npos)
      << trace_load_error(t);
}

TEST(TraceNumbers, AKernelWithNegativeOrUnboundedWorkIsRefused) {
  for (const double v : {-1.0, std::numeric_limits<double>::infinity()}) {
    auto t = small_layout_trace();
    t.mutable_programs(0)->mutable_kernels(0)->set_unvectorized_elements(v);
    EXPECT_NE(trace_load_error(t).find(
                  "kernel 0: flops, bytes and unvectorized_elements must be finite and >= 0"),
              std::string::npos)
        << trace_load_error(t);
    t = small_layout_trace();
    t.mutable_programs(0)->mutable_kernels(0)->set_bytes(v);
    EXPECT_NE(trace_load_error(t).find("kernel 0: flops, bytes"), std::string::npos)
        << trace_load_error(t);
  }
}

// A stack's unvectorized kernels keep their element count through a trace: the replay times them
// as the run did.
TEST(TraceNumbers, UnvectorizedElementsSurviveTheRoundTrip) {
  const auto unvectorized = [](const clustersim::trace::Trace& t) {
    double n = 0;
    for (const auto& program : t.programs())
      for (const auto& k : program.kernels()) n += k.unvectorized_elements();
    return n;
  };
  const auto t = to_trace(run::prepare_step(
      testing_support::small_llama({"software_stack=DEEPSPEED_ZERO", "parallel.tp=1"}), "test"));
  EXPECT_GT(unvectorized(t), 0);
  const auto back = testing_support::round_trip(t);
  ASSERT_TRUE(back.step.has_value());
  EXPECT_EQ(unvectorized(to_trace(*back.step)), unvectorized(t));
}

// Kernels of a trace whose flag `flag` is set.
template <typename Flag>
int flagged(const clustersim::trace::Trace& t, Flag flag) {
  int n = 0;
  for (const auto& program : t.programs())
    for (const auto& k : program.kernels()) n += (k.*flag)() ? 1 : 0;
  return n;
}

TEST(TraceNumbers, MultiTensorKernelsSurviveTheRoundTrip) {
  const auto flag = &clustersim::trace::Kernel::multi_tensor;
  const auto t = to_trace(run::prepare_step(testing_support::small_llama({}), "test"));
  EXPECT_GT(flagged(t, flag), 0);  // the fused Adam step and the gradient norm
  const auto back = testing_support::round_trip(t);
  ASSERT_TRUE(back.step.has_value());
  EXPECT_EQ(flagged(to_trace(*back.step), flag), flagged(t, flag));
}

TEST(TraceNumbers, TokenPermutationsSurviveTheRoundTrip) {
  const auto flag = &clustersim::trace::Kernel::token_permute;
  const auto t = to_trace(run::prepare_step(testing_support::small_mixtral(), "test"));
  EXPECT_GT(flagged(t, flag), 0);  // permute and unpermute, forward and backward
  const auto back = testing_support::round_trip(t);
  ASSERT_TRUE(back.step.has_value());
  EXPECT_EQ(flagged(to_trace(*back.step), flag), flagged(t, flag));
}

TEST(TraceNumbers, AChakraTraceMissingARankFromTheMiddleIsRefused) {
  const auto step = run::prepare_step(
      testing_support::small_llama(
          {"parallel.dp=4", "parallel.global_batch_size=4", "cluster.num_gpus=4"}),
      "test");
  const std::string prefix = testing_support::temp_path("gap");
  write_chakra(expand_layout(step), prefix);
  ASSERT_GE(read_chakra_files(prefix).ranks.size(), 3u);  // whole, it reads
  std::filesystem::remove(prefix + ".1.et");
  try {
    read_chakra_files(prefix);
    ADD_FAILURE() << "a trace of ranks 0, 2, 3 was read";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(prefix + ".1.et: missing, but rank files up to"),
              std::string::npos)
        << e.what();
  }
}

TEST(TraceNumbers, ACommGroupsFileNamingNoGroupIsRefused) {
  for (const char* empty : {"{}", "[]", " { } "}) {
    try {
      parse_comm_groups(empty, "groups.json");
      ADD_FAILURE() << empty << " was taken as no groups";
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("groups.json: names no process group"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(parse_comm_groups(R"({"0": [0, 1]})", "g").size(), 1u);
}

}  // namespace
}  // namespace cs::trace
