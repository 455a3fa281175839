// `clustersim plan` on a mixture of experts: EP in the table and JSON; --rank-order pins or fails;
// an empty plan says why and exits 3.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/compute/gpu_profile.h"
#include "tests/support/test_helpers.h"

namespace cs::cli {
namespace {

using testing_support::run_cli;
using testing_support::temp_file;

const std::vector<std::string> kSmallMoe = {"plan",
                                            "--preset",
                                            "mixtral-8x7b",
                                            "--set",
                                            "model.num_layers=2",
                                            "--set",
                                            "model.seq_length=1024",
                                            "--set",
                                            "parallel.global_batch_size=16",
                                            "--set",
                                            "parallel.ep=1",
                                            "--gpus",
                                            "8",
                                            "--simulate",
                                            "3",
                                            "--refine",
                                            "0",
                                            "--jobs",
                                            "2"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// --price-per-gpu-hour's default is each profile's price, read from the profiles (a new GPU
// file shows up here without a code change).
TEST(CliPlan, HelpGivesEveryGpuProfilesPrice) {
  const auto r = run_cli({"plan", "--help"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string folded;  // the help wraps lines: compare with runs of whitespace folded to one
  for (char c : r.out)
    if (!(std::isspace(static_cast<unsigned char>(c)) && !folded.empty() && folded.back() == ' '))
      folded += std::isspace(static_cast<unsigned char>(c)) ? ' ' : c;
  for (const auto& name : compute::gpu_profile_names()) {
    std::ostringstream entry;
    entry << name << ' ' << compute::load_gpu_profile(name).price_per_gpu_hour();
    EXPECT_NE(folded.find(entry.str()), std::string::npos) << entry.str();
  }
}

TEST(CliPlan, AMixtureOfExpertsShowsItsExpertLayoutInTheTableAndTheJson) {
  const std::string json = temp_file("plan_moe.json", "");
  const auto r = run_cli(with(kSmallMoe, {"--json", json}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(" EP 8 EDP "), std::string::npos) << r.out;
  std::stringstream text;
  text << std::ifstream(json).rdbuf();
  EXPECT_NE(text.str().find("\"ep\": 8"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"etp\": "), std::string::npos);
  EXPECT_NE(text.str().find("\"rank_order\": \"TP_CP_DP_PP\""), std::string::npos);
}

// --simulate 100000 once simulated every fitting layout, for hours; refused before any is built.
// Without --gpus the planner answers the config's own question: the best layout on the GPUs of
// its layout (TP x CP x PP x DP), here 4 x 1 x 1 x 2.
TEST(CliPlan, WithoutGpusItPlansOnTheConfigsOwnLayout) {
  const auto r =
      run_cli({"plan", "--preset", "llama3-8b", "--set", "model.num_layers=2", "--set",
               "parallel.tp=4", "--set", "parallel.pp=1", "--set", "parallel.dp=2", "--set",
               "parallel.global_batch_size=16", "--simulate", "2", "--refine", "0", "--jobs", "2"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("llama3-8b on 8 x h100"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("8 GPUs: the config's own layout's"), std::string::npos) << r.out;
}

TEST(CliPlan, SimulatingMoreThanTheBoundIsRefusedUpFront) {
  auto args = kSmallMoe;
  args[args.size() - 5] = "100000";  // the value after --simulate
  ASSERT_EQ(args[args.size() - 6], "--simulate");
  const auto r = run_cli(args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--simulate must be in [0, 1000], got 100000"), std::string::npos) << r.err;
}

// Past 16,384 GPUs the default candidate counts shrink with the cluster, and the plan says so;
// a count given on the command line is kept.
TEST(CliPlan, LargeClustersBoundTheDefaultSimulationsAndSaySo) {
  const auto big =
      run_cli({"plan", "--preset", "llama3.2-1b", "--gpus", "98304", "--simulate", "0"});
  EXPECT_NE(big.out.find("bounded at 98304 GPUs"), std::string::npos) << big.out;
  EXPECT_NE(big.out.find("--refine 0 (default 5)"), std::string::npos) << big.out;
  EXPECT_EQ(big.out.find("--simulate"), big.out.find("--simulate 0)"));  // not among the bounded
  const auto given = run_cli(
      {"plan", "--preset", "llama3.2-1b", "--gpus", "98304", "--simulate", "0", "--refine", "5"});
  EXPECT_EQ(given.out.find("bounded"), std::string::npos) << given.out;
  const auto small =
      run_cli({"plan", "--preset", "llama3.2-1b", "--gpus", "16384", "--simulate", "0"});
  EXPECT_EQ(small.out.find("bounded"), std::string::npos) << small.out;
}

// --simulate 0 ranks by the pre-estimate alone: the table, the reasons and the run lines, no step,
// and exit 0 (it once printed an empty table and exited 3).
TEST(CliPlan, SimulateZeroRanksByTheEstimateAlone) {
  const auto r = run_cli(
      {"plan", "--preset", "llama3-405b", "--gpus", "16384", "--simulate", "0", "--top", "3"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("not simulated (--simulate 0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  #3: estimated "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  #3  clustersim run --preset llama3-405b"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("  #4"), std::string::npos) << r.out;
}

TEST(CliPlan, RankOrderPinsEveryCandidate) {
  const std::string json = temp_file("plan_moe_pinned.json", "");
  const auto r = run_cli(with(kSmallMoe, {"--rank-order", "TP_CP_PP_DP", "--json", json}));
  ASSERT_EQ(r.code, 0) << r.err;
  std::stringstream text;
  text << std::ifstream(json).rdbuf();
  EXPECT_EQ(text.str().find("\"rank_order\": \"TP_CP_DP_PP\""), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"rank_order\": \"TP_CP_PP_DP\""), std::string::npos);
}

TEST(CliPlan, AnUnknownRankOrderFailsWithOneLineNamingTheOption) {
  const auto r = run_cli(with(kSmallMoe, {"--rank-order", "PP_FIRST"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--rank-order must be auto, TP_CP_PP_DP or TP_CP_DP_PP, got 'PP_FIRST'"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// The planner sizes layouts for the GPU before anything else: an unknown one names where it came
// from, the option or the config's field, as an unknown topology does.
TEST(CliPlan, AnUnknownGpuNamesTheOptionOrTheField) {
  const auto option = run_cli({"plan", "--preset", "llama3-8b", "--gpus", "8", "--gpu", "h1000"});
  EXPECT_EQ(option.code, 2);
  EXPECT_EQ(option.err.rfind("clustersim plan: --gpu: unknown GPU 'h1000': neither a profile (", 0),
            0u)
      << option.err;
  const auto field =
      run_cli({"plan", "--preset", "llama3-8b", "--gpus", "8", "--set", "cluster.gpu=h1000"});
  EXPECT_EQ(field.code, 1);
  EXPECT_EQ(field.err.rfind("clustersim plan: error: workloads/llama3-8b.textproto: cluster.gpu: "
                            "unknown GPU 'h1000'",
                            0),
            0u)
      << field.err;
  // An unknown stack profile names its field too (the planner asks the profile what it allows).
  const auto stack = run_cli(
      {"plan", "--preset", "llama3-8b", "--gpus", "8", "--set", "stack_variant=nonexistent"});
  EXPECT_NE(stack.code, 0);
  EXPECT_NE(stack.err.find("stack_variant: unknown stack profile 'nonexistent'"), std::string::npos)
      << stack.err;
}

TEST(CliPlan, AModelThatFitsNowhereSaysWhyAndExitsThree) {
  const auto r = run_cli({"plan", "--preset", "llama3-405b", "--gpus", "8"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.out.find("none fits: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GB of HBM per GPU; the least, "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace cs::cli
