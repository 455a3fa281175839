// MoE runs from the command line: the report's expert section, and their traces.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/test_helpers.h"

namespace cs::cli {
namespace {

using testing_support::run_cli;

TEST(CliMoe, TheReportShowsExpertsAllToAllAndExpertMemory) {
  const auto r = run_cli({"run", "--preset", "mixtral-8x7b", "--set", "model.num_layers=8", "--set",
                          "parallel.virtual_stages=2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("EP 8 x EDP 2"), std::string::npos);
  EXPECT_NE(r.out.find("experts                       8 (top 2, EP 8)"), std::string::npos);
  EXPECT_NE(r.out.find("all-to-all (exposed)"), std::string::npos);
  EXPECT_NE(r.out.find("expert memory per GPU"), std::string::npos);
}

TEST(CliMoe, TracesOfMoeProgramsConvertToChakraWithSplitSizes) {
  // Exact replays are tested in tests/trace/moe_trace_test.cc; here the commands chain.
  const std::string pb = testing_support::temp_path("moe.pb");
  const auto gen =
      run_cli({"generate", "--preset", "mixtral-8x7b", "--set", "model.num_layers=2", "--set",
               "parallel.pp=1", "--set", "parallel.virtual_stages=1", "--set",
               "parallel.schedule=ONE_F_ONE_B", "--set", "parallel.dp=8", "--set",
               "parallel.global_batch_size=8", "--set", "cluster.num_gpus=8", "-o", pb});
  ASSERT_EQ(gen.code, 0) << gen.err;
  const std::string prefix = testing_support::temp_path("moe_chakra");
  const auto conv = run_cli({"convert", pb, "--to-chakra", prefix});
  ASSERT_EQ(conv.code, 0) << conv.err;
  const auto replay =
      run_cli({"replay", "--chakra", prefix, "--comm-groups", prefix + ".comm_groups.json"});
  ASSERT_EQ(replay.code, 0) << replay.err;
  EXPECT_NE(replay.out.find("ALL_TO_ALL with per-peer sizes (all-to-all-v)"), std::string::npos)
      << replay.out;
  // The groups file convert wrote beside the ranks' files is read without being named, and the
  // replay is the same.
  const auto beside = run_cli({"replay", "--chakra", prefix});
  ASSERT_EQ(beside.code, 0) << beside.err;
  EXPECT_NE(beside.out.find("from " + prefix + ".comm_groups.json"), std::string::npos)
      << beside.out;
  const auto step = [](const std::string& out) {
    const auto at = out.find("iteration time");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_FALSE(step(replay.out).empty());
  EXPECT_EQ(step(beside.out), step(replay.out));
}

TEST(CliMoe, BadExpertLayoutsFailNamingTheField) {
  const auto r = run_cli({"run", "--preset", "mixtral-8x7b", "--set", "parallel.ep=3"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("parallel.ep = 3"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cs::cli
