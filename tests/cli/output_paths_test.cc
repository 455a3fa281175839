// Output options as a new user expects them: "-" is standard output (and the human table moves to
// stderr so stdout pipes into jq), a path that cannot be written is refused before anything is
// simulated, and a sweep that simulated nothing does not exit 0.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/report/json.h"
#include "tests/support/test_helpers.h"

namespace cs::cli {
namespace {

using testing_support::run_cli;
using testing_support::temp_path;

// A llama3-8b step small enough to simulate in a moment.
std::vector<std::string> tiny_run(std::vector<std::string> extra) {
  std::vector<std::string> args = {"run",
                                   "--preset",
                                   "llama3-8b",
                                   "--set",
                                   "model.num_layers=2",
                                   "--set",
                                   "parallel.dp=4",
                                   "--set",
                                   "parallel.global_batch_size=8"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(OutputPaths, RunJsonDashIsTheReportOnStdoutAndTheTableOnStderr) {
  const auto r = run_cli(tiny_run({"--json", "-"}));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = report::Json::parse(r.out);  // throws unless stdout is one JSON document
  EXPECT_GT(j.at("iteration_time_s").get<double>(), 0);
  EXPECT_NE(r.err.find("iteration time"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("iteration time"), std::string::npos);
}

TEST(OutputPaths, SweepCsvDashAndJsonDashWriteToStdout) {
  const std::vector<std::string> sweep = {"sweep",
                                          "--preset",
                                          "llama3-8b",
                                          "--set",
                                          "model.num_layers=2",
                                          "--set",
                                          "parallel.dp=4",
                                          "--vary",
                                          "parallel.global_batch_size=8,16",
                                          "--jobs",
                                          "1"};
  auto csv = sweep;
  csv.insert(csv.end(), {"--csv", "-"});
  const auto c = run_cli(csv);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out.rfind("parallel.global_batch_size,", 0), 0u) << c.out;
  EXPECT_EQ(std::count(c.out.begin(), c.out.end(), '\n'), 3) << c.out;  // header + 2 points

  auto json = sweep;
  json.insert(json.end(), {"--json", "-"});
  const auto j = run_cli(json);
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(report::Json::parse(j.out).at("points").size(), 2u);

  auto both = sweep;
  both.insert(both.end(), {"--json", "-", "--csv", "-"});
  const auto b = run_cli(both);
  EXPECT_EQ(b.code, 2);
  EXPECT_NE(b.err.find("--csv and --json both ask for standard output"), std::string::npos)
      << b.err;
}

TEST(OutputPaths, CollectiveJsonDashIsTheResultsOnStdout) {
  const auto r = run_cli({"collective", "--gpus", "8", "--sizes", "1M", "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(report::Json::parse(r.out).at("results").size(), 1u);
  EXPECT_NE(r.err.find("busbw"), std::string::npos) << r.err;
}

// The refusal names option and path, comes before the simulation (nothing on stdout) and is a
// usage error.
void expect_refused(const std::vector<std::string>& args, const std::string& option,
                    const std::string& path, const std::string& why) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(option + " " + path + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(OutputPaths, UnwritablePathsAreRefusedBeforeSimulating) {
  const std::string missing = temp_path("no-such-folder") + "/report.json";
  expect_refused(tiny_run({"--json", missing}), "--json", missing, "does not exist");
  const std::string folder = temp_path("a-folder");
  std::filesystem::create_directories(folder);
  expect_refused(tiny_run({"--timeline", folder}), "--timeline", folder, "is a folder");
  // Not writable even for root: the kernel refuses writes to this proc file.
  expect_refused(tiny_run({"--json", "/proc/version"}), "--json", "/proc/version",
                 "cannot be written");
  expect_refused({"sweep", "--preset", "llama3-8b", "--vary", "parallel.dp=4", "--csv", missing},
                 "--csv", missing, "does not exist");
  expect_refused({"collective", "--gpus", "8", "--json", missing}, "--json", missing,
                 "does not exist");
  expect_refused({"plan", "--preset", "llama3-8b", "--gpus", "8", "--json", folder}, "--json",
                 folder, "is a folder");
  expect_refused({"memory", "--preset", "llama3-8b", "--json", missing}, "--json", missing,
                 "does not exist");
  // Traces: before the trace is built or read.
  expect_refused({"generate", "--preset", "llama3-8b", "-o", missing}, "-o", missing,
                 "does not exist");
  expect_refused({"convert", "--chakra", temp_path("no-trace"), "-o", folder}, "-o", folder,
                 "is a folder");
  const std::string prefix = temp_path("no-such-folder") + "/trace";
  expect_refused({"convert", "any.pb", "--to-chakra", prefix}, "--to-chakra",
                 prefix + ".comm_groups.json", "does not exist");
}

TEST(OutputPaths, ABinaryTraceIsNotWrittenToStdout) {
  const auto result = run_cli({"generate", "--preset", "llama3-8b", "-o", "-"});
  EXPECT_NE(result.code, 0);
  EXPECT_NE(result.err.find("a binary trace is written to a file"), std::string::npos)
      << result.err;
}

TEST(OutputPaths, AFolderWithoutWritePermissionIsRefused) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into any folder; /proc covers it above";
  const std::string folder = temp_path("read-only");
  std::filesystem::create_directories(folder);
  std::filesystem::permissions(
      folder, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  expect_refused(tiny_run({"--json", folder + "/r.json"}), "--json", folder + "/r.json",
                 "cannot be written");
  std::filesystem::permissions(folder, std::filesystem::perms::owner_all);
}

TEST(OutputPaths, TheCheckLeavesNoFileBehindWhenTheCommandFailsLater) {
  const std::string path = temp_path("never-written.json");
  std::filesystem::remove(path);
  const auto r = run_cli(tiny_run({"--set", "parallel.dp=3", "--json", path}));
  EXPECT_NE(r.code, 0);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(OutputPaths, ASweepWhosePointsWereAllSkippedExitsNonZero) {
  // TP 3 does not divide llama3-8b's 32 heads: every point fails validation.
  const std::vector<std::string> base = {
      "sweep", "--preset", "llama3-8b", "--set", "model.num_layers=2", "--jobs", "1"};
  auto bad = base;
  bad.insert(bad.end(), {"--vary", "parallel.tp=3,5"});
  const auto r = run_cli(bad);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("every point was skipped"), std::string::npos) << r.err;

  auto mixed = base;
  mixed.insert(mixed.end(), {"--set", "parallel.dp=4", "--vary", "parallel.tp=2,3"});
  const auto m = run_cli(mixed);
  EXPECT_EQ(m.code, 0) << m.out << m.err;
}

}  // namespace
}  // namespace cs::cli
