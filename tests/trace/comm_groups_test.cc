// The comm-groups file: what parses, what fails (naming file, group and reason), and that what
// write_comm_groups writes reads back.
#include "sim/trace/comm_groups.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sim/trace/trace_format.h"
#include "tests/support/test_helpers.h"

namespace cs::trace {
namespace {

TEST(CommGroups, NamesMapToTheirRanksInRingOrder) {
  const CommGroups g = parse_comm_groups(R"({"tp": [3, 1, 2], "all": [0,1,2,3], "e\"x": []})", "g");
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g.at("tp"), (std::vector<int32_t>{3, 1, 2}));
  EXPECT_EQ(g.at("all"), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_TRUE(g.at("e\"x").empty());
  // A file that names no group is refused (trace_numbers_test), not taken as no file.
  EXPECT_THROW(parse_comm_groups(" {} ", "g"), TraceError);
}

// Each bad file fails with a TraceError holding every one of `parts`.
void expect_error(const std::string& text, const std::vector<std::string>& parts) {
  try {
    parse_comm_groups(text, "groups.json");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const TraceError& e) {
    const std::string what = e.what();
    for (const auto& part : parts) EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

TEST(CommGroups, BadFilesNameTheFileThePlaceAndTheReason) {
  expect_error(R"({"a": [0,)", {"groups.json: not JSON", "line 1, column 10"});
  expect_error(R"({"a": [0]} x)", {"groups.json: not JSON", "column 12"});
  expect_error("", {"groups.json: not JSON"});
  // nlohmann throws out_of_range, not parse_error, for a number it cannot hold (found by fuzzing).
  expect_error(R"({"tp": [1e999]})", {"groups.json: not JSON", "number overflow"});
  expect_error("[[0, 1]]", {"groups.json: group #0: ", "expected an object with pg_name"});
  expect_error("3", {"groups.json: expected {\"pg_name\": [ranks], ...}"});
  expect_error(R"({"tp": 3})", {"groups.json: group \"tp\": ", "ranks must be a list"});
  expect_error(R"({"tp": [0, -1]})", {"groups.json: group \"tp\": ", "rank -1 is not"});
  expect_error(R"({"tp": [0, 1.5]})", {"group \"tp\": ", "rank 1.5 is not"});
  expect_error(R"({"tp": [0, "1"]})", {"group \"tp\": ", R"(rank "1" is not)"});
  expect_error(R"({"tp": [2147483648]})", {"rank 2147483648 is not a non-negative integer"});
  expect_error(R"({"tp": [0], "dp": [1], "tp": [2]})",
               {"groups.json: pg_name \"tp\" is listed twice"});
}

TEST(CommGroups, WrittenGroupsReadBackOnePerLine) {
  const std::vector<std::vector<int32_t>> groups = {{0, 1}, {2, 3, 4}, {}};
  const std::string path = testing_support::temp_path("groups.json");
  write_comm_groups(groups, path);
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  EXPECT_EQ(text.str(), "{\n \"0\": [0,1],\n \"1\": [2,3,4],\n \"2\": []\n}\n");
  const CommGroups back = parse_comm_groups(text.str(), path);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back.at("1"), groups[1]);
  EXPECT_TRUE(back.at("2").empty());
  EXPECT_THROW(write_comm_groups(groups, "/nonexistent-dir/g.json"), TraceError);
}

}  // namespace
}  // namespace cs::trace
