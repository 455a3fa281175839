// The overlap switches and the interference effect, end to end on small layouts.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/config/run_config.h"
#include "sim/run/step_simulation.h"
#include "tests/support/run_fixtures.h"

namespace cs::run {
namespace {

using testing_support::small_llama;

TEST(Overlap, GradientReductionAfterTheBackwardIsExposed) {
  // Without overlap_grad_reduce every bucket waits for the whole backward: the reduction no
  // longer hides under it, so exposed DP time and the step grow.
  auto run = [](bool overlap) {
    return simulate_step(
        small_llama({"parallel.tp=2", "parallel.dp=8", "parallel.global_batch_size=8",
                     "parallel.zero_stage=0", "parallel.dp_bucket_params=20000000",
                     std::string("parallel.overlap_grad_reduce=") + (overlap ? "true" : "false")}),
        "test");
  };
  const auto on = run(true), off = run(false);
  EXPECT_GT(off.exposed(workload::Dim::kDp), on.exposed(workload::Dim::kDp));
  EXPECT_GT(off.iteration_time_s, on.iteration_time_s);
  EXPECT_DOUBLE_EQ(off.comm_bytes_by_dim[3], on.comm_bytes_by_dim[3]);  // same reduction
}

TEST(Overlap, ParameterGatherUnderTheForwardRemovesTheTail) {
  // ZeRO-1: after the optimizer, the updated parameters are all-gathered. Without overlap that
  // gather is the step's exposed tail; with overlap_param_gather it runs bucket by bucket under
  // the forward, and only the first bucket is waited for.
  auto run = [](bool overlap) {
    return simulate_step(
        small_llama({"parallel.tp=2", "parallel.dp=8", "parallel.global_batch_size=32",
                     "parallel.zero_stage=1", "parallel.dp_bucket_params=20000000",
                     std::string("parallel.overlap_param_gather=") + (overlap ? "true" : "false")}),
        "test");
  };
  const auto on = run(true), off = run(false);
  EXPECT_GT(off.exposed(workload::Dim::kDp), on.exposed(workload::Dim::kDp));
  EXPECT_GT(off.iteration_time_s, on.iteration_time_s);
  // The gathers move the same parameters either way (to within the embedding / norm split).
  EXPECT_NEAR(on.comm_bytes_by_dim[3] / off.comm_bytes_by_dim[3], 1.0, 0.01);
}

TEST(Overlap, InterferenceIsItsOwnLineAndCanBeSwitchedOff) {
  auto run = [](bool interference) {
    return simulate_step(small_llama({"parallel.tp=2", "parallel.dp=8",
                                      "parallel.global_batch_size=8", "parallel.zero_stage=0",
                                      std::string("effects.comm_compute_interference=") +
                                          (interference ? "true" : "false")}),
                         "test");
  };
  const auto on = run(true), off = run(false);
  EXPECT_EQ(off.interference_s, 0.0);
  EXPECT_GT(on.interference_s, 0.0);
  // Here the DP stream, busy end to end with the last microbatch's buckets, sets the step's end,
  // so slower kernels may not lengthen it; they shift when buckets are posted, which under
  // contention can move that end either way (by 8 us here), never by more than they added.
  EXPECT_LE(std::abs(on.iteration_time_s - off.iteration_time_s), on.interference_s);
  // Kernels alone cost the same; interference is on top of them.
  ASSERT_EQ(on.stages.size(), off.stages.size());
  EXPECT_DOUBLE_EQ(on.stages[0].compute_s, off.stages[0].compute_s);
}

TEST(Overlap, TrainingStepsCountGemmWavesUnderInterference) {
  // The executor hands each GEMM's tile count to the interference law: its waves over the SMs
  // NCCL leaves set the slowdown, not the share of SMs lost, so the interference line moves.
  auto run = [](bool waves) {
    return simulate_step(small_llama({"parallel.tp=2", "parallel.dp=8",
                                      "parallel.global_batch_size=8", "parallel.zero_stage=0",
                                      std::string("effects.interference_wave_quantization=") +
                                          (waves ? "true" : "false")}),
                         "test");
  };
  const auto on = run(true), off = run(false);
  EXPECT_GT(on.interference_s, 0.0);
  EXPECT_NE(on.interference_s, off.interference_s);
}

TEST(Overlap, TensorParallelCommOverlapHidesTpCommunicationAndKeepsItsVolume) {
  // With sequence parallelism, TP all-gathers and reduce-scatters pair with GEMMs; the
  // userbuffers overlap pipelines them, so the compute stream waits only for what the GEMM
  // pieces cannot cover, and the bytes moved stay those of the collectives they replace.
  auto run = [](bool overlap) {
    return simulate_step(
        small_llama({"parallel.tp=8", "parallel.dp=1", "parallel.global_batch_size=2",
                     "parallel.sequence_parallel=true", "effects.comm_compute_interference=false",
                     std::string("parallel.tp_comm_overlap=") + (overlap ? "true" : "false")}),
        "test");
  };
  const auto on = run(true), off = run(false);
  EXPECT_LT(on.exposed(workload::Dim::kTp), 0.5 * off.exposed(workload::Dim::kTp));
  // (The step itself need not be shorter: GEMM pieces a tp-th as tall fill the GPU less well,
  // and at these small shapes the cost model makes them dearer than the hidden communication.)
  EXPECT_NEAR(on.comm_bytes_by_dim[0] / off.comm_bytes_by_dim[0], 1.0, 1e-6);
  // The GEMMs cut into pieces do the same FLOPs.
  EXPECT_DOUBLE_EQ(on.model_flops_per_step, off.model_flops_per_step);
  EXPECT_NEAR(on.hfu * on.iteration_time_s, off.hfu * off.iteration_time_s,
              1e-9 * off.hfu * off.iteration_time_s);
}

TEST(Overlap, TensorParallelChunksBesideGemmsAreSlowedByInterference) {
  // Overlapped TP chunks run beside GEMM pieces on the same GPU: interference appears where the
  // blocking TP collectives had none to cause.
  auto run = [](bool overlap) {
    return simulate_step(
        small_llama({"parallel.tp=8", "parallel.dp=1", "parallel.global_batch_size=2",
                     "parallel.sequence_parallel=true",
                     std::string("parallel.tp_comm_overlap=") + (overlap ? "true" : "false")}),
        "test");
  };
  EXPECT_EQ(run(false).interference_s, 0.0);
  EXPECT_GT(run(true).interference_s, 0.0);
}

TEST(Overlap, RingAttentionHidesTheKeyValueExchangeAndKeepsItsVolume) {
  // Each ring piece is its own attention kernel: it reads Q and writes O again and, backward,
  // runs its own helper kernels. For this GQA model (8 of 32 heads carry K and V) those costs
  // about cancel what hiding the small K/V exchange gains (the Llama 3 paper's reason for
  // all-gather CP: K and V much smaller than Q); they are switched off to test the hiding alone.
  auto run = [](bool overlap) {
    return simulate_step(
        small_llama({"parallel.tp=1", "parallel.cp=4", "parallel.dp=1",
                     "parallel.global_batch_size=2", "model.seq_length=16384",
                     "effects.comm_compute_interference=false", "effects.attention_tile_io=false",
                     "effects.attention_backward_helpers=false",
                     std::string("parallel.cp_comm_overlap=") + (overlap ? "true" : "false")}),
        "test");
  };
  const auto on = run(true), off = run(false);
  ASSERT_GT(off.exposed(workload::Dim::kCp), 0.0);
  EXPECT_LT(on.exposed(workload::Dim::kCp), 0.5 * off.exposed(workload::Dim::kCp));
  EXPECT_LT(on.iteration_time_s, off.iteration_time_s);
  EXPECT_NEAR(on.comm_bytes_by_dim[1] / off.comm_bytes_by_dim[1], 1.0, 1e-6);
  EXPECT_NEAR(on.hfu * on.iteration_time_s, off.hfu * off.iteration_time_s,
              1e-9 * off.hfu * off.iteration_time_s);
}

}  // namespace
}  // namespace cs::run
