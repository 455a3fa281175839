// Tests of loading GPU profiles: every preset loads and is self-consistent, spec-sheet relations
// between GPUs hold, and bad input fails with a message that locates the problem.
#include "sim/compute/gpu_profile.h"
#include "sim/compute/gpu_hardware.h"
#include "tests/support/test_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <string>

namespace cs::compute {
namespace {

using testing_support::error_of;

constexpr const char* kMinimal = R"pb(
  name: "tiny"
  peak_bf16_tflops: 100
  peak_fp32_tflops: 50
  hbm_capacity_gb: 16
  hbm_bandwidth_tbps: 1
  hbm_efficiency: 0.9
  kernel_launch_overhead_us: 2
  sm_count: 10
  gemm { efficiency_bf16: 0.8 efficiency_fp32: 0.8 tile_m: 128 tile_n: 128 k_half: 64 }
  attention_bf16 { forward: 0.7 backward: 0.6 }
  architecture: "ampere"
  nvlinks: 4
  host {
    gpus_per_node: 4
    host_memory_gb: 512
    nvme_capacity_gb: 4000
    pcie_bandwidth_gbytes: 31.5
    nvme_bandwidth_gbytes: 7
    host_memory_bandwidth_gbytes: 200
  }
  price_per_gpu_hour: 1
)pb";

TEST(GpuProfile, PresetsIncludeTheDocumentedGpus) {
  const auto names = gpu_profile_names();
  for (const char* gpu : {"a100", "h100", "h200", "h800", "b200", "gb200", "b300", "gb300"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), gpu), names.end()) << gpu;
  }
}

TEST(GpuProfile, EveryPresetLoadsNamedAfterItsFileAndCitesSources) {
  for (const auto& name : gpu_profile_names()) {
    SCOPED_TRACE(name);
    const GpuProfile p = load_gpu_profile(name);
    EXPECT_EQ(p.name(), name);
    EXPECT_FALSE(p.sources().empty());
    // Datasheets quote sparse figures at twice the dense ones; dense TF32 sits below BF16.
    EXPECT_LT(p.peak_fp32_tflops(), p.peak_bf16_tflops());
    if (has_fp8(p)) {
      EXPECT_NEAR(p.peak_fp8_tflops(), 2 * p.peak_bf16_tflops(), 1.0);
    }
  }
}

TEST(GpuProfile, SpecSheetRelationsBetweenGpus) {
  const GpuProfile a100 = load_gpu_profile("a100");
  const GpuProfile h100 = load_gpu_profile("h100");
  const GpuProfile h200 = load_gpu_profile("h200");
  const GpuProfile h800 = load_gpu_profile("h800");
  EXPECT_FALSE(has_fp8(a100));
  // H200 and H800 are H100 compute with different memory / NVLink.
  EXPECT_EQ(h200.peak_bf16_tflops(), h100.peak_bf16_tflops());
  EXPECT_EQ(h800.peak_fp8_tflops(), h100.peak_fp8_tflops());
  EXPECT_GT(h200.hbm_bandwidth_tbps(), h100.hbm_bandwidth_tbps());
  EXPECT_GT(h200.hbm_capacity_gb(), h100.hbm_capacity_gb());
  EXPECT_LT(h800.nvlink_bandwidth_gbytes(), h100.nvlink_bandwidth_gbytes());
  EXPECT_GT(h100.peak_bf16_tflops(), 3 * a100.peak_bf16_tflops());
  // Per-direction NVLink is half the datasheet's bidirectional total.
  EXPECT_DOUBLE_EQ(nvlink_bandwidth(h100).in_gigabytes_per_s(), 900.0 / 2);
  EXPECT_DOUBLE_EQ(nvlink_bandwidth(a100).in_gigabytes_per_s(), 600.0 / 2);
  EXPECT_DOUBLE_EQ(nvlink_bandwidth(h800).in_gigabytes_per_s(), 400.0 / 2);
}

TEST(GpuProfile, FasterPrecisionMeansHigherPeakAndFp8FallsBackWithoutFp8Cores) {
  const GpuProfile h100 = load_gpu_profile("h100");
  EXPECT_GT(peak_flops(h100, Precision::kFp8), peak_flops(h100, Precision::kBf16));
  EXPECT_GT(peak_flops(h100, Precision::kBf16), peak_flops(h100, Precision::kFp32));
  const GpuProfile a100 = load_gpu_profile("a100");
  EXPECT_EQ(peak_flops(a100, Precision::kFp8), peak_flops(a100, Precision::kBf16));
}

