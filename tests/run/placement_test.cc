// Placements of several jobs: packed, spread and explicit ranges, and every way a range is wrong.
#include "sim/run/placement.h"

#include <gtest/gtest.h>

#include "sim/config/config_error.h"
#include "tests/support/test_helpers.h"

namespace cs::run {
namespace {

using testing_support::error_of;

std::vector<std::vector<int32_t>> place(const std::string& text, std::vector<int32_t> sizes,
                                        int32_t per_server = 8, int64_t cluster = 1024) {
  return place_jobs(parse_placement(text), sizes, per_server, cluster);
}

std::vector<int32_t> iota(int32_t first, int32_t count) {
  std::vector<int32_t> v;
  for (int32_t i = 0; i < count; ++i) v.push_back(first + i);
  return v;
}

TEST(Placement, PackedPutsEachJobFromTheNextFreeServer) {
  const auto gpus = place("packed", {16, 12, 8});
  EXPECT_EQ(gpus[0], iota(0, 16));
  EXPECT_EQ(gpus[1], iota(16, 12));  // servers 2 and half of 3
  EXPECT_EQ(gpus[2], iota(32, 8));   // the rest of server 3 stays idle
}

TEST(Placement, SpreadDealsServersRoundRobinSkippingFullJobs) {
  const auto gpus = place("spread", {16, 32}, 8);
  std::vector<int32_t> job0 = iota(0, 8), job1 = iota(8, 8);
  for (const int32_t g : iota(16, 8)) job0.push_back(g);  // server 2
  for (const int32_t s : {3, 4, 5})
    for (const int32_t g : iota(s * 8, 8)) job1.push_back(g);
  EXPECT_EQ(gpus[0], job0);
  EXPECT_EQ(gpus[1], job1);
}

TEST(Placement, SpreadGivesAJobShortOfAServerItsFirstGpus) {
  const auto gpus = place("spread", {4, 4}, 8);
  EXPECT_EQ(gpus[0], iota(0, 4));
  EXPECT_EQ(gpus[1], iota(8, 4));
}

TEST(Placement, RangesPlaceEachJobOnItsGpus) {
  const auto gpus = place("64-127,0-63", {64, 64});
  EXPECT_EQ(gpus[0], iota(64, 64));
  EXPECT_EQ(gpus[1], iota(0, 64));
  EXPECT_EQ(placement_text(parse_placement("64-127,0-63")), "64-127,0-63");
}

TEST(Placement, BadInputNamesWhatIsWrong) {
  EXPECT_EQ(error_of([] { parse_placement("tight"); }),
            "--placement: unknown placement \"tight\"; use packed, spread or GPU ranges like "
            "0-511,512-1023");
  EXPECT_EQ(error_of([] { parse_placement("0-7,9"); }),
            "--placement: \"9\" is not a GPU range FIRST-LAST");
  EXPECT_EQ(error_of([] { parse_placement("8-0"); }),
            "--placement: range 8-0 ends before it starts");
  EXPECT_EQ(error_of([] { place("0-63", {64, 64}); }), "--placement: 1 GPU ranges for 2 jobs");
  EXPECT_EQ(error_of([] {
              place("0-63,64-95", {64, 64});
            }),
            "--placement: range 64-95 holds 32 GPUs, job 1 needs 64");
  EXPECT_EQ(error_of([] {
              place("0-63,32-95", {64, 64});
            }),
            "--placement: ranges 0-63 (job 0) and 32-95 (job 1) share GPUs or a server");
  EXPECT_EQ(error_of([] {
              place("0-3,4-7", {4, 4});
            }),
            "--placement: range 4-7 starts inside a server (8 GPUs each); jobs start on a server "
            "boundary");
  EXPECT_EQ(error_of([] { place("0-3,8-11", {4, 4}); }), "");
  EXPECT_EQ(error_of([] {
              place("0-63,1024-1087", {64, 64});
            }),
            "--placement: the jobs need 128 GPUs placed up to GPU 1087, the cluster has 1024");
  EXPECT_EQ(error_of([] {
              place("packed", {512, 520});
            }),
            "--placement: the jobs need 1032 GPUs placed up to GPU 1031, the cluster has 1024");
  EXPECT_EQ(error_of([] {
              place("spread", {1024, 8});
            }),
            "--placement: the jobs need 1032 GPUs placed up to GPU 1031, the cluster has 1024");
}

}  // namespace
}  // namespace cs::run
