// `clustersim run` with variability: a slow GPU shows in the table and JSON; bad fields fail.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/test_helpers.h"

namespace cs::cli {
namespace {

using testing_support::run_cli;
using testing_support::temp_file;

TEST(CliVariability, ASlowGpuShowsInTheTableAndTheJson) {
  const std::string json = testing_support::temp_path("variability.json");
  const auto r = run_cli({"run", "--preset", "llama3-8b", "--set", "model.num_layers=2", "--set",
                          "variability.gpu_speed.slow_ranks=5", "--set",
                          "variability.gpu_speed.slow_speeds=0.9", "--json", json});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("busy min / mean / max"), std::string::npos);
  EXPECT_NE(r.out.find("(rank 5)"), std::string::npos);
  std::stringstream text;
  text << std::ifstream(json).rdbuf();
  EXPECT_NE(text.str().find("\"busy_max_rank\": 5"), std::string::npos);
}

TEST(CliVariability, BadFieldsFailWithOneLineNamingFileAndField) {
  const auto rank =
      run_cli({"run", "--preset", "llama3-8b", "--set", "variability.gpu_speed.slow_ranks=64",
               "--set", "variability.gpu_speed.slow_speeds=0.9"});
  EXPECT_EQ(rank.code, 1);
  EXPECT_NE(
      rank.err.find("llama3-8b.textproto: variability.gpu_speed.slow_ranks[0] = 64 is not a rank"),
      std::string::npos)
      << rank.err;
  EXPECT_EQ(std::count(rank.err.begin(), rank.err.end(), '\n'), 1);
  const std::string path =
      temp_file("bad_variability.textproto",
                "name: \"bad\"\n"
                "model { num_layers: 2 hidden_size: 1024 num_heads: 8 "
                "ffn_hidden_size: 4096 vocab_size: 32000 seq_length: 1024 }\n"
                "parallel { tp: 1 pp: 1 dp: 2 global_batch_size: 2 }\n"
                "cluster { topology: \"dgx-h100\" }\n"
                "variability { links { names: \"gpu0-router7\" name_factors: 0.5 } }\n");
  const auto link = run_cli({"run", path});
  EXPECT_EQ(link.code, 1);
  EXPECT_NE(link.err.find("bad_variability.textproto: variability.links.names[0]: "
                          "\"router7\" names no vertex"),
            std::string::npos)
      << link.err;
}

}  // namespace
}  // namespace cs::cli