TEST(GpuProfile, UnknownGpuListsTheKnownOnes) {
  const std::string msg = error_of([] { load_gpu_profile("b300-imaginary"); });
  EXPECT_NE(msg.find("b300-imaginary"), std::string::npos) << msg;
  for (const auto& name : gpu_profile_names()) EXPECT_NE(msg.find(name), std::string::npos) << msg;
}

// Built-in profiles are parsed once and shared under any spelling of their name; a file is read
// again at each load, so an edit between two loads shows.
TEST(GpuProfile, PresetsAreParsedOnceAndFilesReadEachTime) {
  EXPECT_EQ(load_gpu_profile("H100").SerializeAsString(),
            load_gpu_profile("h100").SerializeAsString());
  const std::string path = testing_support::temp_file("edited.textproto", kMinimal);
  EXPECT_DOUBLE_EQ(load_gpu_profile(path).peak_bf16_tflops(), 100);
  std::string edited = kMinimal;
  edited.replace(edited.find("peak_bf16_tflops: 100"), 21, "peak_bf16_tflops: 200");
  testing_support::temp_file("edited.textproto", edited);
  EXPECT_DOUBLE_EQ(load_gpu_profile(path).peak_bf16_tflops(), 200);
}

TEST(GpuProfile, SyntaxErrorsCarryFileLineAndColumn) {
  const std::string text = std::string(kMinimal) + "\n  hbm_bandwidth_tbps: fast\n";
  const std::string msg = error_of([&] { load_gpu_profile_text(text, "bad.textproto"); });
  EXPECT_TRUE(std::regex_search(msg, std::regex(R"(^bad\.textproto:\d+:\d+: )"))) << msg;
}

TEST(GpuProfile, RatesNoClockCanTimeAreRefusedByField) {
  const std::string msg = error_of([] {
    load_gpu_profile_text("name: \"slow\" based_on: \"h100\" peak_bf16_tflops: 1e-300",
                          "slow.textproto");
  });
  EXPECT_NE(msg.find("slow.textproto: peak_bf16_tflops must be in"), std::string::npos) << msg;
}

TEST(GpuProfile, NegativeCausalMaskBlocksAreRefusedByField) {
  const std::string msg = error_of([] {
    load_gpu_profile_text(
        "name: \"m\" based_on: \"h100\" attention_bf16 { causal_mask_blocks_backward: -1 }",
        "mask.textproto");
  });
  EXPECT_NE(msg.find("mask.textproto: attention_bf16.causal_mask_blocks_backward must be in"),
            std::string::npos)
      << msg;
}

TEST(GpuProfile, AnUnvectorizedRateOutsideItsRangeIsRefusedByField) {
  for (const std::string rate : {"0", "-5", "1e9"}) {
    const std::string msg = error_of([&] {
      load_gpu_profile_text(
          "name: \"r\" based_on: \"h100\" unvectorized_elementwise_gelems_per_s: " + rate,
          "rate.textproto");
    });
    EXPECT_NE(msg.find("rate.textproto: unvectorized_elementwise_gelems_per_s must be in"),
              std::string::npos)
        << rate << ": " << msg;
  }
}

TEST(GpuProfile, ATokenPermuteRateOutsideItsRangeIsRefusedByField) {
  for (const std::string rate : {"0", "-2", "1e5", "nan"}) {
    const std::string msg = error_of([&] {
      load_gpu_profile_text("name: \"p\" based_on: \"h100\" token_permute_tbps: " + rate,
                            "permute.textproto");
    });
    EXPECT_NE(msg.find("permute.textproto: token_permute_tbps must be in"), std::string::npos)
        << rate << ": " << msg;
  }
}

TEST(GpuProfile, DeepEpSmsOutsideTheGpusSmsAreRefusedByField) {
  for (const std::string sms : {"0", "-3", "133"}) {
    const std::string msg = error_of([&] {
      load_gpu_profile_text("name: \"d\" based_on: \"h100\" deepep_sms: " + sms, "sms.textproto");
    });
    EXPECT_NE(msg.find("sms.textproto: deepep_sms must be in [1, sm_count = 132]"),
              std::string::npos)
        << sms << ": " << msg;
  }
}

TEST(GpuProfile, ADeepEpTokenCostOutsideItsRangeIsRefusedByField) {
  for (const std::string field : {"deepep_call_us", "deepep_ns_per_token_peer"})
    for (const std::string us : {"-1", "2e4", "nan"}) {
      const std::string msg = error_of([&] {
        load_gpu_profile_text("name: \"c\" based_on: \"gb200\" " + field + ": " + us,
                              "call.textproto");
      });
      EXPECT_NE(msg.find("call.textproto: " + field), std::string::npos)
          << field << " " << us << ": " << msg;
    }
}

