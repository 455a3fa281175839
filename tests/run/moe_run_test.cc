// Mixture-of-experts steps end to end: all-to-alls are charged to EP, imbalance and node limits
// move the step the way they should, and folding expert-data-parallel replicas changes nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/compute/gpu_profile.h"
#include "sim/compute/kernel_cost.h"
#include "sim/config/embedded_presets.h"
#include "sim/config/run_config.h"
#include "sim/run/moe_effects.h"
#include "sim/run/step_simulation.h"
#include "tests/support/moe_fixtures.h"
#include "tests/support/run_fixtures.h"

namespace cs::run {
namespace {

using testing_support::group_seconds;
using testing_support::report_json;

clustersim::RunConfig mixtral(std::vector<std::string> more = {}) {
  return testing_support::small_mixtral(std::move(more));
}

report::StepReport run_mixtral(std::vector<std::string> more = {}) {
  return simulate_step(mixtral(std::move(more)), "test");
}

TEST(MoeRun, AllToAllsAreExposedExpertParallelTime) {
  const auto r = run_mixtral();
  ASSERT_TRUE(r.moe.enabled);
  EXPECT_GT(r.moe.all_to_all_s, 0);
  // Dispatch and combine block the compute stream: all of their time is exposed.
  EXPECT_DOUBLE_EQ(r.moe.all_to_all_exposed_s, r.moe.all_to_all_s);
  EXPECT_DOUBLE_EQ(r.exposed(workload::Dim::kEp), r.moe.all_to_all_exposed_s);
  EXPECT_GT(r.comm_bytes_by_dim[static_cast<int>(workload::Dim::kEp)], 0);
  EXPECT_GT(r.comm_bytes_by_dim[static_cast<int>(workload::Dim::kEdp)], 0);
  EXPECT_EQ(report_json(r), report_json(run_mixtral()));  // bit for bit
}

// Without expert parallelism every GPU holds all the experts of its stage: the report counts them
// (it printed 0.00 B params at EP 1) and their states are sharded like the rest of the model.
TEST(MoeRun, ExpertMemoryIsReportedWithoutExpertParallelism) {
  const auto ep4 = run_mixtral();
  const auto ep1 = run_mixtral({"parallel.ep=1"});
  EXPECT_GT(ep4.moe.expert_params_per_gpu, 0);
  EXPECT_EQ(ep1.moe.expert_params_per_gpu, 4 * ep4.moe.expert_params_per_gpu);
  EXPECT_GT(ep1.moe.expert_memory_gb, ep4.moe.expert_memory_gb);
  EXPECT_LT(ep1.moe.expert_memory_gb, ep1.memory.peak_gb);
}

TEST(MoeRun, AMultiTokenPredictionModuleAddsOneMoeBlockOfTraffic) {
  // 4 MoE layers plus the module's MoE block, routed alike: 5/4 of the all-to-all bytes.
  const auto base = run_mixtral();
  const auto mtp = run_mixtral({"model.mtp_layers=1"});
  const auto ep = static_cast<int>(workload::Dim::kEp);
  EXPECT_NEAR(mtp.comm_bytes_by_dim[ep] / base.comm_bytes_by_dim[ep], 5.0 / 4.0, 1e-9);
  EXPECT_GT(mtp.iteration_time_s, base.iteration_time_s);
  EXPECT_GT(mtp.model_flops_per_step, base.model_flops_per_step);
}

TEST(MoeRun, Fp8DispatchSendsAboutHalfTheDispatchBytes) {
  // FP8 dispatch (1 byte + a 4-byte scale per 128) and its gradient's twin; combine stays BF16:
  // the EP bytes go from 2 + 2 to 1.03125 + 2 per element each way.
  const auto bf16 = run_mixtral({"precision=FP8"});
  const auto fp8 = run_mixtral({"precision=FP8", "model.moe.fp8_dispatch=true"});
  const auto ep = static_cast<int>(workload::Dim::kEp);
  EXPECT_NEAR(fp8.comm_bytes_by_dim[ep] / bf16.comm_bytes_by_dim[ep], (1.03125 + 2.0) / 4.0, 1e-6);
  EXPECT_LT(fp8.moe.all_to_all_s, bf16.moe.all_to_all_s);
}

TEST(MoeRun, SkewedRoutingSlowsTheStepAndCapacityDropsTokens) {
  const auto even = run_mixtral();
  const auto skewed = run_mixtral({"model.moe.routing.kind=SKEWED", "model.moe.routing.skew=1"});
  EXPECT_GT(skewed.moe.tokens_max_over_mean, 2.0);
  EXPECT_GT(skewed.iteration_time_s, 1.2 * even.iteration_time_s);
  const auto capped = run_mixtral({"model.moe.routing.kind=SKEWED", "model.moe.routing.skew=1",
                                   "model.moe.capacity_factor=1.25"});
  EXPECT_GT(capped.moe.dropped_share, 0.1);
  EXPECT_LT(capped.iteration_time_s, skewed.iteration_time_s);
  // The ranks whose experts get the most tokens reach the combine last; the others wait for them
  // inside the all-to-all, exposed EP time, which fills most of what skew adds to the step (it was
  // on no line) and stays within the all-to-alls' time from each rank's post.
  const double added = skewed.iteration_time_s - even.iteration_time_s;
  EXPECT_GT(skewed.exposed(workload::Dim::kEp) - even.exposed(workload::Dim::kEp), 0.5 * added);
  EXPECT_LE(skewed.moe.all_to_all_exposed_s, skewed.moe.all_to_all_s * (1 + 1e-12));
  // Most of it is the wait for those ranks, on its own line; balanced routing has next to none.
  const auto ep = static_cast<std::size_t>(workload::Dim::kEp);
  EXPECT_GT(skewed.peer_wait_s[ep], 0.5 * added);
  EXPECT_LE(skewed.peer_wait_s[ep], skewed.exposed(workload::Dim::kEp));
  EXPECT_LT(even.peer_wait_s[ep], 0.01 * even.iteration_time_s);
}

TEST(MoeRun, FoldingExpertDataParallelReplicasKeepsTheStep) {
  const auto folded = run_mixtral();
  const auto unfolded = run_mixtral({"simulation.fold_data_parallel=false"});
  EXPECT_NEAR(folded.iteration_time_s, unfolded.iteration_time_s, 1e-3 * unfolded.iteration_time_s);
  EXPECT_LT(folded.events, unfolded.events);
  EXPECT_DOUBLE_EQ(folded.comm_bytes_by_dim[static_cast<int>(workload::Dim::kEp)],
                   unfolded.comm_bytes_by_dim[static_cast<int>(workload::Dim::kEp)]);
}

// EP 8 over two servers (Llama 3's rank order puts DP neighbours PP 2 apart), top 4 of 8 experts
// spread evenly. Across the network a token costs NCCL's all-to-all 2 of its 4 copies, with or
// without a limit; DeepEP one copy when an expert is on the other server, 1 - (1/2)^4 = 0.9375 of
// the time, and half the time with one server at most. The data-parallel bytes are the same in
// every run, so (nccl - deepep) / (nccl - limited) = (2 - 0.9375) / (2 - 0.5).
TEST(MoeRun, NodeLimitedRoutingCutsNetworkBytesUnderDeepEp) {
  // Bytes on the wire: without DeepEP's slower share of each link, which the wire counts.
  const std::vector<std::string> spread_ep = {"parallel.ep=8", "model.moe.top_k=4",
                                              "parallel.rank_order=TP_CP_PP_DP",
                                              "effects.deepep_kernel_share=false"};
  const auto network = [&](bool deepep, bool limit) {
    auto o = spread_ep;
    o.push_back(std::string("model.moe.dispatcher=") + (deepep ? "DEEPEP" : "ALL_TO_ALL"));
    if (limit) o.push_back("model.moe.max_nodes_per_token=1");
    return run_mixtral(o).comm_bytes_network;
  };
  const double nccl = network(false, false), deepep = network(true, false);
  const double limited = network(true, true);
  EXPECT_LT(limited, deepep);
  EXPECT_LT(deepep, nccl);
  EXPECT_NEAR((nccl - deepep) / (nccl - limited), 1.0625 / 1.5, 0.01);
  EXPECT_NEAR(network(false, true), nccl, 1e-9 * nccl);
}

TEST(MoeRun, DualPipePairsHideAllToAllsBehindTheOtherHalfsCompute) {
  const std::vector<std::string> dualpipe = {"parallel.schedule=DUALPIPE",
                                             "parallel.virtual_stages=2"};
  auto sequential = dualpipe;
  sequential.push_back("parallel.dualpipe_overlap=false");
  const auto overlapped = run_mixtral(dualpipe);
  const auto alone = run_mixtral(sequential);
  ASSERT_GT(alone.moe.all_to_all_s, 0);
  // In sequence every all-to-all blocks the compute stream; in pairs part of it is hidden.
  EXPECT_DOUBLE_EQ(alone.moe.all_to_all_exposed_s, alone.moe.all_to_all_s);
  EXPECT_LT(overlapped.moe.all_to_all_exposed_s, 0.9 * overlapped.moe.all_to_all_s);
  EXPECT_DOUBLE_EQ(overlapped.exposed(workload::Dim::kEp), overlapped.moe.all_to_all_exposed_s);
  EXPECT_LT(overlapped.iteration_time_s, alone.iteration_time_s);
  // What runs beside the all-to-alls is slowed: a cost of its own in the breakdown.
  EXPECT_GT(overlapped.interference_s, alone.interference_s);
  EXPECT_EQ(report_json(overlapped), report_json(run_mixtral(dualpipe)));  // bit for bit
}

// 2 experts per EP rank of 1024 tokens each: the grouped kernel pads their rows to whole tiles,
// runs whole waves and stores each tile; switched off, an ideal grouped GEMM does none of that.
// Its line is exactly what it changes in the expert GEMMs (the activations run alike), a cost,
// and switched off it is gone.
TEST(MoeRun, GroupedGemmsHaveTheirLineAndSwitchOff) {
  const auto on = run_mixtral();
  const auto off = run_mixtral({"effects.moe_grouped_gemm=false"});
  EXPECT_EQ(off.moe.grouped_gemm_s, 0);
  EXPECT_GT(on.moe.grouped_gemm_s, 0);
  EXPECT_EQ(group_seconds(on, "elementwise"), group_seconds(off, "elementwise"));
  const double moved = group_seconds(on, "gemm") + group_seconds(on, "elementwise") -
                       group_seconds(off, "gemm") - group_seconds(off, "elementwise");
  EXPECT_NEAR(on.moe.grouped_gemm_s, moved, 1e-6 * std::abs(moved));
  EXPECT_EQ(group_seconds(on, "attention"), group_seconds(off, "attention"));
  EXPECT_GT(on.iteration_time_s, off.iteration_time_s);
  // DualPipe holds every layer twice, each copy for half the microbatches: the same count.
  const std::vector<std::string> dualpipe = {"parallel.schedule=DUALPIPE",
                                             "parallel.virtual_stages=2"};
  auto dualpipe_off = dualpipe;
  dualpipe_off.push_back("effects.moe_grouped_gemm=false");
  const auto pairs_on = run_mixtral(dualpipe), pairs_off = run_mixtral(dualpipe_off);
  const double pairs_moved =
      group_seconds(pairs_on, "gemm") + group_seconds(pairs_on, "elementwise") -
      group_seconds(pairs_off, "gemm") - group_seconds(pairs_off, "elementwise");
  EXPECT_NEAR(pairs_on.moe.grouped_gemm_s, pairs_moved, 1e-6 * std::abs(pairs_moved));
  // Its own line in the JSON report and in the table.
  EXPECT_NE(report_json(on).find("\"moe_grouped_gemm\": "), std::string::npos);
  std::ostringstream table;
  report::print_table(table, on);
  EXPECT_NE(table.str().find("effect moe_grouped_gemm"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("effect moe_all_to_all_wire"), std::string::npos);
}

// MoE token permutations at the GPU's measured rate (H100: 2.42 TB/s where copies stream at
// 3.0) take longer than streaming copies of the same bytes: the line is exactly what the MoE
// routing kernels gain, nothing else moves, and switched off it is gone.
TEST(MoeRun, TokenPermutationsHaveTheirLineAndSwitchOff) {
  const auto on = run_mixtral();
  const auto off = run_mixtral({"effects.moe_token_permute_rate=false"});
  EXPECT_EQ(off.moe.token_permute_s, 0);
  EXPECT_GT(on.moe.token_permute_s, 0);
  const double moved = group_seconds(on, "moe_routing") - group_seconds(off, "moe_routing");
  EXPECT_NEAR(on.moe.token_permute_s, moved, 1e-6 * moved);
  EXPECT_EQ(group_seconds(on, "gemm"), group_seconds(off, "gemm"));
  EXPECT_GT(on.iteration_time_s, off.iteration_time_s);
  EXPECT_NE(report_json(on).find("\"moe_token_permute_rate\": "), std::string::npos);
  std::ostringstream table;
  report::print_table(table, on);
  EXPECT_NE(table.str().find("effect moe_token_permute_rate"), std::string::npos);
}

// DeepEP's token cost inside a GB200 rack (gb200.textproto: 95 us a call plus 1.24 ns for each
// token and each of EP 4's three other ranks): every dispatch and combine pays it before its
// transfers, the line is a whole number of calls and what the all-to-alls' time in flight gains,
// and switched off it is gone. H100 has no figure, so there the line is zero.
TEST(MoeRun, DeepEpTokenCostHasItsLineAndSwitchesOff) {
  const std::vector<std::string> rack = {"cluster.gpu=gb200", "cluster.topology=gb200-nvl72",
                                         "model.moe.dispatcher=DEEPEP"};
  const auto on = run_mixtral(rack);
  auto without = rack;
  without.push_back("effects.deepep_token_cost=false");
  const auto off = run_mixtral(without);
  EXPECT_EQ(off.moe.deepep_token_s, 0);
  const double tokens = 1024;  // a microbatch of one 1,024-token sequence
  const double call_s = (95 + tokens * 3 * 1.24e-3) * 1e-6;
  const double calls = on.moe.deepep_token_s / call_s;
  EXPECT_GE(calls, 8);  // forward and backward dispatch and combine, two layers a stage
  EXPECT_NEAR(calls, std::round(calls), 1e-6);
  EXPECT_NEAR(on.moe.all_to_all_s - off.moe.all_to_all_s, on.moe.deepep_token_s,
              0.02 * on.moe.deepep_token_s);
  EXPECT_GT(on.iteration_time_s, off.iteration_time_s);
  EXPECT_NE(report_json(on).find("\"deepep_token_cost\": "), std::string::npos);
  std::ostringstream table;
  report::print_table(table, on);
  EXPECT_NE(table.str().find("effect deepep_token_cost"), std::string::npos);
  EXPECT_EQ(run_mixtral({"model.moe.dispatcher=DEEPEP"}).moe.deepep_token_s, 0);
}

// Every MoE preset's effects.moe_grouped_gemm line is a cost (and its token permutation line
// where its GPU has a rate), with its routing balanced or skewed: the line as the report takes it
// (moe_kernel_effects), which needs no simulated step, so DeepSeek-V3's full model is cheap here.
bool cost_profile_has_permute_rate(const clustersim::RunConfig& config) {
  return compute::load_gpu_profile(config.cluster().gpu()).has_token_permute_tbps();
}

TEST(MoeRun, EveryMoePresetsGroupedGemmLineIsACost) {
  int moe_presets = 0;
  for (const std::string& name : preset_names("workloads")) {
    if (!load_run_config("", name, {}).config.model().has_moe()) continue;
    ++moe_presets;
    for (const auto& routing : std::vector<std::vector<std::string>>{
             {}, {"model.moe.routing.kind=SKEWED", "model.moe.routing.skew=1"}}) {
      const auto config = load_run_config("", name, routing).config;
      ASSERT_FALSE(config.cluster().gpu().empty()) << name;
      const compute::KernelCostModel cost(compute::load_gpu_profile(config.cluster().gpu()),
                                          compute::cost_options(config.effects()));
      const MoeKernelEffects effects = moe_kernel_effects(config, cost);
      EXPECT_GT(effects.grouped_gemm_s, 0) << name << (routing.empty() ? "" : ", skewed");
      // The permutation line is a cost where the GPU has a measured rate (Hopper), else none.
      EXPECT_EQ(effects.token_permute_s > 0, cost_profile_has_permute_rate(config)) << name;
      EXPECT_GE(effects.token_permute_s, 0) << name;
    }
  }
  EXPECT_GE(moe_presets, 3);  // mixtral-8x7b, qwen3-30b-a3b, deepseek-v3
}

// EP 4 on one server: every all-to-all byte crosses NVLink, which NCCL's Hopper plan runs at 20.6
// of 25 GB/s per link. The line is the all-to-alls' in-flight time that overhead's share accounts
// for.
TEST(MoeRun, AllToAllWireCostsSlowNvlinkAllToAllsAndSwitchOff) {
  const auto on = run_mixtral();
  const auto off = run_mixtral({"effects.moe_all_to_all_wire=false"});
  EXPECT_EQ(off.moe.all_to_all_wire_s, 0);
  // The line is the all-to-alls' share; the token-count all-gathers before them, in the same
  // expert-parallel time, pay no wire cost (a few percent of it here).
  EXPECT_LE(on.moe.all_to_all_wire_s, on.moe.all_to_all_s * (1 - 20.6 / 25) + 1e-9);
  EXPECT_GT(on.moe.all_to_all_wire_s, 0.9 * on.moe.all_to_all_s * (1 - 20.6 / 25));
  // The payload part of the time in flight is what runs at line rate without the effect; the
  // rest is launch and path latency, the same either way.
  EXPECT_GT(on.moe.all_to_all_s, 1.15 * off.moe.all_to_all_s);
  EXPECT_LT(on.moe.all_to_all_s, 25 / 20.6 * off.moe.all_to_all_s);
  EXPECT_GT(on.iteration_time_s, off.iteration_time_s);
  EXPECT_EQ(on.comm_bytes_by_dim[static_cast<int>(workload::Dim::kEp)],
            off.comm_bytes_by_dim[static_cast<int>(workload::Dim::kEp)]);  // payload counted
}

}  // namespace
}  // namespace cs::run
