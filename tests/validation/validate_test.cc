// `clustersim validate`: the machinery (model values computed as the real models compute them,
// verdicts, filters, exit codes, errors for bad case files), and today's verdict of each built-in
// case.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/compute/gpu_profile.h"
#include "sim/compute/grouped_gemm.h"
#include "sim/compute/kernel.h"
#include "sim/compute/kernel_cost.h"
#include "sim/exec/interference.h"
#include "sim/validation/case_file.h"
#include "sim/validation/case_kinds.h"
#include "sim/validation/moe_cases.h"
#include "sim/validation/validate.h"
#include "tests/support/test_helpers.h"

namespace cs::validation {
namespace {

using testing_support::Outcome;
using testing_support::run_cli;
using testing_support::temp_file;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first number after "key": in a JSON text.
double json_number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":");
  EXPECT_NE(at, std::string::npos) << key;
  return std::stod(json.substr(at + key.size() + 3));
}

// A case file around one case body, with a published figure and tolerance.
std::string case_file(const std::string& body, double published, const std::string& unit,
                      double tolerance = 1) {
  std::ostringstream s;
  s.precision(17);
  s << "cases {\n  name: \"c\"\n  " << body << "\n  published { value: " << published << " unit: \""
    << unit << "\" source: \"test\" where: \"here\" }\n  tolerance { percent: " << tolerance
    << " reason: \"test\" }\n}\n";
  return s.str();
}

LoadedCase one_case(const std::string& body, double published, const std::string& unit) {
  auto cases = load_case_text(case_file(body, published, unit), "test.textproto");
  EXPECT_EQ(cases.size(), 1u);
  return cases.front();
}

// --- model values: exactly what the real models answer ------------------------------------------

TEST(ValidationModel, GemmIsTheKernelCostModelsAnswer) {
  const auto r = run_case(one_case("gemm { gpu: \"h100\" m: 4096 n: 2048 k: 1024 }", 1, "TFLOP/s"));
  const compute::KernelCostModel model(compute::load_gpu_profile("h100"));
  const compute::Kernel k = compute::gemm("g", 4096, 2048, 1024, 2.0);
  const double direct =
      2.0 * 4096 * 2048 * 1024 / model.time(k, compute::Precision::kBf16).as_seconds() * 1e-12;
  EXPECT_DOUBLE_EQ(r.model, direct);
  EXPECT_EQ(r.kind, "gemm");
}

// GEMMs measured together (`with`): all their FLOPs over all their times.
TEST(ValidationModel, GemmsMeasuredTogetherGiveTheirFlopsOverTheirSummedTimes) {
  const auto r = run_case(
      one_case("gemm { gpu: \"h100\" m: 4096 n: 2048 k: 1024 with { m: 1024 n: 1024 k: 8192 } }", 1,
               "TFLOP/s"));
  const compute::KernelCostModel model(compute::load_gpu_profile("h100"));
  const compute::Kernel a = compute::gemm("a", 4096, 2048, 1024, 2.0);
  const compute::Kernel b = compute::gemm("b", 1024, 1024, 8192, 2.0);
  const double seconds = model.time(a, compute::Precision::kBf16).as_seconds() +
                         model.time(b, compute::Precision::kBf16).as_seconds();
  EXPECT_DOUBLE_EQ(r.model, (a.flops + b.flops) / seconds * 1e-12);
}

TEST(ValidationModel, Fp8GemmReadsOneByteInputsAndRunsAtTheFp8Peak) {
  const auto r = run_case(one_case(
      "gemm { gpu: \"h100\" m: 8192 n: 8192 k: 8192 precision: VALIDATION_FP8 }", 1, "TFLOP/s"));
  const compute::KernelCostModel model(compute::load_gpu_profile("h100"));
  compute::Kernel k = compute::gemm("g", 8192, 8192, 8192, 1.0);
  k.bytes = 1.0 * 2 * 8192.0 * 8192 + 2.0 * 8192.0 * 8192;  // FP8 A and B, 16-bit C
  const double direct = k.flops / model.time(k, compute::Precision::kFp8).as_seconds() * 1e-12;
  EXPECT_DOUBLE_EQ(r.model, direct);
}

// MXFP8 and NVFP4 inputs are their format's bytes, block scales included (1 + 1/32 and
// 0.5 + 1/16), timed at their own precision's ceiling.
TEST(ValidationModel, BlockScaledGemmsReadTheirFormatsBytesAtTheirOwnRate) {
  const compute::KernelCostModel model(compute::load_gpu_profile("b200"));
  for (const auto& [name, bytes, precision] :
       {std::tuple{"VALIDATION_MXFP8", 1.0 + 1.0 / 32, compute::Precision::kMxfp8},
        std::tuple{"VALIDATION_NVFP4", 0.5 + 1.0 / 16, compute::Precision::kNvfp4}}) {
    const auto r = run_case(one_case(
        std::string("gemm { gpu: \"b200\" m: 8192 n: 8192 k: 8192 precision: ") + name + " }", 1,
        "TFLOP/s"));
    compute::Kernel k = compute::gemm("g", 8192, 8192, 8192, bytes);
    k.bytes = bytes * 2 * 8192.0 * 8192 + 2.0 * 8192.0 * 8192;  // quantized A and B, 16-bit C
    EXPECT_DOUBLE_EQ(r.model, k.flops / model.time(k, precision).as_seconds() * 1e-12) << name;
  }
}