TEST(GpuProfile, AShareOutsideZeroToOneIsRefusedByField) {
  for (const std::string field :
       {"multi_tensor_hbm_efficiency", "deepep_nvlink_share", "deepep_network_share"})
    for (const std::string share : {"0", "-0.5", "1.2", "nan"}) {
      const std::string msg = error_of([&] {
        load_gpu_profile_text("name: \"m\" based_on: \"h200\" " + field + ": " + share,
                              "share.textproto");
      });
      EXPECT_NE(msg.find("share.textproto: " + field), std::string::npos)
          << field << " " << share << ": " << msg;
    }
}

TEST(GpuProfile, EmptyGemmTilesAreRefusedByField) {
  const std::string msg = error_of([] {
    load_gpu_profile_text("name: \"t\" based_on: \"h100\" gemm { more_tiles { m: 64 } }",
                          "tiles.textproto");
  });
  EXPECT_NE(msg.find("tiles.textproto: gemm.more_tiles[3] m and n must be > 0"), std::string::npos)
      << msg;
}

TEST(GpuProfile, MalformedFileOnDiskIsLocatedByPath) {
  const std::string path = testing_support::temp_path("malformed_gpu.textproto");
  {
    std::ofstream out(path);
    out << "name: \"x\"\npeak_bf16_tflops: 1\nnot_a_field: 3\n";
  }
  const std::string msg = error_of([&] { load_gpu_profile(path); });
  std::remove(path.c_str());
  // The third line holds the unknown field; protobuf points just past its name.
  EXPECT_EQ(msg.rfind(path + ":3:", 0), 0u) << msg;
  EXPECT_TRUE(std::regex_search(msg, std::regex(R"(:3:\d+: .*not_a_field)"))) << msg;
}

TEST(GpuProfile, BasedOnLaysTheFileOverItsBase) {
  const GpuProfile base = load_gpu_profile("h100");
  const GpuProfile p = load_gpu_profile_text(
      "name: \"fast_hbm\" based_on: \"h100\" hbm_bandwidth_tbps: 9 gemm { k_half: 32 } "
      "sources: \"mine\"",
      "fast_hbm.textproto");
  EXPECT_EQ(p.name(), "fast_hbm");
  EXPECT_FALSE(p.has_based_on());
  EXPECT_EQ(p.hbm_bandwidth_tbps(), 9);
  EXPECT_EQ(p.peak_bf16_tflops(), base.peak_bf16_tflops());
  // Sub-messages merge field by field; repeated fields add to the base's.
  EXPECT_EQ(p.gemm().k_half(), 32);
  EXPECT_EQ(p.gemm().efficiency_bf16(), base.gemm().efficiency_bf16());
  ASSERT_EQ(p.sources_size(), base.sources_size() + 1);
  EXPECT_EQ(p.sources(p.sources_size() - 1), "mine");
}

TEST(GpuProfile, VariantsOfOneChipShareItsKernelFigures) {
  const GpuProfile h100 = load_gpu_profile("h100");
  for (const char* name : {"h200", "h800"}) {
    const GpuProfile p = load_gpu_profile(name);
    EXPECT_EQ(p.name(), name);
    EXPECT_EQ(p.gemm().SerializeAsString(), h100.gemm().SerializeAsString()) << name;
    EXPECT_EQ(p.attention_bf16().SerializeAsString(), h100.attention_bf16().SerializeAsString());
    EXPECT_EQ(p.clocks().SerializeAsString(), h100.clocks().SerializeAsString()) << name;
  }
}

TEST(GpuProfile, BadBasesNameTheFileAndField) {
  EXPECT_NE(error_of([] {
              load_gpu_profile_text("name: \"x\" based_on: \"h999\"", "x.tp");
            }).find("x.tp: based_on: unknown GPU 'h999'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              load_gpu_profile_text("based_on: \"h100\"", "x.tp");
            }).find("x.tp: name must be set"),
            std::string::npos);
  // Two files based on each other: the loader reports the loop instead of recursing forever.
  const std::string a = testing_support::temp_path("gpu_loop_a.textproto");
  const std::string b = testing_support::temp_path("gpu_loop_b.textproto");
  std::ofstream(a) << "name: \"a\" based_on: \"" << b << "\"\n";
  std::ofstream(b) << "name: \"b\" based_on: \"" << a << "\"\n";
  const std::string msg = error_of([&] { load_gpu_profile(a); });
  std::remove(a.c_str());
  std::remove(b.c_str());
  EXPECT_NE(
      msg.find("based_on: profiles base themselves on each other: " + a + " -> " + b + " -> " + a),
      std::string::npos)
      << msg;
}

