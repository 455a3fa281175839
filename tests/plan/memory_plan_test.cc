// Memory breakdown laws: checkpointing every k layers, precision states, offload, in-flight
// counts, and the totals of `clustersim memory`.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/config/run_config.h"
#include "sim/plan/memory_report.h"
#include "sim/workload/memory.h"
#include "sim/workload/model_math.h"
#include "tests/support/run_fixtures.h"

namespace cs::plan {
namespace {

// The small Llama on 8 layers.
clustersim::RunConfig eight_layers(std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), "model.num_layers=8");
  return testing_support::small_llama(std::move(overrides));
}

// The memory report's heading claims sequence parallelism only where TP splits the activations.
TEST(MemoryReport, TheLayoutShowsSpOnlyAboveTpOne) {
  const auto heading = [](const std::string& tp, const std::string& dp) {
    return build_memory_report(
               eight_layers({"parallel.tp=" + tp, "parallel.dp=" + dp,
                             "parallel.global_batch_size=8", "parallel.sequence_parallel=true"}),
               "test")
        .layout;
  };
  EXPECT_EQ(heading("1", "8").find("SP"), std::string::npos) << heading("1", "8");
  EXPECT_NE(heading("2", "4").find(", SP"), std::string::npos) << heading("2", "4");
}

TEST(CheckpointEveryK, KOneKeepsExactlyWhatFullRecomputeKeeps) {
  const auto none = eight_layers({"parallel.tp=2", "parallel.dp=4", "parallel.global_batch_size=8",
                                  "parallel.checkpoint_every_k_layers=1"});
  auto full = none;
  full.mutable_parallel()->set_recompute(clustersim::ParallelConfig::FULL);
  full.mutable_parallel()->set_checkpoint_every_k_layers(0);
  const auto a = workload::estimate_stage_memory(none, 0, 3);
  const auto b = workload::estimate_stage_memory(full, 0, 3);
  EXPECT_EQ(a.activations, b.activations);
  EXPECT_EQ(a.temporary, b.temporary);
}

TEST(CheckpointEveryK, KeepsOneInputPerRunOfKLayersAndHoldsKLayersWhileRecomputing) {
  const auto base = eight_layers({"parallel.tp=2", "parallel.sequence_parallel=true",
                                  "parallel.dp=4", "parallel.global_batch_size=8"});
  const int32_t layers = 8, held = 2;
  const double input = 2.0 * 2048 * 4096 / 2;  // 2·s·b·h / t under SP
  const auto plain = workload::estimate_stage_memory(base, 0, held);
  const double per_layer = workload::layer_activation_bytes(base);
  const double extra = static_cast<double>(plain.activations) - held * layers * per_layer;
  for (int32_t k : {2, 3, 4, 8}) {
    auto c = base;
    c.mutable_parallel()->set_checkpoint_every_k_layers(k);
    const auto m = workload::estimate_stage_memory(c, 0, held);
    const int32_t segments = (layers + k - 1) / k;
    EXPECT_NEAR(static_cast<double>(m.activations), held * segments * input + extra, 2.0) << k;
    EXPECT_NEAR(static_cast<double>(m.temporary - plain.temporary), k * per_layer, 2.0) << k;
    EXPECT_LT(m.activations, plain.activations);
  }
}

TEST(StatePrecision, SixteenBytesPerParameterAndTheOptimizerDominates) {
  const double n = 1e9;
  const auto fp32 = workload::model_state_detail(n, 0, 1, workload::StatePrecision::kFp32);
  const auto bf16 = workload::model_state_detail(n, 0, 1, workload::StatePrecision::kBf16);
  const auto fp8 = workload::model_state_detail(n, 0, 1, workload::StatePrecision::kFp8);
  EXPECT_DOUBLE_EQ(fp32.total(), 16 * n);
  EXPECT_DOUBLE_EQ(bf16.total(), 16 * n);
  EXPECT_DOUBLE_EQ(fp8.total(), bf16.total());
  EXPECT_DOUBLE_EQ(bf16.optimizer() / bf16.total(), 0.75);
  // Halving weights and gradients alone saves a quarter of FP32's 16 bytes.
  EXPECT_DOUBLE_EQ((fp32.weights + fp32.gradients) / 2 / fp32.total(), 0.25);
  // Agrees with the ZeRO accounting used elsewhere.
  const auto z = workload::model_state_bytes(n, 2, 8);
  const auto d = workload::model_state_detail(n, 2, 8, workload::StatePrecision::kBf16);
  EXPECT_DOUBLE_EQ(z.total(), d.total());
}