TEST(ValidationModel, AttentionIsTheKernelCostModelsAnswer) {
  const auto r = run_case(one_case(
      "attention { gpu: \"h100\" batch: 2 heads: 16 seq_len: 8192 head_dim: 128 causal: true "
      "backward: true }",
      1, "TFLOP/s"));
  const compute::KernelCostModel model(compute::load_gpu_profile("h100"));
  const compute::Kernel a = compute::attention("a", 32, 8192, 8192, 128, true, true, 2.0);
  // FlashAttention's count: 4·s²·d per head forward, halved causal, 2.5x backward.
  const double flops = 2.5 * 0.5 * 4.0 * 32 * 8192.0 * 8192.0 * 128;
  EXPECT_DOUBLE_EQ(a.flops, flops);
  EXPECT_DOUBLE_EQ(r.model, flops / model.time(a, compute::Precision::kBf16).as_seconds() * 1e-12);
}

// DeepSeek-V3's MLA: queries and keys 192 wide, values 128, 128 heads over 128 KV heads; and a
// grouped-query case whose 64 heads share 8 KV heads: the case's kernel is the one the runs build.
TEST(ValidationModel, AttentionCasesTakeMlaWidthsAndGroupedKvHeads) {
  const compute::KernelCostModel model(compute::load_gpu_profile("h200"));
  const auto mla = run_case(one_case(
      "attention { gpu: \"h200\" batch: 1 heads: 128 seq_len: 8192 head_dim: 192 v_head_dim: 128 "
      "causal: true }",
      1, "TFLOP/s"));
  const compute::Kernel a = compute::attention("a", 128, 8192, 8192, 192, true, false, 2.0, 1, 128);
  EXPECT_DOUBLE_EQ(a.flops, 0.5 * 2.0 * 128 * 8192.0 * 8192.0 * (192 + 128));
  EXPECT_DOUBLE_EQ(mla.model,
                   a.flops / model.time(a, compute::Precision::kBf16).as_seconds() * 1e-12);
  const auto gqa = run_case(one_case(
      "attention { gpu: \"h200\" batch: 1 heads: 64 kv_heads: 8 seq_len: 2048 head_dim: 128 }", 1,
      "TFLOP/s"));
  const compute::Kernel g = compute::attention("g", 64, 2048, 2048, 128, false, false, 2.0, 8);
  EXPECT_DOUBLE_EQ(gqa.model,
                   g.flops / model.time(g, compute::Precision::kBf16).as_seconds() * 1e-12);
}

// GB200's attention figures are per boost clock (measured_at_sustained_clock false): a case
// measured at the boost clock takes them as they are, any other the sustained clock's share.
TEST(ValidationModel, AttentionAtTheBoostClockLeavesOutTheSustainedDerating) {
  const std::string shape =
      "gpu: \"gb200\" batch: 2 heads: 64 kv_heads: 8 seq_len: 8192 head_dim: 128 backward: true";
  const double boost =
      run_case(one_case("attention { " + shape + " at_boost_clock: true }", 1, "TFLOP/s")).model;
  const double sustained = run_case(one_case("attention { " + shape + " }", 1, "TFLOP/s")).model;
  const compute::GpuProfile gb200 = compute::load_gpu_profile("gb200");
  const auto& clocks = gb200.clocks();
  ASSERT_LT(clocks.sustained_clock_mhz(), clocks.peak_clock_mhz());
  // The backward's helper kernels run at HBM speed, not the clock: the loop alone scales.
  EXPECT_LT(sustained, boost * (clocks.sustained_clock_mhz() / clocks.peak_clock_mhz() + 0.02));
  EXPECT_GT(sustained, boost * clocks.sustained_clock_mhz() / clocks.peak_clock_mhz());
  // A GPU with no sustained clock figure is the same either way.
  const std::string h100 =
      "gpu: \"h100\" batch: 2 heads: 16 seq_len: 8192 head_dim: 128 backward: true";
  EXPECT_EQ(
      run_case(one_case("attention { " + h100 + " at_boost_clock: true }", 1, "TFLOP/s")).model,
      run_case(one_case("attention { " + h100 + " }", 1, "TFLOP/s")).model);
}

TEST(ValidationModel, Fp8AttentionRunsTheFp8Kernel) {
  const std::string shape = "gpu: \"h100\" batch: 1 heads: 8 seq_len: 16384 head_dim: 256";
  const double bf16 = run_case(one_case("attention { " + shape + " }", 1, "TFLOP/s")).model;
  const double fp8 =
      run_case(one_case("attention { " + shape + " precision: VALIDATION_FP8 }", 1, "TFLOP/s"))
          .model;
  // The FP8 peak is twice BF16's: the FP8 forward must beat the BF16 one.
  EXPECT_GT(fp8, 1.5 * bf16);
}

