// Several jobs on one cluster: no contention where they share no link, contention where they
// share rack uplinks, repeated steps, agreement with a lone step and with the unfolded run.
#include "sim/run/multi_job.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "sim/config/run_config.h"
#include "sim/run/jobs_output.h"
#include "sim/run/step_simulation.h"
#include "tests/support/cluster_fixtures.h"

namespace cs::run {
namespace {

using testing_support::error_of;
using testing_support::oversubscribed_topology;
using testing_support::small_job_file;

JobInput job(const std::string& path, std::vector<std::string> overrides = {}) {
  auto loaded = load_run_config(path, "", overrides);
  return {loaded.config, loaded.source};
}

std::vector<JobInput> two_small_jobs(std::vector<std::string> overrides = {}) {
  const std::string path = small_job_file("small", oversubscribed_topology());
  return {job(path, overrides), job(path, overrides)};
}

TEST(MultiJob, JobsInTheirOwnRacksRunAsIfAlone) {
  // Packed, each 32-GPU job fills one rack: its traffic never leaves its ToR.
  const auto r = simulate_jobs(two_small_jobs(), parse_placement("packed"));
  ASSERT_EQ(r.jobs.size(), 2u);
  for (const auto& f : r.jobs) {
    EXPECT_EQ(f.mean_step_s, f.alone_step_s);
    EXPECT_EQ(f.slowdown, 1.0);
  }
  EXPECT_EQ(r.jobs[1].gpu_ranges, "32-63");
}

TEST(MultiJob, SpreadJobsShareTheRackUplinksAndSlowDown) {
  const auto packed = simulate_jobs(two_small_jobs(), parse_placement("packed"));
  const auto spread = simulate_jobs(two_small_jobs(), parse_placement("spread"));
  for (std::size_t j = 0; j < 2; ++j) {
    const auto& f = spread.jobs[j];
    // Alone, a spread job already crosses the 4:1 uplinks; together each gets half of them.
    EXPECT_GT(f.alone_step_s, packed.jobs[j].alone_step_s);
    EXPECT_GT(f.slowdown, 1.2) << j;
    EXPECT_EQ(f.steps, 1);
    EXPECT_LE(f.slowdown, 2.0) << "no more than halving the bandwidth of each job";
  }
  EXPECT_EQ(spread.jobs[0].gpu_ranges, "0-7,16-23,32-39,48-55");
}

TEST(MultiJob, AJobAloneMatchesItsOwnStep) {
  // Job 0 packed sits on GPUs 0-31, as a lone run does, on a cluster built as large.
  const auto r = simulate_jobs(two_small_jobs(), parse_placement("packed"));
  auto config = two_small_jobs({"cluster.num_gpus=64"})[0];
  EXPECT_EQ(simulate_step(config.config, config.source).iteration_time_s, r.jobs[0].alone_step_s);
}

TEST(MultiJob, AShortJobRepeatsItsStepWhileTheLongOneRuns) {
  const std::string topo = oversubscribed_topology();
  const std::vector<JobInput> jobs = {job(small_job_file("long", topo, 4, 16)),
                                      job(small_job_file("short", topo, 4, 2))};
  const auto r = simulate_jobs(jobs, parse_placement("packed"));
  const auto& long_job = r.jobs[0];
  const auto& short_job = r.jobs[1];
  EXPECT_EQ(long_job.steps, 1);
  // No shared link: every step takes its lone time, and steps start until the long one ends.
  EXPECT_EQ(short_job.steps,
            static_cast<int>(std::ceil(long_job.alone_step_s / short_job.alone_step_s)));
  EXPECT_GE(short_job.steps, 3);
  EXPECT_NEAR(short_job.mean_step_s, short_job.alone_step_s, 1e-12);
  EXPECT_NEAR(short_job.max_step_s, short_job.alone_step_s, 1e-12);
}

TEST(MultiJob, AJobRepeatingWithoutEndFailsNamingIt) {
  const std::string topo = oversubscribed_topology();
  const std::vector<JobInput> jobs = {job(small_job_file("long", topo, 4, 16)),
                                      job(small_job_file("short", topo, 4, 2))};
  const std::string error =
      error_of([&] { simulate_jobs(jobs, parse_placement("packed"), {}, /*max_steps=*/2); });
  EXPECT_NE(error.find("short.textproto: 2 steps while another job has not finished its first"),
            std::string::npos)
      << error;
}

TEST(MultiJob, FoldingAgreesWithTheDetailedRunUnderContention) {
  const auto folded = simulate_jobs(
      two_small_jobs({"parallel.dp=8", "parallel.global_batch_size=8"}), parse_placement("spread"));
  const auto detailed =
      simulate_jobs(two_small_jobs({"parallel.dp=8", "parallel.global_batch_size=8",
                                    "simulation.fold_tensor_parallel=false",
                                    "simulation.fold_data_parallel=false"}),
                    parse_placement("spread"));
  for (std::size_t j = 0; j < 2; ++j) {
    EXPECT_NEAR(folded.jobs[j].mean_step_s / detailed.jobs[j].mean_step_s, 1.0, 0.02) << j;
    EXPECT_NEAR(folded.jobs[j].alone_step_s / detailed.jobs[j].alone_step_s, 1.0, 0.02) << j;
  }
}

TEST(MultiJob, SameJobsSameJsonBitForBit) {
  auto json = [] {
    std::ostringstream out;
    write_jobs_json(out, simulate_jobs(two_small_jobs(), parse_placement("spread")), false);
    return out.str();
  };
  const std::string a = json();
  EXPECT_EQ(a, json());
  EXPECT_NE(a.find("\"slowdown\""), std::string::npos);
}

TEST(MultiJob, RefusesWhatTheSharedClusterCannotHonour) {
  auto jobs = two_small_jobs();
  jobs[1].config.mutable_cluster()->set_gpu("a100");
  jobs[1].source = "job 1 (b.textproto)";
  jobs[0].source = "job 0 (a.textproto)";
  EXPECT_EQ(error_of([&] { simulate_jobs(jobs, parse_placement("packed")); }),
            "job 1 (b.textproto): cluster.gpu is \"a100\" but the shared cluster (job 0 "
            "(a.textproto)) has \"h100\"; jobs run on the first config's GPUs, set "
            "cluster.gpu=h100");
  jobs = two_small_jobs();
  jobs[1].config.set_network(clustersim::ANALYTICAL);
  EXPECT_NE(error_of([&] {
              simulate_jobs(jobs, parse_placement("packed"));
            }).find("network is ANALYTICAL but the shared network"),
            std::string::npos);
  jobs = two_small_jobs(
      {"variability.gpu_speed.slow_ranks=1", "variability.gpu_speed.slow_speeds=0.9"});
  EXPECT_NE(error_of([&] {
              simulate_jobs(jobs, parse_placement("packed"));
            }).find("variability is not supported with several jobs"),
            std::string::npos);
  jobs = two_small_jobs({"parallel.dp=64", "parallel.global_batch_size=64"});  // 2 x 512 GPUs
  EXPECT_NE(
      error_of([&] { simulate_jobs(jobs, parse_placement("packed")); }).find("the cluster has 256"),
      std::string::npos);
}

}  // namespace
}  // namespace cs::run