TEST(Offload, OptimizerStatesMoveToTheHostBytewise) {
  auto c = eight_layers(
      {"parallel.tp=2", "parallel.dp=4", "parallel.global_batch_size=8", "parallel.zero_stage=1"});
  const auto on_gpu = workload::estimate_stage_memory(c, 0, 1);
  c.mutable_offload()->set_optimizer(clustersim::OffloadConfig::CPU);
  const auto off = workload::estimate_stage_memory(c, 0, 1);
  EXPECT_EQ(off.optimizer, 0);
  EXPECT_EQ(off.host_dram, on_gpu.optimizer);
  EXPECT_EQ(on_gpu.total() - off.total(), on_gpu.optimizer);
  c.mutable_offload()->set_optimizer(clustersim::OffloadConfig::NVME);
  EXPECT_EQ(workload::estimate_stage_memory(c, 0, 1).host_nvme, on_gpu.optimizer);
}

TEST(Offload, HostCapacityIsALimit) {
  auto c = eight_layers({"parallel.tp=2", "parallel.dp=1", "parallel.global_batch_size=2"});
  c.mutable_offload()->set_optimizer(clustersim::OffloadConfig::CPU);
  EXPECT_TRUE(check_fit(c, 1e12).fits);
  c.mutable_offload()->set_host_memory_gb(1);  // 1 GB per node: the states cannot fit
  EXPECT_FALSE(check_fit(c, 1e12).fits);
}

TEST(MemoryReport, InFlightFollowsTheSchedule) {
  auto c = eight_layers({"parallel.pp=4", "parallel.dp=1", "parallel.global_batch_size=8"});
  const auto onefoneb = held_per_stage(c);
  for (int32_t s = 0; s < 4; ++s) EXPECT_EQ(onefoneb[s], 4 - s);  // min(p - s, m)
  c.mutable_parallel()->set_schedule(clustersim::ParallelConfig::GPIPE);
  for (int32_t h : held_per_stage(c)) EXPECT_EQ(h, 8);  // m
}

TEST(MemoryReport, TotalsPeakAndOptimizerSplit) {
  const auto c = eight_layers({"parallel.tp=2", "parallel.pp=2", "parallel.dp=2",
                               "parallel.global_batch_size=8", "cluster.gpu=h100"});
  const MemoryReport r = build_memory_report(c, "test");
  ASSERT_EQ(r.stages.size(), 2u);
  double total = 0, peak = 0;
  for (const auto& s : r.stages) {
    total += static_cast<double>(s.mem.total()) * 2 * 2;  // tp x dp GPUs per stage
    peak = std::max(peak, static_cast<double>(s.mem.total()));
    EXPECT_NEAR(s.master + s.adam_m + s.adam_v, static_cast<double>(s.mem.optimizer), 2.0);
  }
  EXPECT_NEAR(r.total_all_gpus, total, 1.0);
  EXPECT_DOUBLE_EQ(r.peak, peak);
  EXPECT_EQ(r.fits, r.peak <= r.capacity);
  EXPECT_DOUBLE_EQ(r.capacity, 81559.0 * 1024 * 1024);  // nvidia-smi's memory.total, in bytes
  // Checkpointing rows: memory falls as recompute rises; FULL and every-k cost one forward.
  ASSERT_GE(r.checkpoint_rows.size(), 3u);
  EXPECT_EQ(r.checkpoint_rows.front().name, "none");
  EXPECT_EQ(r.checkpoint_rows.front().extra_flops_fraction, 0);
  EXPECT_LT(r.checkpoint_rows.back().total, r.checkpoint_rows.front().total);
  EXPECT_GT(r.checkpoint_rows.back().extra_flops_fraction, 0.2);
}

