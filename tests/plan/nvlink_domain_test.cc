// The planner's NVLink-domain line: which groups fill more than an 8-GPU server inside one NVL72
// rack, and which straddle racks.
#include "sim/plan/nvlink_domain.h"

#include <gtest/gtest.h>

namespace cs::plan {
namespace nvlink_domain_test {

clustersim::RunConfig layout(int32_t tp, int32_t dp, int32_t ep = 1) {
  clustersim::RunConfig c;
  auto& p = *c.mutable_parallel();
  p.set_tp(tp);
  p.set_cp(1);
  p.set_pp(2);
  p.set_dp(dp);
  p.set_ep(ep);
  p.set_rank_order(clustersim::ParallelConfig::TP_CP_DP_PP);
  return c;
}

TEST(NvlinkDomain, ServersSayNothing) {
  EXPECT_EQ(nvlink_domain_line(layout(8, 16), 8), "");
  EXPECT_EQ(nvlink_domain_line(layout(8, 16), 72), "");  // TP 8 fits a server anyway
}

TEST(NvlinkDomain, Tp16InsideSixtyFourOfARack) {
  EXPECT_EQ(nvlink_domain_line(layout(16, 8), 64),
            "TP 16 inside one 64-GPU NVLink domain (more GPUs than an 8-GPU server): its "
            "collectives ride NVLink rather than the NICs");
}

// 72 is not a multiple of 16: the fifth TP group (ranks 64-79) spans two racks.
TEST(NvlinkDomain, Tp16StraddlesSeventyTwo) {
  EXPECT_EQ(nvlink_domain_line(layout(16, 8), 72),
            "TP 16 straddles 72-GPU NVLink domains (crosses the NICs)");
}

TEST(NvlinkDomain, Ep64InsideARackWhileTpIsSmall) {
  const std::string line = nvlink_domain_line(layout(1, 256, 64), 64);
  EXPECT_EQ(line.find("EP 64 inside one 64-GPU NVLink domain"), 0u) << line;
  EXPECT_NE(nvlink_domain_line(layout(1, 256, 64), 72).find("EP 64 straddles"), std::string::npos);
}

}  // namespace nvlink_domain_test
}  // namespace cs::plan