TEST(GpuProfile, NonsenseValuesNameTheField) {
  const GpuProfile ok = load_gpu_profile_text(kMinimal, "ok");
  EXPECT_EQ(ok.name(), "tiny");
  const auto msg_for = [&](auto mutate) {
    GpuProfile p = ok;
    mutate(p);
    return error_of([&] { validate_gpu_profile(p, "f"); });
  };
  EXPECT_NE(msg_for([](GpuProfile& p) { p.set_hbm_efficiency(1.5); }).find("f: hbm_efficiency"),
            std::string::npos);
  EXPECT_NE(msg_for([](GpuProfile& p) { p.set_sm_count(0); }).find("sm_count"), std::string::npos);
  EXPECT_NE(msg_for([](GpuProfile& p) {
              p.mutable_gemm()->set_efficiency_bf16(0);
            }).find("gemm.efficiency_bf16"),
            std::string::npos);
  EXPECT_NE(msg_for([](GpuProfile& p) { p.set_peak_bf16_tflops(-1); }).find("peak_bf16_tflops"),
            std::string::npos);
  // Past a petabyte the capacity no longer fits the memory model's 64-bit byte counts.
  EXPECT_NE(msg_for([](GpuProfile& p) {
              p.set_hbm_capacity_gb(1e30);
            }).find("f: hbm_capacity_gb must be in [0, 1e+06] (is 1e+30)"),
            std::string::npos);
  EXPECT_NE(msg_for([](GpuProfile& p) {
              p.mutable_host()->set_host_memory_gb(1e30);
            }).find("f: host.host_memory_gb must be in [0, 1e+06]"),
            std::string::npos);
  EXPECT_NE(msg_for([](GpuProfile& p) {
              p.mutable_clocks()->set_peak_clock_mhz(1000);
              p.mutable_clocks()->set_sustained_clock_mhz(1200);
            }).find("f: clocks.sustained_clock_mhz must be <= clocks.peak_clock_mhz"),
            std::string::npos);
  EXPECT_NE(msg_for([](GpuProfile& p) {
              p.mutable_clocks()->set_sustained_clock_mhz(1200);
            }).find("clocks.peak_clock_mhz"),
            std::string::npos);
  EXPECT_NE(msg_for([](GpuProfile& p) {
              p.add_measured_kernels()->set_time_us(0);
            }).find("measured_kernels[0].time_us"),
            std::string::npos);
}

TEST(GpuProfile, HardwareFiguresAreRequiredAndNamed) {
  const GpuProfile ok = load_gpu_profile_text(kMinimal, "ok");
  const auto msg_for = [&](auto mutate) {
    GpuProfile p = ok;
    mutate(p);
    return error_of([&] { validate_gpu_profile(p, "f"); });
  };
  const std::string unknown = msg_for([](GpuProfile& p) { p.set_architecture("rubin"); });
  EXPECT_NE(unknown.find("f: architecture: unknown GPU architecture 'rubin'"), std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("ampere, hopper, blackwell"), std::string::npos) << unknown;
  EXPECT_NE(msg_for([](GpuProfile& p) { p.clear_architecture(); }).find("f: architecture must"),
            std::string::npos);
  EXPECT_NE(msg_for([](GpuProfile& p) { p.clear_nvlinks(); }).find("f: nvlinks must be set"),
            std::string::npos);
  EXPECT_NE(msg_for([](GpuProfile& p) { p.clear_host(); }).find("f: host { ... } must be set"),
            std::string::npos);
  EXPECT_NE(msg_for([](GpuProfile& p) {
              p.mutable_host()->set_pcie_bandwidth_gbytes(0);
            }).find("f: host.pcie_bandwidth_gbytes"),
            std::string::npos);
  EXPECT_NE(msg_for([](GpuProfile& p) { p.set_price_per_gpu_hour(-1); }).find("price_per_gpu_hour"),
            std::string::npos);
  for (double bad : {0.0, 1.5}) {
    EXPECT_NE(msg_for([bad](GpuProfile& p) {
                p.set_nvlink_copy_efficiency(bad);
              }).find("f: nvlink_copy_efficiency must be in (0, 1]"),
              std::string::npos)
        << bad;
  }
}

