// The kernel stretcher: a kernel runs at its isolated rate alone and at the slowdown law's rate
// for the part of it that overlaps communication of its GPU.
#include "sim/exec/kernel_stretcher.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/compute/gpu_profile.h"

namespace cs::exec {
namespace {

const InterferenceModel& stretch_h100() {
  static const InterferenceModel m = interference_model(compute::load_gpu_profile("h100"));
  return m;
}

struct Ended {
  int32_t rank;
  uint32_t op;
  Time at, stretched_by, held;
};

struct Fixture {
  Simulator sim;
  std::vector<Ended> ended;
  KernelStretcher stretcher{sim, stretch_h100(), 2,
                            [this](int32_t rank, uint32_t op, Time by, Time held) {
                              ended.push_back({rank, op, sim.now(), by, held});
                            }};
  const KernelStretcher::Shape gemm{compute::KernelKind::kGemm, 1e6, 0};
  double slowdown(CommPath path) const {
    CommLoad load;
    load += stretch_h100().load_of(path);
    return kernel_slowdown(stretch_h100(), gemm.kind, 100e-6, gemm.hbm_bytes, load, gemm.ctas);
  }
};

TEST(KernelStretcher, AKernelAloneTakesItsIsolatedTime) {
  Fixture f;
  f.stretcher.start(0, 7, f.gemm, Time::us(100));
  f.sim.run();
  ASSERT_EQ(f.ended.size(), 1u);
  EXPECT_EQ(f.ended[0].op, 7u);
  EXPECT_EQ(f.ended[0].at, Time::us(100));
  EXPECT_EQ(f.ended[0].stretched_by, Time{});
}

TEST(KernelStretcher, CommunicationThroughoutStretchesTheWholeKernel) {
  Fixture f;
  const double s = f.slowdown(CommPath::kNetworkCollective);
  ASSERT_GT(s, 1.0);
  f.stretcher.change_load(0, CommPath::kNetworkCollective, +1);
  f.stretcher.start(0, 0, f.gemm, Time::us(100));
  f.sim.run();
  ASSERT_EQ(f.ended.size(), 1u);
  EXPECT_EQ(f.ended[0].at, Time::ps(std::llround(100e6 * s)));
  EXPECT_EQ(f.ended[0].stretched_by, f.ended[0].at - Time::us(100));
}

TEST(KernelStretcher, OnlyTheOverlappedPartRunsSlower) {
  Fixture f;
  const double s = f.slowdown(CommPath::kNvlinkCollective);
  f.stretcher.start(0, 0, f.gemm, Time::us(100));
  f.sim.schedule_in(Time::us(50),
                    [&] { f.stretcher.change_load(0, CommPath::kNvlinkCollective, +1); });
  f.sim.run();
  ASSERT_EQ(f.ended.size(), 1u);
  EXPECT_EQ(f.ended[0].at, Time::us(50) + Time::ps(std::llround(50e6 * s)));
}

TEST(KernelStretcher, LoadOnAndOffAtOneInstantChangesNothing) {
  Fixture f;
  f.stretcher.start(0, 0, f.gemm, Time::us(100));
  f.sim.schedule_in(Time::us(30), [&] {
    f.stretcher.change_load(0, CommPath::kNetworkCollective, +1);
    f.stretcher.change_load(0, CommPath::kNetworkCollective, -1);
  });
  f.sim.run();
  ASSERT_EQ(f.ended.size(), 1u);
  EXPECT_EQ(f.ended[0].at, Time::us(100));
  EXPECT_EQ(f.stretcher.load(0), CommLoad{});
}

TEST(KernelStretcher, AnotherGpusCommunicationDoesNotSlowIt) {
  Fixture f;
  f.stretcher.change_load(1, CommPath::kNetworkCollective, +1);
  f.stretcher.start(0, 0, f.gemm, Time::us(100));
  f.sim.run();
  ASSERT_EQ(f.ended.size(), 1u);
  EXPECT_EQ(f.ended[0].rank, 0);
  EXPECT_EQ(f.ended[0].at, Time::us(100));
}

// A side stream's kernel holds the GPU: the compute kernel makes no progress while it runs, and
// picks up where it was, at the rate communication leaves it.
TEST(KernelStretcher, AHeldKernelPausesForTheHoldAndReportsIt) {
  Fixture f;
  f.stretcher.start(0, 0, f.gemm, Time::us(100));
  f.sim.schedule_in(Time::us(20), [&] { f.stretcher.hold(0, +1); });
  f.sim.schedule_in(Time::us(35), [&] { f.stretcher.hold(0, -1); });
  f.sim.run();
  ASSERT_EQ(f.ended.size(), 1u);
  EXPECT_EQ(f.ended[0].at, Time::us(115));
  EXPECT_EQ(f.ended[0].held, Time::us(15));
  EXPECT_EQ(f.ended[0].stretched_by, Time::us(15));
}

TEST(KernelStretcher, AKernelStartedDuringAHoldWaitsForItsEnd) {
  Fixture f;
  const double s = f.slowdown(CommPath::kNvlinkCollective);
  f.stretcher.hold(0, +1);
  f.stretcher.hold(0, +1);  // two side kernels: the GPU is free when both have ended
  f.stretcher.change_load(0, CommPath::kNvlinkCollective, +1);
  f.stretcher.start(0, 0, f.gemm, Time::us(100));
  f.sim.schedule_in(Time::us(10), [&] { f.stretcher.hold(0, -1); });
  f.sim.schedule_in(Time::us(25), [&] { f.stretcher.hold(0, -1); });
  f.sim.run();
  ASSERT_EQ(f.ended.size(), 1u);
  EXPECT_EQ(f.ended[0].at, Time::us(25) + Time::ps(std::llround(100e6 * s)));
  EXPECT_EQ(f.ended[0].held, Time::us(25));
  // The rest of the stretch is communication's.
  EXPECT_EQ(f.ended[0].stretched_by - f.ended[0].held,
            Time::ps(std::llround(100e6 * s)) - Time::us(100));
}

TEST(KernelStretcher, AHoldOnAnotherGpuDoesNotPauseIt) {
  Fixture f;
  f.stretcher.hold(1, +1);
  f.stretcher.start(0, 0, f.gemm, Time::us(100));
  f.sim.run();
  ASSERT_EQ(f.ended.size(), 1u);
  EXPECT_EQ(f.ended[0].at, Time::us(100));
  EXPECT_EQ(f.ended[0].held, Time{});
}

}  // namespace
}  // namespace cs::exec