// Whatever `clustersim collective` prints is what a collective case must report.
double cli_busbw(const clustersim::CollectiveCase& c) {
  const std::string json = testing_support::temp_path("validation_collective.json");
  std::vector<std::string> args{"collective",
                                "--op",
                                c.op(),
                                "--algo",
                                c.algo(),
                                "--topology",
                                c.topology(),
                                "--gpus",
                                std::to_string(c.gpus()),
                                "--sizes",
                                std::to_string(c.size_bytes()),
                                "--network",
                                c.network(),
                                "--json",
                                json};
  if (c.fluid()) args.push_back("--fluid");
  if (c.gpus_per_node() > 0) {
    args.insert(args.end(), {"--gpus-per-node", std::to_string(c.gpus_per_node())});
  }
  const clustersim::NcclConfig& nccl = c.nccl();
  if (!nccl.nvls()) args.insert(args.end(), {"--nvls", "off"});
  if (!nccl.pat()) args.insert(args.end(), {"--pat", "off"});
  if (nccl.channels() > 0) args.insert(args.end(), {"--channels", std::to_string(nccl.channels())});
  const auto r = run_cli(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return json_number(read(json), "busbw_gbytes_per_s");
}

// Bytes over the memory-bound kernel's time, launch included: 1 GB on an H100 streams at its
// achievable bandwidth (0.9 x 3.35 TB/s) less a hair for the 2 us launch.
TEST(ValidationModel, MemoryIsTheKernelCostModelsAnswer) {
  const auto r = run_case(one_case("memory { gpu: \"h100\" bytes: 1e9 }", 1, "TB/s"));
  const compute::KernelCostModel model(compute::load_gpu_profile("h100"));
  const compute::Kernel k = compute::memory_bound("m", 1e9);
  EXPECT_DOUBLE_EQ(r.model, 1e9 / model.time(k, compute::Precision::kBf16).as_seconds() * 1e-12);
  EXPECT_NEAR(r.model, 1e9 / (1e9 / (0.9 * 3.35e12) + 2e-6) * 1e-12, 1e-8);  // ps rounding
  EXPECT_EQ(r.kind, "memory");
}

TEST(ValidationModel, CollectiveIsWhatTheCollectiveCommandMeasures) {
  const auto r = run_case(
      one_case("collective { op: \"all_reduce\" algo: \"auto\" topology: \"dgx-h100\" gpus: 16 "
               "size_bytes: 1073741824 }",
               1, "GB/s"));
  clustersim::CollectiveCase c;
  c.set_op("all_reduce");
  c.set_topology("dgx-h100");
  c.set_gpus(16);
  c.set_size_bytes(1073741824);
  EXPECT_DOUBLE_EQ(r.model, cli_busbw(c));
}

// A case's NCCL environment and partition are the run's: NVLS off on two H100 servers leaves
// NCCL the ring or tree (NVLS-tree otherwise), and 8 GPUs of each of 3 GB200 racks run over their
// 8 NICs where 24 GPUs of one rack would stay on NVLink.
TEST(ValidationModel, CollectiveCasesRunInTheMeasuredEnvironment) {
  const std::string two_servers =
      "op: \"all_reduce\" topology: \"dgx-h100\" gpus: 16 size_bytes: 8589934592";
  const auto nvls = run_case(one_case("collective { " + two_servers + " }", 1, "GB/s"));
  const auto off =
      run_case(one_case("collective { " + two_servers + " nccl { nvls: false } }", 1, "GB/s"));
  EXPECT_NE(nvls.model, off.model);
  const std::string racks =
      "op: \"all_reduce\" topology: \"gb200-nvl72\" gpus: 24 size_bytes: 4294967296 nccl { "
      "nvls: false }";
  const auto one_rack = run_case(one_case("collective { " + racks + " }", 1, "GB/s"));
  const auto three = run_case(one_case("collective { " + racks + " gpus_per_node: 8 }", 1, "GB/s"));
  EXPECT_GT(one_rack.model, 600);         // NVLink 5
  EXPECT_LT(three.model, 8 * 50 * 1.01);  // 8 NICs of 400 Gb/s
  EXPECT_GT(three.model, 8 * 40);
}

// The one built-in case that simulates 16 million events (twenty GB200 racks' chain tree, message
// by message): 16 s in the plain build, over 5 minutes under the sanitizers, which run the same
// code in every smaller collective case. The sanitized suite leaves it to the plain one.
bool left_to_the_plain_build(const LoadedCase& c) {
  return testing_support::kUnderSanitizer &&
         c.spec.name() == "nccl-gb200-nvl72-20rack-1440gpu-allreduce-default-16g";
}

TEST(ValidationModel, EveryBuiltinCollectiveCaseMatchesTheCollectiveCommand) {
  int checked = 0;
  for (const auto& c : load_builtin_cases()) {
    if (!c.spec.has_collective() || left_to_the_plain_build(c)) continue;
    EXPECT_DOUBLE_EQ(run_case(c).model, cli_busbw(c.spec.collective())) << c.spec.name();
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(ValidationModel, InterferenceIsTheExecutorsSlowdownLaw) {
  const auto r = run_case(one_case(
      "interference { gemm { gpu: \"h100\" m: 2048 n: 2048 k: 2048 } collective { op: "
      "\"all_gather\" topology: \"dgx-h100\" gpus: 8 size_bytes: 1048576 } comm_ctas: 24 }",
      1.7, "x"));
  const auto gpu = compute::load_gpu_profile("h100");
  const auto model = exec::interference_model(gpu);
  exec::CommLoad load = model.load_of(exec::CommPath::kNvlinkCollective);
  load.sms = 24;
  const auto gemm = compute::gemm("g", 2048, 2048, 2048, 2);
  const compute::KernelCostModel cost(gpu);
  const double alone = cost.time(gemm, compute::Precision::kBf16).as_seconds();
  EXPECT_DOUBLE_EQ(r.model, exec::kernel_slowdown(model, gemm.kind, alone, gemm.bytes, load,
                                                  cost.gemm_ctas(gemm)));
  // A tensor-core kernel loses at least the SMs NCCL holds.
  EXPECT_GE(r.model, 132.0 / (132 - 24));
}

TEST(ValidationModel, InterferenceCountsWavesOverTheGemmCtasTheSourceReports) {
  // 2048^3 in 128 x 256 tiles: 16 x 8 = 128 CTAs, one wave on 132 SMs and on 108: 2 waves only
  // when the source says the kernel launched 132 blocks.
  const std::string body =
      "interference { gemm { gpu: \"h100\" m: 2048 n: 2048 k: 2048 } collective { op: "
      "\"all_gather\" topology: \"dgx-h100\" gpus: 8 size_bytes: 1048576 } comm_ctas: 24";
  EXPECT_DOUBLE_EQ(run_case(one_case(body + " gemm_ctas: 132 }", 1.7, "x")).model, 2.0);
  EXPECT_DOUBLE_EQ(run_case(one_case(body + " gemm_ctas: 100 }", 1.7, "x")).model, 1.0);
}

TEST(ValidationModel, GroupedGemmIsTheGroupedKernelModel) {
  const auto r = run_case(
      one_case("grouped_gemm { gpu: \"h100\" groups: 16 m: 2048 n: 768 k: 2048 }", 1, "TFLOP/s"));
  const compute::KernelCostModel model(compute::load_gpu_profile("h100"));
  const std::vector<compute::Kernel> experts(16, compute::gemm("g", 2048, 768, 2048, 2.0));
  const double flops = 16 * 2.0 * 2048 * 768 * 2048;
  EXPECT_DOUBLE_EQ(
      r.model,
      flops / compute::grouped_gemm_time(model, experts, compute::Precision::kBf16).as_seconds() *
          1e-12);
  EXPECT_EQ(r.kind, "grouped_gemm");
}

// Hugging Face's RMSNorm forward on an H200 (stacks/deepspeed_zero.textproto): eight kernels,
// each paying a launch; the upcast, the product with the per-row rsqrt and the product with the
// weight walk their elements at the profile's unvectorized rate, the rest stream their bytes.
TEST(ValidationModel, StackKernelsTimeTheProfilesRowsAsARunDoes) {
  const compute::GpuProfile h200 = compute::load_gpu_profile("h200");
  const double bw = compute::achievable_hbm_bandwidth(h200).in_bytes_per_s();
  const double rate = h200.unvectorized_elementwise_gelems_per_s() * 1e9;
  const double rows = 8192, n = rows * 2048;
  const double slow = [&] {
    double s = 0;
    for (const double bytes : {6.0, 8.0, 4.0}) s += std::max(bytes * n / bw, n / rate);
    return s;
  }();
  const double expected_us = 8 * h200.kernel_launch_overhead_us() +
                             1e6 * ((8.0 + 4.0 + 6.0) * n / bw + 2 * 8.0 * rows / bw + slow);
  const auto r = run_case(one_case(
      "stack_kernels { gpu: \"h200\" stack: \"deepspeed_zero\" slots: NORM_FORWARD rows: 8192 "
      "hidden: 2048 }",
      200, "us"));
  EXPECT_EQ(r.kind, "stack_kernels");
  EXPECT_NEAR(r.model, expected_us, 1e-6 * expected_us);
  EXPECT_GT(slow, (6.0 + 8.0 + 4.0) * n / bw);  // the element rate is what binds here
}

clustersim::AllToAllCase all_to_all_case(const std::string& body) {
  return one_case("all_to_all { " + body + " }", 1, "GB/s").spec.all_to_all();
}

// 1 GB over 8 H100s: 7/8 of it crosses NVLink, at 20.6 of 25 GB/s per link with the wire costs
// (nccl_plan's Hopper payload efficiency), at 450 GB/s line rate without.
TEST(ValidationModel, NcclAllToAllRunsNvlinkAtItsPayloadEfficiency) {
  const auto a = all_to_all_case(
      "topology: \"dgx-h100\" gpus: 8 metric: NCCL_TESTS_BUSBW size_bytes: 1073741824");
  EXPECT_NEAR(all_to_all_gbps(a), 450 * 20.6 / 25, 0.005 * 450);
  EXPECT_NEAR(all_to_all_gbps(a, false), 450, 0.005 * 450);
  EXPECT_EQ(run_case(one_case("all_to_all { topology: \"dgx-h100\" gpus: 8 metric: "
                              "NCCL_TESTS_BUSBW size_bytes: 1073741824 }",
                              1, "GB/s"))
                .model,
            all_to_all_gbps(a));
}

// DeepSeek-V3's EP 64 over 8 H800 servers is NIC-bound: the wire costs take the NIC from 50 to
// NCCL's 48 GB/s and DeepEP's share of it (h800 deepep_network_share 0.931) to 44.7, and DeepEP's
// RDMA metric follows.
TEST(ValidationModel, DeepEpRdmaMetricFollowsTheNic) {
  const std::string ep64 =
      "topology: \"h800-cluster\" gpus: 64 metric: DEEPEP_RDMA tokens: 4096 hidden: 7168 "
      "top_k: 8 max_nodes: 4 fp8: true";
  const double on = all_to_all_gbps(all_to_all_case(ep64));
  const double off = all_to_all_gbps(all_to_all_case(ep64), false);
  const double nic = 48 * 0.931;
  EXPECT_NEAR(off / on, 50.0 / nic, 0.01);
  // Each token crosses to 4 servers of 8, its own among them half the time: 3.5 of its 4
  // counted servers go over the NIC, so the metric reads 4 / 3.5 of the NIC rate.
  EXPECT_NEAR(on, nic * 4 / 3.5, 0.02 * nic * 4 / 3.5);
}

// DeepEP inside one H800 server: a rank receives each token once when one of its 32 experts is
// among the token's 8 (1 - (7/8)^8 of them), 7/8 of those over NVLink, at 200 GB/s x NCCL's
// payload efficiency (20.6 of 25) x DeepEP's share (0.815); the metric counts all of them.
TEST(ValidationModel, DeepEpNvlinkMetricCountsEachTokenOncePerRank) {
  const std::string ep8 =
      "topology: \"h800-cluster\" gpus: 8 metric: DEEPEP_NVL tokens: 4096 hidden: 7168 "
      "top_k: 8 fp8: true";
  const double nvlink = 200 * 20.6 / 25 * 0.815;
  EXPECT_NEAR(all_to_all_gbps(all_to_all_case(ep8)), nvlink * 8 / 7, 0.01 * nvlink * 8 / 7);
  // Across servers the metric is refused, naming the field.
  EXPECT_THROW(
      {
        try {
          check_all_to_all(all_to_all_case("topology: \"h800-cluster\" gpus: 16 metric: DEEPEP_NVL "
                                           "tokens: 4096 hidden: 7168 top_k: 8"),
                           "case x");
        } catch (const std::exception& e) {
          EXPECT_NE(std::string(e.what()).find("DEEPEP_NVL"), std::string::npos);
          throw;
        }
      },
      std::exception);
}

// --- verdicts
// -------------------------------------------------------------------------------------

TEST(ValidationVerdict, ToleranceIsInclusiveAndSymmetric) {
  EXPECT_EQ(judge(5.0, 5.0), Verdict::kPass);
  EXPECT_EQ(judge(-5.0, 5.0), Verdict::kPass);
  EXPECT_EQ(judge(5.01, 5.0), Verdict::kFail);
  EXPECT_EQ(judge(-5.01, 5.0), Verdict::kFail);
  EXPECT_EQ(judge(std::nan(""), 5.0), Verdict::kFail);
}

TEST(ValidationVerdict, ErrorIsRelativeToThePublishedValue) {
  const std::string body = "gemm { gpu: \"h100\" m: 4096 n: 4096 k: 4096 }";
  const double model = run_case(one_case(body, 1, "TFLOP/s")).model;
  const auto r = run_case(one_case(body, model / 1.25, "TFLOP/s"));
  EXPECT_NEAR(r.error_pct, 25.0, 1e-9);
  EXPECT_EQ(r.verdict, Verdict::kFail);
}

// --- the built-in cases
// ---------------------------------------------------------------------------

TEST(ValidationCases, BuiltinCasesLoadAndCoverEveryKind) {
  const auto cases = load_builtin_cases();
  std::set<std::string> kinds;
  for (const auto& c : cases) {
    kinds.insert(std::string(kind_of(c.spec)->name));
    EXPECT_TRUE(c.file.starts_with("workloads/validation/")) << c.file;
    EXPECT_FALSE(c.spec.published().source().empty()) << c.spec.name();
    EXPECT_FALSE(c.spec.tolerance().reason().empty()) << c.spec.name();
  }
  for (const auto& k : case_kinds()) EXPECT_TRUE(kinds.count(std::string(k.name))) << k.name;
}

// Today's verdicts: every built-in case passes unless its file gives a known gap, and every case
// with a known gap fails. A model change that breaks a passing case fails this test, and one that
// closes a gap has to remove the case's known_gap.
TEST(ValidationCases, BuiltinCasesPassUnlessTheyGiveAKnownGap) {
  int gaps = 0;
  for (const auto& c : load_builtin_cases()) {
    if (left_to_the_plain_build(c)) continue;
    const CaseResult r = run_case(c);
    const bool gap = c.spec.has_known_gap();
    gaps += gap ? 1 : 0;
    EXPECT_EQ(r.verdict, gap ? Verdict::kFail : Verdict::kPass)
        << c.spec.name() << ": model " << r.model << ", error " << r.error_pct << "%";
  }
  // A new gap is a decision taken here too, not only in a case file: the three Hopper clock and
  // tail-wave gaps; B200 block-scaled GEMMs of a thousand rows (gemm.textproto); H200 BF16 and
  // FP8 GEMMs alone back to back, at a lower clock than a training step's mix, and a layer's FP8
  // GEMMs inside its mix (gemm.textproto); a small all-to-all's time on one Hopper server
  // (collectives.textproto); NCCL's ring between 256 Alps nodes, whose median run has a plugin's
  // costs the model leaves out (collectives.textproto).
  EXPECT_EQ(gaps, 10);
}

// --- the command
// ----------------------------------------------------------------------------------

TEST(ValidateCommand, ExitsOneWhenACaseFailsAndZeroWhenAllPass) {
  const std::string body = "gemm { gpu: \"h100\" m: 4096 n: 4096 k: 4096 }";
  const double model = run_case(one_case(body, 1, "TFLOP/s")).model;
  const auto pass =
      run_cli({"validate", "--file",
               temp_file("pass.textproto", case_file(body, model * 1.005, "TFLOP/s"))});
  EXPECT_EQ(pass.code, 0) << pass.out << pass.err;
  EXPECT_NE(pass.out.find("| PASS |"), std::string::npos);
  const auto fail = run_cli(
      {"validate", "--file", temp_file("fail.textproto", case_file(body, model * 2, "TFLOP/s"))});
  EXPECT_EQ(fail.code, 1);
  EXPECT_NE(fail.out.find("| FAIL |"), std::string::npos);
  EXPECT_NE(fail.out.find("1 failed"), std::string::npos);
}

TEST(ValidateCommand, PrintsKnownGapsAndFlagsOnesThatNoLongerFail) {
  const std::string body = "gemm { gpu: \"h100\" m: 4096 n: 4096 k: 4096 }";
  const double model = run_case(one_case(body, 1, "TFLOP/s")).model;
  const std::string gap = "  known_gap: \"no clock figure\"\n";
  const auto plain = run_cli(
      {"validate", "--file", temp_file("no_gap.textproto", case_file(body, model * 2, "TFLOP/s"))});
  EXPECT_EQ(plain.out.find("known gap"), std::string::npos) << plain.out;
  auto with_gap = [&](double published) {
    std::string text = case_file(body, published, "TFLOP/s");
    return text.insert(text.rfind('}'), gap);
  };
  const auto failing =
      run_cli({"validate", "--file", temp_file("gap_fail.textproto", with_gap(model * 2))});
  EXPECT_EQ(failing.code, 1);  // a known gap is still a failure
  EXPECT_NE(failing.out.find("Failing for a known gap"), std::string::npos) << failing.out;
  EXPECT_NE(failing.out.find("- c: no clock figure"), std::string::npos) << failing.out;
  const auto passing =
      run_cli({"validate", "--file", temp_file("gap_pass.textproto", with_gap(model))});
  EXPECT_EQ(passing.code, 0);
  EXPECT_NE(passing.out.find("still marked with a known gap"), std::string::npos) << passing.out;
}

TEST(ValidateCommand, FiltersByKindAndCase) {
  const auto gemm = run_cli({"validate", "--kind", "gemm"});
  EXPECT_NE(gemm.out.find("| gemm |"), std::string::npos);
  EXPECT_EQ(gemm.out.find("| collective |"), std::string::npos);
  const auto one = run_cli({"validate", "--case", "nccl-h100-8gpu-allgather-1g"});
  EXPECT_NE(one.out.find("1 cases"), std::string::npos) << one.out << one.err;
  const auto prefix = run_cli({"validate", "--case", "nccl-h100-*"});
  EXPECT_EQ(prefix.out.find("nccl-a100"), std::string::npos);
  EXPECT_NE(prefix.out.find("nccl-h100-8gpu-allreduce-ring-1g"), std::string::npos);
  EXPECT_EQ(run_cli({"validate", "--kind", "bogus"}).code, 2);
  EXPECT_EQ(run_cli({"validate", "--case", "no-such-case"}).code, 2);
}

// The Hopper collective cases (ring, tree, NVLS, NVLS-tree; 8 to 1,984 GPUs) stand for the
// kind: the 1,440-GPU GB200 chain tree alone takes most of the kind's time (minutes under the
// sanitizers), and the tests above run it in the plain build.
TEST(ValidateCommand, JsonHoldsEveryCaseAndIsReproducible) {
  const std::string json = testing_support::temp_path("validation.json");
  const std::vector<std::string> args = {"validate", "--kind", "collective", "--case",
                                         "nccl-h*",  "--json", json};
  const auto first = run_cli(args);
  const std::string text = read(json);
  EXPECT_NE(text.find("\"results\""), std::string::npos);
  // One result per row of the table the command printed.
  int rows = 0;
  for (std::size_t at = first.out.find("\n| nccl-"); at != std::string::npos;
       at = first.out.find("\n| nccl-", at + 1))
    ++rows;
  EXPECT_GE(rows, 10);
  EXPECT_NE(text.find("\"cases\": " + std::to_string(rows) + ","), std::string::npos)
      << rows << " rows; " << text.substr(0, 200);
  for (const std::string name :
       {"nccl-h100-8gpu-allreduce-ring-1g", "nccl-h100-16gpu-2node-allreduce-default-8g",
        "nccl-h200-1984gpu-248node-allreduce-default-512m"})
    EXPECT_NE(text.find("\"" + name + "\""), std::string::npos) << name;
  const auto second = run_cli(args);
  EXPECT_EQ(first.out, second.out);
  EXPECT_EQ(read(json), text);
}

// --- bad case files
// -------------------------------------------------------------------------------

// Runs the command on `text` and returns stderr; expects exit code 1.
std::string error_for(const std::string& file, const std::string& text) {
  const auto r = run_cli({"validate", "--file", temp_file(file, text)});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
  return r.err;
}

TEST(ValidateCommand, SyntaxErrorsNameFileLineAndColumn) {
  const auto err = error_for("syntax.textproto", "cases {\n  name: \"x\"\n  gemm { m: }\n}\n");
  EXPECT_NE(err.find("syntax.textproto:3:"), std::string::npos) << err;
}

TEST(ValidateCommand, MissingOrSenselessFieldsNameTheCaseAndField) {
  const std::string gemm = "gemm { gpu: \"h100\" m: 64 n: 64 k: 64 }";
  EXPECT_NE(error_for("zero.textproto",
                      case_file("gemm { gpu: \"h100\" m: 0 n: 64 k: 64 }", 10, "TFLOP/s"))
                .find("cases[0] \"c\": gemm.m must be >= 1"),
            std::string::npos);
  EXPECT_NE(
      error_for("with.textproto",
                case_file("gemm { gpu: \"h100\" m: 64 n: 64 k: 64 with { m: 64 n: 0 k: 64 } }", 10,
                          "TFLOP/s"))
          .find("gemm.with[0].n must be >= 1"),
      std::string::npos);
  EXPECT_NE(error_for("unit.textproto", case_file(gemm, 10, "GB/s")).find("published.unit"),
            std::string::npos);
  EXPECT_NE(error_for("nokind.textproto",
                      "cases { name: \"c\" published { value: 1 unit: \"x\" source: \"s\" "
                      "where: \"w\" } tolerance { percent: 1 reason: \"r\" } }")
                .find("one of gemm, attention, collective, collective_latency, interference"),
            std::string::npos);
  EXPECT_NE(error_for("nosource.textproto",
                      "cases { name: \"c\" " + gemm +
                          " published { value: 1 unit: \"TFLOP/s\" where: \"w\" } tolerance { "
                          "percent: 1 reason: \"r\" } }")
                .find("published.source must be set"),
            std::string::npos);
  EXPECT_NE(error_for("noreason.textproto",
                      "cases { name: \"c\" " + gemm +
                          " published { value: 1 unit: \"TFLOP/s\" source: \"s\" where: \"w\" } "
                          "tolerance { percent: 1 } }")
                .find("tolerance.reason must be set"),
            std::string::npos);
  EXPECT_NE(error_for("op.textproto",
                      case_file("collective { op: \"all_sum\" topology: \"dgx-h100\" gpus: 8 "
                                "size_bytes: 1024 }",
                                10, "GB/s"))
                .find("collective.op"),
            std::string::npos);
  EXPECT_NE(error_for("groups.textproto",
                      case_file("grouped_gemm { gpu: \"h100\" groups: 0 m: 64 n: 64 k: 64 }", 10,
                                "TFLOP/s"))
                .find("grouped_gemm.groups must be >= 1"),
            std::string::npos);
  EXPECT_NE(error_for("a2a.textproto",
                      case_file("all_to_all { topology: \"dgx-h100\" gpus: 8 metric: DEEPEP_RDMA "
                                "tokens: 64 hidden: 0 top_k: 2 }",
                                10, "GB/s"))
                .find("all_to_all.hidden must be >= 1"),
            std::string::npos);
  EXPECT_NE(error_for("bytes.textproto", case_file("memory { gpu: \"h100\" bytes: 0 }", 3, "TB/s"))
                .find("cases[0] \"c\": memory.bytes must be > 0"),
            std::string::npos);
  EXPECT_NE(error_for("stack.textproto",
                      case_file("stack_kernels { gpu: \"h200\" stack: \"deepspeed_zero\" "
                                "slots: NORM_FORWARD rows: 0 hidden: 64 }",
                                3, "us"))
                .find("cases[0] \"c\": stack_kernels.rows must be in [1, 100000000]"),
            std::string::npos);
  EXPECT_NE(
      error_for("nostack.textproto", case_file("stack_kernels { gpu: \"h200\" stack: \"nosuch\" "
                                               "slots: NORM_FORWARD rows: 8 hidden: 64 }",
                                               3, "us"))
          .find("cases[0] \"c\": stack_kernels.stack: unknown stack profile 'nosuch'"),
      std::string::npos);
  // The optimizer's rows count parameters, which a stack_kernels case does not size.
  EXPECT_NE(error_for("extent.textproto",
                      case_file("stack_kernels { gpu: \"h200\" stack: \"pytorch_fsdp2\" "
                                "slots: OPTIMIZER rows: 8 hidden: 64 }",
                                3, "us"))
                .find("cases[0] \"c\": stack_kernels: kernel \"fused_adamw\" of stack "
                      "pytorch_fsdp2 has extent SHARD_PARAMS"),
            std::string::npos);
  // Megatron-TE's profile lists no kernels: nothing there for a case to time.
  EXPECT_NE(error_for("noslot.textproto",
                      case_file("stack_kernels { gpu: \"h200\" stack: \"megatron_te\" "
                                "slots: NORM_FORWARD rows: 8 hidden: 64 }",
                                3, "us"))
                .find("stack_kernels.slots: stack megatron_te lists no kernel there"),
            std::string::npos);
  EXPECT_NE(error_for("empty.textproto", "").find("at least one case"), std::string::npos);
  // Block-scaled GEMMs need Blackwell's tensor cores; attention has no such kernel here.
  EXPECT_NE(
      error_for("nvfp4.textproto", case_file("gemm { gpu: \"h100\" m: 64 n: 64 k: 64 precision: "
                                             "VALIDATION_NVFP4 }",
                                             10, "TFLOP/s"))
          .find("gemm.precision: NVFP4 needs block-scaled tensor cores"),
      std::string::npos);
  EXPECT_NE(error_for("mxfp8.textproto",
                      case_file("grouped_gemm { gpu: \"a100\" groups: 2 m: 64 n: 64 k: 64 "
                                "precision: VALIDATION_MXFP8 }",
                                10, "TFLOP/s"))
                .find("grouped_gemm.precision: MXFP8 needs block-scaled tensor cores"),
            std::string::npos);
  EXPECT_NE(error_for("attn.textproto",
                      case_file("attention { gpu: \"b200\" batch: 1 heads: 1 seq_len: 64 "
                                "head_dim: 64 precision: VALIDATION_NVFP4 }",
                                10, "TFLOP/s"))
                .find("attention.precision must be VALIDATION_BF16 or VALIDATION_FP8"),
            std::string::npos);
  EXPECT_NE(
      error_for("kv.textproto", case_file("attention { gpu: \"h100\" batch: 1 heads: 6 kv_heads: 4 "
                                          "seq_len: 64 head_dim: 64 }",
                                          10, "TFLOP/s"))
          .find("attention.kv_heads must divide attention.heads"),
      std::string::npos);
  EXPECT_NE(error_for("vdim.textproto",
                      case_file("attention { gpu: \"h100\" batch: 1 heads: 1 seq_len: 64 "
                                "head_dim: 64 v_head_dim: -1 }",
                                10, "TFLOP/s"))
                .find("attention.v_head_dim must be >= 0"),
            std::string::npos);
}

TEST(ValidateCommand, InputsOnlyTheModelsCanRejectNameTheCase) {
  const auto gpu = error_for("gpu.textproto",
                             case_file("gemm { gpu: \"z100\" m: 64 n: 64 k: 64 }", 10, "TFLOP/s"));
  EXPECT_NE(gpu.find("cases[0] \"c\""), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("z100"), std::string::npos) << gpu;
  const auto big =
      error_for("big.textproto", case_file("collective { op: \"all_reduce\" topology: \"dgx-h100\" "
                                           "gpus: 3000000 size_bytes: 1024 }",
                                           10, "GB/s"));
  EXPECT_NE(big.find("holds at most"), std::string::npos) << big;
}

TEST(ValidateCommand, DuplicateNamesAcrossFilesNameBothPlaces) {
  const std::string text = case_file("gemm { gpu: \"h100\" m: 64 n: 64 k: 64 }", 10, "TFLOP/s");
  const auto r = run_cli({"validate", "--file", temp_file("dup_a.textproto", text), "--file",
                          temp_file("dup_b.textproto", text)});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("already used by"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dup_a.textproto"), std::string::npos);
  EXPECT_NE(r.err.find("dup_b.textproto"), std::string::npos);
}

}  // namespace
}  // namespace cs::validation
