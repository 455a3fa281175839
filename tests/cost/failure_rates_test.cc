// Interruptions by cause: the defaults against Llama 3's Table 5, the counts, overrides, bad input.
#include "sim/cost/failure_rates.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "sim/config/config_error.h"

namespace cs::cost {
namespace {

// The Llama 3 Herd of Models, section 3.3.4, Table 5: unexpected interruptions in a 54-day
// snapshot of Llama 3 405B pre-training on 16,384 H100s in 2,048 servers.
const std::map<std::string, int> kLlama3Counts = {{"faulty_gpu", 148},
                                                  {"hbm", 72},
                                                  {"software_bug", 54},
                                                  {"network_switch_cable", 35},
                                                  {"host_maintenance", 32},
                                                  {"sram", 19},
                                                  {"system_processor", 17},
                                                  {"nic", 7},
                                                  {"nccl_watchdog", 7},
                                                  {"silent_data_corruption", 6},
                                                  {"thermal", 6},
                                                  {"ssd", 3},
                                                  {"power_supply", 3},
                                                  {"chassis", 2},
                                                  {"io_expansion_board", 2},
                                                  {"dependency", 2},
                                                  {"cpu", 2},
                                                  {"system_memory", 2}};

const FleetCounts kLlama3Fleet{16384, 2048, 16384};

TEST(FailureRates, EachDefaultIsItsTableFiveCountOverTheFleetAndTheDays) {
  ASSERT_EQ(kLlama3Counts.size(), kNumFailureCauses);
  int total = 0;
  for (const FailureCause& cause : kFailureCauses) {
    const int count = kLlama3Counts.at(std::string(cause.name));
    const double units = cause.unit == FailureUnit::kServer ? 2048 : 16384;
    EXPECT_NEAR(rate_per_unit_day({}, cause) * 54 * units, count, 1e-5 * count) << cause.name;
    total += count;
  }
  EXPECT_EQ(total, 419);
}

TEST(FailureRates, EveryCauseIsAFieldOfItsUnitsMessage) {
  // The table and the schema list the same fields, so none is left out of the sum.
  const clustersim::ReliabilityConfig r;
  const int fields = r.per_gpu_day().GetDescriptor()->field_count() +
                     r.per_server_day().GetDescriptor()->field_count() +
                     r.per_nic_day().GetDescriptor()->field_count();
  EXPECT_EQ(static_cast<std::size_t>(fields), kNumFailureCauses);
}

TEST(FailureRates, TheDefaultsAddUpToLlama3sTotal) {
  const Interruptions i = interruptions_of({}, kLlama3Fleet, "x");
  EXPECT_NEAR(i.total_per_day, 419.0 / 54, 1e-5 * 419 / 54);
  double sum = 0;
  for (const double x : i.per_day) sum += x;
  EXPECT_DOUBLE_EQ(sum, i.total_per_day);
  // Per GPU on any fleet of such servers: the 4.7359e-4 per GPU-day the single rate had.
  const Interruptions small = interruptions_of({}, {64, 8, 64}, "x");
  EXPECT_NEAR(small.total_per_day / 64, 419.0 / (54 * 16384), 1e-9);
}

TEST(FailureRates, EachRateCountsItsOwnUnit) {
  clustersim::ReliabilityConfig r;
  auto* gpu = r.mutable_per_gpu_day();
  auto* server = r.mutable_per_server_day();
  auto* nic = r.mutable_per_nic_day();
  for (auto* m : {static_cast<google::protobuf::Message*>(gpu),
                  static_cast<google::protobuf::Message*>(server),
                  static_cast<google::protobuf::Message*>(nic)}) {
    for (int f = 0; f < m->GetDescriptor()->field_count(); ++f)
      m->GetReflection()->SetDouble(m, m->GetDescriptor()->field(f), 0);
  }
  gpu->set_hbm(0.01);
  server->set_cpu(0.1);
  nic->set_nic(0.02);
  // 64 GPUs in 16 servers of 4, two NICs per GPU.
  const Interruptions i = interruptions_of(r, {64, 16, 128}, "x");
  EXPECT_DOUBLE_EQ(i.per_day[1], 0.64);   // hbm
  EXPECT_DOUBLE_EQ(i.per_day[14], 1.6);   // cpu
  EXPECT_DOUBLE_EQ(i.per_day[17], 2.56);  // nic
  EXPECT_DOUBLE_EQ(i.total_per_day, 0.64 + 1.6 + 2.56);
  EXPECT_EQ(kFailureCauses[14].name, "cpu");
}

TEST(FailureRates, HalfTheGpusPerServerDoubleTheHostShare) {
  const Interruptions eight = interruptions_of({}, {1024, 128, 1024}, "x");
  const Interruptions four = interruptions_of({}, {1024, 256, 1024}, "x");
  const double host = 46.0 / (54 * 2048) * 128;  // 46 host interruptions in Table 5
  EXPECT_NEAR(four.total_per_day - eight.total_per_day, host, 1e-5 * host);
  EXPECT_DOUBLE_EQ(four.per_day[0], eight.per_day[0]);  // faulty_gpu counts GPUs only
}

TEST(FailureRates, ASetTotalKeepsTheShares) {
  clustersim::ReliabilityConfig r;
  r.set_interruptions_per_gpu_day(1e-3);
  const Interruptions scaled = interruptions_of(r, {16, 2, 16}, "x");
  const Interruptions shares = interruptions_of({}, {16, 2, 16}, "x");
  EXPECT_DOUBLE_EQ(scaled.total_per_day, 0.016);
  for (std::size_t k = 0; k < kNumFailureCauses; ++k)
    EXPECT_NEAR(scaled.per_day[k] / scaled.total_per_day, shares.per_day[k] / shares.total_per_day,
                1e-12)
        << kFailureCauses[k].name;
}

void expect_error(const clustersim::ReliabilityConfig& r, const std::string& what) {
  try {
    interruptions_of(r, {8, 1, 8}, "cfg.textproto");
    ADD_FAILURE() << what;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cfg.textproto: reliability" + what), std::string::npos)
        << e.what();
  }
}

TEST(FailureRates, BadRatesAreNamed) {
  for (const double bad : {-1e-6, double{NAN}, double{INFINITY}}) {
    clustersim::ReliabilityConfig r;
    r.mutable_per_gpu_day()->set_faulty_gpu(bad);
    expect_error(r, ".per_gpu_day.faulty_gpu");
    r = {};
    r.mutable_per_server_day()->set_system_memory(bad);
    expect_error(r, ".per_server_day.system_memory");
    r = {};
    r.mutable_per_nic_day()->set_network_switch_cable(bad);
    expect_error(r, ".per_nic_day.network_switch_cable");
    r = {};
    r.set_interruptions_per_gpu_day(bad);
    expect_error(r, ".interruptions_per_gpu_day");
  }
  clustersim::ReliabilityConfig zero;
  zero.set_interruptions_per_gpu_day(0);
  expect_error(zero, ".interruptions_per_gpu_day");
}

TEST(FailureRates, NoCauseAtAllIsRefused) {
  clustersim::ReliabilityConfig r;
  for (auto* m : {static_cast<google::protobuf::Message*>(r.mutable_per_gpu_day()),
                  static_cast<google::protobuf::Message*>(r.mutable_per_server_day()),
                  static_cast<google::protobuf::Message*>(r.mutable_per_nic_day())}) {
    for (int f = 0; f < m->GetDescriptor()->field_count(); ++f)
      m->GetReflection()->SetDouble(m, m->GetDescriptor()->field(f), 0);
  }
  expect_error(r, "'s component rates give the job no interruptions");
  // Only NICs fail, and the job has none (one server, no network).
  r.mutable_per_nic_day()->set_nic(1e-3);
  try {
    interruptions_of(r, {8, 1, 0}, "cfg.textproto");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("counts a component it lacks"), std::string::npos);
  }
  EXPECT_DOUBLE_EQ(interruptions_of(r, {8, 1, 8}, "x").total_per_day, 8e-3);
}

}  // namespace
}  // namespace cs::cost
