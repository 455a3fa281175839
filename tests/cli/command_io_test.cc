// Commands writing to a given CommandIo, as the Python module runs them: the captured --json text
// is the file the CLI writes, nothing reaches the disk, and threads running commands at once
// print what one thread alone prints.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim/cli/commands.h"
#include "tests/support/test_helpers.h"

namespace cs::cli {
namespace {

struct Captured {
  int code = 0;
  std::string out, err, json;
};

// `clustersim run --preset llama3-8b` on 8 GPUs with `layers` layers, its --json kept in memory.
Captured run_small(int layers, const std::string& json_path) {
  std::map<std::string, std::string> captured{{json_path, ""}};
  std::ostringstream out, err;
  CommandIo io{out, err};
  io.terminal_progress = false;
  io.join_mpi = false;
  io.captured = &captured;
  const std::vector<std::string> args = {
      "--preset", "llama3-8b",     "--set", "model.num_layers=" + std::to_string(layers),
      "--set",    "parallel.dp=4", "--set", "parallel.global_batch_size=8",
      "--json",   json_path};
  const int code = find_command("run")->run(args, io);
  return {code, out.str(), err.str(), captured[json_path]};
}

// The report's lines that do not measure the process itself (wall time, memory).
std::string stable_lines(const std::string& text) {
  std::istringstream in(text);
  std::string kept;
  for (std::string line; std::getline(in, line);)
    if (line.find("wall_time_s") == std::string::npos &&
        line.find("peak_rss_mb") == std::string::npos && line.find("simulation ") != 2)
      kept += line + '\n';
  return kept;
}

TEST(CommandIo, ACapturedJsonIsTheFileTheCliWritesAndNeverTouchesTheDisk) {
  const std::string file = testing_support::temp_path("command_io_run.json");
  const auto cli = testing_support::run_cli(
      {"run", "--preset", "llama3-8b", "--set", "model.num_layers=2", "--set", "parallel.dp=4",
       "--set", "parallel.global_batch_size=8", "--json", file});
  ASSERT_EQ(cli.code, 0) << cli.err;
  std::stringstream written;
  written << std::ifstream(file).rdbuf();

  const std::string kept = testing_support::temp_path("command_io_kept.json");
  const Captured r = run_small(2, kept);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(kept));
  EXPECT_NE(r.json.find("\"iteration_time_s\""), std::string::npos) << r.json;
  EXPECT_EQ(stable_lines(r.json), stable_lines(written.str()));
  EXPECT_EQ(stable_lines(r.out), stable_lines(cli.out));
}

TEST(CommandIo, ThreadsRunningCommandsAtOncePrintWhatOneThreadPrints) {
  const std::vector<int> layers = {2, 4, 2, 4};
  std::vector<Captured> serial, parallel(layers.size());
  for (int n : layers) serial.push_back(run_small(n, "report.json"));
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < layers.size(); ++i)
    threads.emplace_back([&, i] { parallel[i] = run_small(layers[i], "report.json"); });
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    ASSERT_EQ(parallel[i].code, 0) << parallel[i].err;
    EXPECT_EQ(stable_lines(parallel[i].json), stable_lines(serial[i].json)) << i;
    EXPECT_EQ(stable_lines(parallel[i].out), stable_lines(serial[i].out)) << i;
  }
  EXPECT_NE(stable_lines(serial[0].json), stable_lines(serial[1].json));
}

TEST(CommandIo, AnErrorLineIsTheOneTheCliPrints) {
  const auto cli = testing_support::run_cli({"run", "--preset", "nope"});
  try {
    std::ostringstream out, err;
    CommandIo io{out, err};
    find_command("run")->run({"--preset", "nope"}, io);
    FAIL() << "an unknown preset must throw";
  } catch (const std::exception& e) {
    EXPECT_EQ(error_line("run", e) + '\n', cli.err);
  }
  EXPECT_EQ(find_command("nope"), nullptr);
}

}  // namespace
}  // namespace cs::cli
