// cluster.gpus_per_node from the command line: a job on some GPUs of each NVL72 rack spans as
// many racks as those slices need, and a count the rack cannot hold is refused by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/test_helpers.h"

namespace cs {
namespace nvlink_domain_cli_test {

using testing_support::run_cli;

// llama3.2-1b at DP 128 on gb200-nvl72: on 32 GPUs of each rack the job spans 4 racks (the
// reliability line counts them), on all 72 it spans 2.
TEST(NvlinkDomainCli, GpusPerNodeSetsHowManyRacksAJobSpans) {
  const std::vector<std::string> job = {"run",
                                        "--preset",
                                        "llama3.2-1b",
                                        "--set",
                                        "parallel.dp=128",
                                        "--set",
                                        "cluster.gpu=gb200",
                                        "--set",
                                        "cluster.topology=gb200-nvl72"};
  std::vector<std::string> on32 = job;
  on32.insert(on32.end(), {"--set", "cluster.gpus_per_node=32"});
  const auto r32 = run_cli(on32);
  ASSERT_EQ(r32.code, 0) << r32.err;
  EXPECT_NE(r32.out.find("over 128 GPUs, 4 servers, 128 NICs"), std::string::npos) << r32.out;
  const auto all = run_cli(job);
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.out.find("over 128 GPUs, 2 servers, 128 NICs"), std::string::npos) << all.out;
}

TEST(NvlinkDomainCli, MoreGpusPerNodeThanTheRackHoldsIsRefused) {
  const auto r = run_cli({"run", "--preset", "llama3.2-1b", "--set", "cluster.topology=gb200-nvl72",
                          "--set", "cluster.gpus_per_node=80"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("cluster.gpus_per_node must be in [0, 72]"), std::string::npos) << r.err;
}

}  // namespace nvlink_domain_cli_test
}  // namespace cs
