// `clustersim run` with several configs: files and presets mixed, placements, and bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/cluster_fixtures.h"

namespace cs::cli {
namespace {

using testing_support::oversubscribed_topology;
using testing_support::run_cli;
using testing_support::small_job_file;

std::string small_job() {
  return small_job_file("cli_small", oversubscribed_topology());
}

TEST(CliMultiJob, AFileAndAPresetRunTogetherWithTheirSlowdowns) {
  const std::string json = testing_support::temp_path("jobs.json");
  const auto r =
      run_cli({"run", small_job(), "--preset", "llama3-8b", "--job-set", "1:model.num_layers=2",
               "--job-set", "1:parallel.dp=4", "--job-set", "1:parallel.global_batch_size=4",
               "--placement", "spread", "--json", json});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2 jobs on oversubscribed (40 x h100"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("placement spread"), std::string::npos);
  EXPECT_NE(r.out.find("llama3-8b     TP 2 x CP 1 x PP 1 x DP 4"), std::string::npos) << r.out;
  std::stringstream text;
  text << std::ifstream(json).rdbuf();
  EXPECT_NE(text.str().find("\"slowdown\": "), std::string::npos);
  EXPECT_NE(text.str().find("\"gpu_ranges\": \"8-15\""), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"source\": \"job 1 (workloads/llama3-8b.textproto)\""),
            std::string::npos);
}

TEST(CliMultiJob, ExplicitRangesPlaceTheJobs) {
  const auto r = run_cli({"run", small_job(), small_job(), "--placement", "64-95,0-31"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("64-95"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.000x"), std::string::npos) << "racks of their own: no contention";
}

// Each bad request fails with exit code 1 or 2 and one line naming what is wrong.
void expect_error(std::vector<std::string> args, const std::string& message) {
  const auto r = run_cli(std::move(args));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(CliMultiJob, BadPlacementsAndOptionsFailWithOneLine) {
  const std::string job = small_job();
  expect_error({"run", job, job, "--placement", "tight"}, "--placement: unknown placement");
  expect_error({"run", job, job, "--placement", "0-31"}, "--placement: 1 GPU ranges for 2 jobs");
  expect_error({"run", job, job, "--placement", "0-31,16-47"},
               "--placement: ranges 0-31 (job 0) and 16-47 (job 1) share GPUs or a server");
  expect_error({"run", job, job, "--placement", "0-31,256-287"},
               "--placement: the jobs need 64 GPUs placed up to GPU 287, the cluster has 256");
  expect_error({"run", job, job, "--placement", "0-31,36-67"}, "starts inside a server");
  expect_error(
      {"run", job, job, "--set", "parallel.dp=32", "--set", "parallel.global_batch_size=32"},
      "the cluster has 256");
  expect_error({"run", job, job, "--job-set", "1:cluster.gpu=a100"},
               "cluster.gpu is \"a100\" but the shared cluster");
  expect_error({"run", job, job, "--job-set", "2:parallel.dp=2"}, "job 2 does not exist");
  expect_error({"run", job, job, "--job-set", "parallel.dp=2"}, "expected JOB:dotted.path=value");
  // A misspelt field names the option and job it came with, not --set.
  expect_error({"run", job, job, "--job-set", "1:parallel.foo=2"},
               "--job-set 1: parallel.foo: no field 'foo'");
  expect_error({"run", job, job, "--timeline", "t.json"}, "--timeline takes one job");
  expect_error({"run", job, "--placement", "spread"}, "--placement needs two or more configs");
}

}  // namespace
}  // namespace cs::cli