TEST(GpuProfile, NcclFiguresComeFromTheProfile) {
  // What NCCL's model reads: DGX A100 12 NVLink 3 links and HDR 200 Gb/s = 25 GB/s; H800 8 links.
  const coll::NcclHardware a100 = nccl_hardware(load_gpu_profile("a100"));
  EXPECT_EQ(a100.arch, coll::GpuArch::kAmpere);
  EXPECT_EQ(a100.nvlinks, 12);
  EXPECT_EQ(a100.nic_gbps, 25.0);
  const coll::NcclHardware h800 = nccl_hardware(load_gpu_profile("h800"));
  EXPECT_EQ(h800.arch, coll::GpuArch::kHopper);
  EXPECT_EQ(h800.nvlinks, 8);
  EXPECT_EQ(h800.nic_gbps, 50.0);
  // NCCL's copies reach all of Hopper's NVLink figure and 95% of Blackwell's, every Blackwell
  // profile inheriting b200's figure.
  EXPECT_EQ(h800.nvlink_copy_efficiency, 1.0);
  for (const char* gpu : {"b200", "gb200", "b300", "gb300"})
    EXPECT_EQ(nccl_hardware(load_gpu_profile(gpu)).nvlink_copy_efficiency, 0.95) << gpu;
  EXPECT_EQ(default_gpu(), "h100");
  EXPECT_EQ(gpu_or_default(""), "h100");
  EXPECT_EQ(gpu_or_default("a100"), "a100");
}

TEST(GpuProfile, BlackwellProfilesFollowTheirSpecSheets) {
  const GpuProfile h100 = load_gpu_profile("h100");
  const GpuProfile b200 = load_gpu_profile("b200");
  const GpuProfile gb200 = load_gpu_profile("gb200");
  const GpuProfile b300 = load_gpu_profile("b300");
  const GpuProfile gb300 = load_gpu_profile("gb300");
  for (const GpuProfile* p : {&b200, &gb200, &b300, &gb300}) {
    SCOPED_TRACE(p->name());
    EXPECT_EQ(p->architecture(), "blackwell");
    EXPECT_EQ(p->nvlinks(), 18);
    EXPECT_EQ(p->nvlink_bandwidth_gbytes(), 900);  // NVLink 5: 18 x 50 GB/s per direction
    EXPECT_GT(p->peak_fp4_tflops(), p->peak_fp8_tflops());
    EXPECT_GT(p->peak_bf16_tflops(), 2 * h100.peak_bf16_tflops());
  }
  EXPECT_FALSE(h100.peak_fp4_tflops() > 0);  // Hopper has no FP4 tensor cores
  EXPECT_EQ(b200.peak_fp4_tflops(), 2 * b200.peak_fp8_tflops());
  // GB200 runs the B200 chip at a higher power limit; B300 adds FP4 rate, memory and CX-8.
  EXPECT_GT(gb200.peak_bf16_tflops(), b200.peak_bf16_tflops());
  EXPECT_EQ(b300.peak_bf16_tflops(), b200.peak_bf16_tflops());
  EXPECT_GT(b300.peak_fp4_tflops(), b200.peak_fp4_tflops());
  EXPECT_GT(b300.hbm_capacity_gb(), 1.4 * b200.hbm_capacity_gb());
  EXPECT_EQ(b200.nic_bandwidth_gbits(), 400);
  EXPECT_EQ(gb200.nic_bandwidth_gbits(), 400);
  EXPECT_EQ(b300.nic_bandwidth_gbits(), 800);
  EXPECT_EQ(gb300.nic_bandwidth_gbits(), 800);
  // nvidia-smi shows the rack parts more memory than the HGX ones: 189,471 and 284,208 MiB
  // against 183,359 and 275,040.
  EXPECT_NEAR(gb200.hbm_capacity_gb(), 189471.0 * 1048576 / 1e9, 1e-9);
  EXPECT_NEAR(gb300.hbm_capacity_gb(), 284208.0 * 1048576 / 1e9, 1e-9);
  EXPECT_GT(gb200.hbm_capacity_gb(), b200.hbm_capacity_gb());
  EXPECT_GT(gb300.hbm_capacity_gb(), b300.hbm_capacity_gb());
  EXPECT_EQ(gb300.host().gpus_per_node(), 4);  // Grace trays: two superchips, four GPUs
  EXPECT_EQ(b300.host().gpus_per_node(), 8);
}

}  // namespace
}  // namespace cs::compute