// The checkpointing table offers the policies the run's stack has: Megatron-TE its selective
// and every-k modes, torchtitan's FSDP its op-level selective mode, each between none and full.
TEST(MemoryReport, CheckpointRowsAreTheStacksOwnPolicies) {
  const auto names = [](const MemoryReport& r) {
    std::vector<std::string> out;
    for (const auto& row : r.checkpoint_rows) out.push_back(row.name);
    return out;
  };
  const auto megatron = build_memory_report(testing_support::small_llama(), "test");
  EXPECT_EQ(names(megatron),
            (std::vector<std::string>{"none", "selective", "every 2 layers", "full"}));
  const auto fsdp = build_memory_report(
      testing_support::small_llama({"software_stack=PYTORCH_FSDP", "parallel.tp=1",
                                    "parallel.zero_stage=3", "parallel.sequence_parallel=false"}),
      "test");
  ASSERT_EQ(names(fsdp), (std::vector<std::string>{"none", "op selective", "full"}));
  const auto& rows = fsdp.checkpoint_rows;
  EXPECT_LT(rows[1].total, rows[0].total);
  EXPECT_GT(rows[1].total, rows[2].total);
  EXPECT_GT(rows[1].extra_flops_fraction, 0);
  EXPECT_LT(rows[1].extra_flops_fraction, rows[2].extra_flops_fraction);
}

TEST(MemoryReport, ThePlannersFilterSeesTheSamePeakAsTheReport) {
  // Interleaved, with the head on the last stage's last chunk: both take the exact order's peak.
  const auto c = eight_layers({"parallel.tp=2", "parallel.pp=4", "parallel.virtual_stages=2",
                               "parallel.schedule=INTERLEAVED", "parallel.dp=1",
                               "parallel.global_batch_size=8", "cluster.gpu=h100"});
  const MemoryReport r = build_memory_report(c, "test");
  EXPECT_DOUBLE_EQ(check_fit(c, r.capacity).peak, r.peak);
  // The last stage holds several chunk passes but the logits of one.
  const auto& last = r.stages.back();
  ASSERT_GT(last.in_flight, 1);
  const auto bound = workload::estimate_stage_memory(c, 3, last.in_flight);
  EXPECT_NEAR(static_cast<double>(bound.activations - last.mem.activations),
              (last.in_flight - 1) * workload::head_activation_bytes(c), 2.0);
}

TEST(MemoryReport, Llama3_405bFitsAsMetaRanItWithShardedGradientsReducedOncePerStep) {
  // Section 3.3.2's layout at 8K without activation checkpointing fits an H100, with the fp32
  // gradient buffer of one chunk at a time; kept whole all step (ZeRO-1) it would not.
  const auto c = load_run_config("", "llama3-405b", {}).config;
  const MemoryReport r = build_memory_report(c, "test");
  EXPECT_TRUE(r.fits) << r.peak / 1e9 << " GB";
  auto z1 = c;
  z1.mutable_parallel()->set_zero_stage(1);
  z1.mutable_parallel()->set_sharded_grad_reduce(clustersim::ParallelConfig::EVERY_MICROBATCH);
  EXPECT_FALSE(build_memory_report(z1, "test").fits);
}

TEST(MemoryReport, ParameterOffloadNeedsZero3) {
  auto c = eight_layers({"parallel.dp=2", "parallel.global_batch_size=2", "cluster.gpu=h100",
                         "offload.parameters=CPU"});
  EXPECT_THROW(build_memory_report(c, "test"), ConfigError);
}

}  // namespace
}  // namespace cs::plan
