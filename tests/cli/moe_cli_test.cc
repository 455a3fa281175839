// MoE runs from the command line: the report's expert section, and traces that cannot carry them.
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

TEST(CliMoe, TracesOfMoeProgramsAreRefusedNotFlattened) {
  const auto r =
      run_cli({"generate", "--preset", "mixtral-8x7b", "-o", testing_support::temp_path("moe.pb")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("mixture-of-experts programs"), std::string::npos) << r.err;
}

TEST(CliMoe, BadExpertLayoutsFailNamingTheField) {
  const auto r = run_cli({"run", "--preset", "mixtral-8x7b", "--set", "parallel.ep=3"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("parallel.ep = 3"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cs::cli
