// Goodput under interruptions: Young's interval, the closed form, scaling with GPUs, bad input.
#include "sim/cost/goodput.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "sim/config/config_error.h"

namespace cs::cost {
namespace {

clustersim::ReliabilityConfig reliability(double per_gpu_day, double gb_per_s, double restart,
                                          double interval = 0) {
  clustersim::ReliabilityConfig r;
  r.set_interruptions_per_gpu_day(per_gpu_day);
  r.set_storage_gb_per_s(gb_per_s);
  r.set_restart_s(restart);
  r.set_checkpoint_interval_s(interval);
  return r;
}

// Servers of 8 GPUs with one NIC per GPU, as in Llama 3's cluster.
FleetCounts fleet(int64_t gpus) {
  return {gpus, std::max<int64_t>(gpus / 8, 1), gpus};
}

TEST(Goodput, DefaultsAreLlama3sFleet) {
  // 419 unexpected interruptions in 54 days on 16,384 GPUs: one every 3.09 hours.
  const Goodput g = goodput_of({}, checkpoint_bytes(405e9), fleet(16384), "x");
  EXPECT_NEAR(g.mtbf_s / 3600, 54.0 * 24 / 419, 1e-4);
  EXPECT_DOUBLE_EQ(g.checkpoint_bytes, 405e9 * 14);
  EXPECT_DOUBLE_EQ(g.write_s, 405e9 * 14 / 2e12);
  EXPECT_DOUBLE_EQ(g.restart_s, 150);
}

TEST(Goodput, YoungsIntervalAndTheClosedForm) {
  // 1,000 GPUs at 0.0864 interruptions per GPU-day: one per second per 1,000 GPUs x 1,000 s.
  const Goodput g = goodput_of(reliability(0.0864, 1, 10), 20e9, fleet(1000), "x");
  EXPECT_DOUBLE_EQ(g.mtbf_s, 1000);
  EXPECT_DOUBLE_EQ(g.write_s, 20);
  EXPECT_DOUBLE_EQ(g.interval_s, std::sqrt(2 * 20 * 1000.0));                 // 200 s
  EXPECT_NEAR(g.fraction, 1 - 20 / 200.0 - (100 + 10 + 20) / 1000.0, 1e-12);  // 0.77
  // Young's interval is the best one: shorter writes too often, longer loses more work.
  for (const double other : {50.0, 100.0, 400.0, 800.0}) {
    const Goodput o = goodput_of(reliability(0.0864, 1, 10, other), 20e9, fleet(1000), "x");
    EXPECT_DOUBLE_EQ(o.interval_s, other);
    EXPECT_LT(o.fraction, g.fraction) << other;
  }
}

TEST(Goodput, FallsWithTheGpusAndFloorsAtZero) {
  const auto r = reliability(4.736e-4, 2000, 150);
  double last = 1;
  for (const int64_t gpus : {1024, 16384, 131072}) {
    const Goodput g = goodput_of(r, checkpoint_bytes(405e9), fleet(gpus), "x");
    EXPECT_LT(g.fraction, last) << gpus;
    EXPECT_NEAR(g.mtbf_s * static_cast<double>(gpus), 86400 / 4.736e-4, 1e-3);
    last = g.fraction;
  }
  // A restart longer than the time between interruptions: nothing trains.
  EXPECT_EQ(goodput_of(reliability(1, 2000, 1e6), 1e12, fleet(1000), "x").fraction, 0.0);
}

TEST(Goodput, BadFieldsAreNamed) {
  auto expect = [](const clustersim::ReliabilityConfig& r, const std::string& field) {
    try {
      goodput_of(r, 1e12, fleet(8), "cfg.textproto");
      ADD_FAILURE() << field;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("cfg.textproto: reliability." + field),
                std::string::npos)
          << e.what();
    }
  };
  expect(reliability(0, 2000, 150), "interruptions_per_gpu_day");
  expect(reliability(-1, 2000, 150), "interruptions_per_gpu_day");
  expect(reliability(1e-3, 0, 150), "storage_gb_per_s");
  expect(reliability(1e-3, 2000, -1), "restart_s");
  expect(reliability(1e-3, 2000, 1, -5), "checkpoint_interval_s");
  expect(reliability(1e-3, 2000, INFINITY), "restart_s");
  expect(reliability(1e-3, NAN, 150), "storage_gb_per_s");
  expect(reliability(1e-3, 2000, 150, INFINITY), "checkpoint_interval_s");
  expect(reliability(INFINITY, 2000, 150), "interruptions_per_gpu_day");
  auto bad_rate = reliability(1e-3, 2000, 150);
  bad_rate.mutable_per_server_day()->set_cpu(-1e-5);
  expect(bad_rate, "per_server_day.cpu");
}

}  // namespace
}  // namespace cs::cost
