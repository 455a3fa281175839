// `clustersim run --timeline` under every schedule: each stream a schedule uses has its name.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/test_helpers.h"

namespace cs::cli {
namespace {

using testing_support::run_cli;

std::string timeline_of(const std::string& schedule, const std::string& virtual_stages) {
  const std::string path = testing_support::temp_path("timeline_" + schedule + ".json");
  const auto r =
      run_cli({"run", "--preset", "llama3-8b", "--set", "model.num_layers=8", "--set",
               "parallel.pp=4", "--set", "parallel.dp=1", "--set", "parallel.global_batch_size=8",
               "--set", "parallel.schedule=" + schedule, "--set",
               "parallel.virtual_stages=" + virtual_stages, "--timeline", path});
  EXPECT_EQ(r.code, 0) << r.err;
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

TEST(CliTimeline, SchedulesSendingBothWaysNameTheirStreams) {
  for (const std::string s : {"ZB_V", "DUALPIPE"}) {
    const std::string json = timeline_of(s, "2");
    EXPECT_NE(json.find("pp send prev (activations)"), std::string::npos) << s;
    EXPECT_NE(json.find("pp recv prev (gradients)"), std::string::npos) << s;
  }
  EXPECT_NE(timeline_of("ONE_F_ONE_B", "1").find("pp send next"), std::string::npos);
}

// Every rank of the 405B step is 77 M ops, some 18 GB of JSON: refused before the simulation.
TEST(CliTimeline, ATimelineTooBigToOpenIsRefusedNamingTheRanksOption) {
  const std::string path = testing_support::temp_path("timeline_all_ranks.json");
  const auto r = run_cli(
      {"run", "--preset", "llama3-405b", "--timeline", path, "--timeline-ranks", "0-16383"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--timeline-ranks"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("16384 ranks"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cs::cli
