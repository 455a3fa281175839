// Routing loads, MoE parameter counts and the MoE block's ops on one GPU.
#include "sim/workload/moe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>

#include "sim/config/config_error.h"
#include "sim/config/run_config.h"
#include "sim/workload/model_math.h"
#include "sim/workload/moe_ops.h"
#include "tests/support/layer_op_lookup.h"
#include "tests/support/test_helpers.h"

namespace cs::workload {
namespace {

clustersim::RunConfig mixtral(std::vector<std::string> overrides = {}) {
  return load_run_config("", "mixtral-8x7b", overrides).config;
}

using testing_support::find_op;

TEST(Routing, BalancedSkewedAndCapacity) {
  const ExpertLoad even = RoutingTable(mixtral()).load(3);
  EXPECT_DOUBLE_EQ(even.max_over_mean(), 1.0);
  EXPECT_EQ(even.rank_share.size(), 8u);
  const auto skewed_config = mixtral({"model.moe.routing.kind=SKEWED", "model.moe.routing.skew=1"});
  const ExpertLoad skewed = RoutingTable(skewed_config).load(3);
  // Zipf over 8 experts: the top expert holds 1 / H_8 = 0.368 of the assignments.
  const double h8 = 1 + 1 / 2. + 1 / 3. + 1 / 4. + 1 / 5. + 1 / 6. + 1 / 7. + 1 / 8.;
  EXPECT_NEAR(*std::max_element(skewed.kept.begin(), skewed.kept.end()), 1 / h8, 1e-12);
  EXPECT_NEAR(skewed.max_over_mean(), 8 / h8, 1e-12);
  // Seeded: the same layer gives the same experts, another layer or seed another permutation.
  EXPECT_EQ(RoutingTable(skewed_config).load(3).kept, skewed.kept);
  EXPECT_NE(RoutingTable(skewed_config).load(4).kept, skewed.kept);
  auto capped = skewed_config;
  capped.mutable_model()->mutable_moe()->set_capacity_factor(1.0);
  const ExpertLoad dropped = RoutingTable(capped).load(3);
  EXPECT_DOUBLE_EQ(dropped.max_over_mean(), 1.0 / (1.0 - dropped.dropped) * 1.0);
  double over = 0;
  for (const double s : skewed.kept) over += std::max(0.0, s - 1.0 / 8);
  EXPECT_NEAR(dropped.dropped, over, 1e-12);
}

TEST(Routing, HistogramFileAndItsErrors) {
  const std::string ok = testing_support::temp_file("hist.txt", "1 1 1 1 2 2 2 6\n");
  auto config = mixtral({"model.moe.routing.kind=HISTOGRAM"});
  config.mutable_model()->mutable_moe()->mutable_routing()->set_histogram_file(ok);
  const ExpertLoad load = RoutingTable(config).load(0);
  EXPECT_DOUBLE_EQ(load.kept[7], 6.0 / 16);
  auto bad = [&](const std::string& text) {
    config.mutable_model()->mutable_moe()->mutable_routing()->set_histogram_file(
        testing_support::temp_file("bad.txt", text));
    return testing_support::error_of([&] { RoutingTable{config}; });
  };
  EXPECT_NE(bad("1 2 3\n").find("bad.txt:1: 3 shares for 8 experts"), std::string::npos);
  EXPECT_NE(bad("1 1 1 1 x 1 1 1\n").find("bad.txt:1: 'x' is not a non-negative number"),
            std::string::npos);
  EXPECT_NE(bad("1 1 1 1 1 1 1 1\n1 1 1 1 1 1 1 1\n").find("2 rows"), std::string::npos);
  EXPECT_NE(bad("0 0 0 0 0 0 0 0\n").find("every share is 0"), std::string::npos);
  config.mutable_model()->mutable_moe()->mutable_routing()->set_histogram_file("/nonexistent/h");
  // The field, the file and the system's reason.
  EXPECT_EQ(testing_support::error_of([&] { RoutingTable{config}; }),
            "model.moe.routing.histogram_file: /nonexistent/h: cannot open (No such file or "
            "directory)");
}

// Mixtral 8x7B has 46.7B parameters, 12.9B of them active per token (Mistral AI's announcement).
TEST(MoeParams, MixtralTotalsAndActive) {
  const ParamCounts p = count_params(mixtral().model());
  EXPECT_NEAR(static_cast<double>(p.total()) / 1e9, 46.7, 0.05);
  const double active = static_cast<double>(p.dense_matmul() + p.embedding);  // head included
  EXPECT_NEAR(active / 1e9, 12.9, 0.05);
  // On one GPU of EP 8: one expert per layer, 8 layers per stage of PP 4.
  const auto config = mixtral();
  EXPECT_EQ(layer_expert_params(config, 0), 3LL * 4096 * 14336);
  EXPECT_EQ(stage_expert_params(config, 1), 8 * 3LL * 4096 * 14336);
}

// DeepSeek-V3: 671B parameters, 37B active per token (technical report, section 4.2; the MTP
// module's 14B come on top, as in the 685B of the Hugging Face checkpoint).
TEST(MoeParams, DeepSeekV3Total) {
  // The active count is the main model's: without the MTP module's matmuls.
  const auto config = load_run_config("", "deepseek-v3", {"model.mtp_layers=0"}).config;
  const ParamCounts p = count_params(config.model());
  EXPECT_NEAR(static_cast<double>(p.total()) / 1e9, 671, 0.5);
  EXPECT_NEAR(static_cast<double>(p.dense_matmul() + p.embedding) / 1e9, 37, 0.7);
}

TEST(MoeOps, GroupedGemmsFollowEachRanksTokens) {
  auto config = mixtral({"model.moe.routing.kind=SKEWED"});
  const ExpertLoad load = RoutingTable(config).load(0);
  const auto ops = moe_block_ops(config, Phase::kForward, load);
  const LayerOp* fc1 = nullptr;
  const LayerOp* dispatch = nullptr;
  for (const auto& op : ops) {
    if (!op.is_comm && op.kernel.name == "moe_fc1_fwd") fc1 = &op;
    if (op.is_comm && op.comm_name == "moe_dispatch_a2a") dispatch = &op;
  }
  ASSERT_NE(fc1, nullptr);
  ASSERT_NE(dispatch, nullptr);
  ASSERT_EQ(fc1->rank_parts.size(), 8u);
  // Rank r's one expert gets 8 ranks x 4096 tokens x top 2 x its share.
  for (std::size_t r = 0; r < 8; ++r) {
    ASSERT_EQ(fc1->rank_parts[r].size(), 1u);
    EXPECT_EQ(fc1->rank_parts[r][0].m, std::llround(8 * 4096 * 2 * load.kept[r]));
    EXPECT_EQ(fc1->rank_parts[r][0].n, 2 * 14336);
  }
  EXPECT_EQ(dispatch->bytes, 4096 * 2 * 4096 * 2);  // tokens x top_k x h x bf16
  for (std::size_t r = 0; r < 8; ++r)
    EXPECT_NEAR(dispatch->all_to_all.share[r], load.rank_share[r], 1e-12);
  EXPECT_EQ(dispatch->comm.dim, Dim::kEp);
}

// Megatron's all-to-all dispatcher groups what a rank receives by local expert and restores the
// rank order for the combine: a copy of each expert's tokens on each side, forward and backward,
// only where a rank holds several experts and only under effects.moe_routing_kernels.
TEST(MoeOps, RanksOfSeveralExpertsSortTheirTokensByExpert) {
  auto names_of = [](const clustersim::RunConfig& config, Phase phase) {
    std::vector<std::string> names;
    for (const auto& op : moe_block_ops(config, phase, RoutingTable(config).load(3)))
      names.push_back(std::string(op.name()));
    return names;
  };
  const auto qwen = load_run_config("", "qwen3-30b-a3b", {}).config;  // 128 experts over EP 8
  const auto fwd = names_of(qwen, Phase::kForward);
  const auto at = [&](std::string_view n) {
    return std::find(fwd.begin(), fwd.end(), n) - fwd.begin();
  };
  ASSERT_LT(at("moe_sort_chunks_fwd"), static_cast<std::ptrdiff_t>(fwd.size()));
  EXPECT_LT(at("moe_dispatch_a2a"), at("moe_sort_chunks_fwd"));
  EXPECT_LT(at("moe_sort_chunks_fwd"), at("moe_fc1_fwd"));
  EXPECT_LT(at("moe_fc2_fwd"), at("moe_restore_chunks_fwd"));
  EXPECT_LT(at("moe_restore_chunks_fwd"), at("moe_combine_a2a"));
  const auto bwd = names_of(qwen, Phase::kBackward);
  for (const char* n : {"moe_restore_chunks_bwd", "moe_sort_chunks_bwd"})
    EXPECT_NE(std::find(bwd.begin(), bwd.end(), n), bwd.end()) << n;

  // Each rank copies every token its experts take, in and out: 2 x tokens x hidden x bf16.
  const ExpertLoad load = RoutingTable(qwen).load(3);
  const auto ops = moe_block_ops(qwen, Phase::kForward, load);
  const LayerOp* sort = find_op(ops, "moe_sort_chunks_fwd");
  const LayerOp* fc1 = find_op(ops, "moe_fc1_fwd");
  ASSERT_NE(sort, nullptr);
  ASSERT_NE(fc1, nullptr);
  ASSERT_EQ(sort->rank_parts.size(), fc1->rank_parts.size());
  const double h = qwen.model().hidden_size();
  for (std::size_t r = 0; r < sort->rank_parts.size(); ++r) {
    double bytes = 0, tokens = 0;
    for (const auto& k : sort->rank_parts[r]) bytes += k.bytes;
    for (const auto& k : fc1->rank_parts[r]) tokens += static_cast<double>(k.m);
    EXPECT_NEAR(bytes, 2 * tokens * h * 2, 1e-6 * bytes) << "rank " << r;
  }

  auto off = qwen;
  off.mutable_effects()->set_moe_routing_kernels(false);
  for (const auto& n : names_of(off, Phase::kForward))
    EXPECT_EQ(n.find("chunks"), std::string::npos);
  for (const auto& n : names_of(mixtral(), Phase::kForward))  // one expert a rank
    EXPECT_EQ(n.find("chunks"), std::string::npos) << n;
}

// The kernels that move tokens into and out of expert order (permute and unpermute around the
// all-to-alls, the sort by local expert after them, DeepEP's permute on arrival) are token
// permutations, timed at the GPU's permutation rate; the router's scores and top-k are not.
TEST(MoeOps, TokenMovingKernelsAreTokenPermutations) {
  const std::vector<std::string> movers = {"moe_permute", "moe_unpermute", "moe_sort_chunks",
                                           "moe_restore_chunks"};
  auto mover = [&](std::string_view name) {
    return std::any_of(movers.begin(), movers.end(),
                       [&](const std::string& m) { return name.starts_with(m); });
  };
  const auto qwen = load_run_config("", "qwen3-30b-a3b", {}).config;    // all-to-all dispatcher
  const auto deepseek = load_run_config("", "deepseek-v3", {}).config;  // DeepEP
  // Qwen3: permute, sort, restore and unpermute each way; DeepSeek-V3: DeepEP's two each way.
  const std::vector<std::pair<const clustersim::RunConfig*, int>> expected = {{&qwen, 8},
                                                                              {&deepseek, 4}};
  for (const auto& [config, count] : expected) {
    const ExpertLoad load = RoutingTable(*config).load(config->model().num_layers() - 1);
    int permutations = 0;
    for (const Phase phase : {Phase::kForward, Phase::kBackward}) {
      for (const auto& op : moe_block_ops(*config, phase, load)) {
        if (op.is_comm) continue;
        EXPECT_EQ(op.kernel.token_permute, mover(op.kernel.name)) << op.kernel.name;
        for (const auto& parts : op.rank_parts)
          for (const auto& k : parts) EXPECT_EQ(k.token_permute, op.kernel.token_permute);
        permutations += op.kernel.token_permute ? 1 : 0;
      }
    }
    EXPECT_EQ(permutations, count);
  }
}

// The dispatcher all-gathers every EP rank's token count per expert (int64) before the forward's
// all-to-alls; the backward reuses the splits.
TEST(MoeOps, TheForwardGathersTokenCountsBeforeItsAllToAlls) {
  const auto config = mixtral();  // 8 experts over EP 8
  const ExpertLoad load = RoutingTable(config).load(0);
  const auto fwd = moe_block_ops(config, Phase::kForward, load);
  std::ptrdiff_t counts = -1, dispatch = -1;
  for (std::size_t i = 0; i < fwd.size(); ++i) {
    if (fwd[i].name() == "moe_token_counts_ag") counts = static_cast<std::ptrdiff_t>(i);
    if (fwd[i].name() == "moe_dispatch_a2a") dispatch = static_cast<std::ptrdiff_t>(i);
  }
  ASSERT_GE(counts, 0);
  EXPECT_LT(counts, dispatch);
  const LayerOp& op = fwd[static_cast<std::size_t>(counts)];
  EXPECT_EQ(op.comm, (LayerComm{Dim::kEp, coll::Op::kAllGather}));
  EXPECT_EQ(op.bytes, 8 * 8 * 8);  // EP ranks x experts x 8 bytes
  for (const auto& b : moe_block_ops(config, Phase::kBackward, load))
    EXPECT_NE(b.name(), "moe_token_counts_ag");
  for (const auto& f : moe_block_ops(mixtral({"parallel.ep=1"}), Phase::kForward, load))
    EXPECT_NE(f.name(), "moe_token_counts_ag");
}

// The flex dispatcher with DeepEP sends the tokens as they lie and makes the experts' rows on
// arrival: no permute before the dispatch or unpermute after the combine, no chunk sorts, a
// permute after the dispatch and an unpermute before the combine of the same bytes as the
// sorts; the FP8 quantize runs over the tokens, not their copies.
TEST(MoeOps, DeepEpPermutesOnArrival) {
  const auto ds = load_run_config("", "deepseek-v3", {}).config;
  ASSERT_EQ(ds.model().moe().dispatcher(), clustersim::MoeConfig::DEEPEP);
  auto a2a = ds;
  a2a.mutable_model()->mutable_moe()->set_dispatcher(clustersim::MoeConfig::ALL_TO_ALL);
  const ExpertLoad load = RoutingTable(ds).load(5);
  auto bytes = [](const LayerOp* op) {
    double b = 0;
    for (const auto& parts : op->rank_parts)
      for (const auto& k : parts) b += k.bytes;
    return op->rank_parts.empty() ? op->kernel.bytes : b;
  };
  const auto deepep = moe_block_ops(ds, Phase::kForward, load);
  const auto sorted = moe_block_ops(a2a, Phase::kForward, load);
  for (const char* gone :
       {"moe_permute_fwd", "moe_unpermute_fwd", "moe_sort_chunks_fwd", "moe_restore_chunks_fwd"})
    EXPECT_EQ(find_op(deepep, gone), nullptr) << gone;
  for (const char* kept :
       {"moe_permute_fwd", "moe_unpermute_fwd", "moe_sort_chunks_fwd", "moe_restore_chunks_fwd"})
    EXPECT_NE(find_op(sorted, kept), nullptr) << kept;
  const LayerOp* on_arrival = find_op(deepep, "moe_permute_recv_fwd");
  const LayerOp* before_combine = find_op(deepep, "moe_unpermute_recv_fwd");
  ASSERT_NE(on_arrival, nullptr);
  ASSERT_NE(before_combine, nullptr);
  EXPECT_DOUBLE_EQ(bytes(on_arrival), bytes(find_op(sorted, "moe_sort_chunks_fwd")));
  EXPECT_DOUBLE_EQ(bytes(before_combine), bytes(find_op(sorted, "moe_restore_chunks_fwd")));
  // Quantized: 4096 tokens against their 8 copies each.
  EXPECT_DOUBLE_EQ(8 * find_op(deepep, "moe_dispatch_quantize_fwd")->kernel.bytes,
                   find_op(sorted, "moe_dispatch_quantize_fwd")->kernel.bytes);
  for (const char* bwd : {"moe_unpermute_recv_bwd", "moe_permute_recv_bwd"})
    EXPECT_NE(find_op(moe_block_ops(ds, Phase::kBackward, load), bwd), nullptr) << bwd;
}

TEST(MoeOps, ExpertOpsRunAsTheGroupedKernelUnlessTheEffectIsOff) {
  for (const bool on : {true, false}) {
    auto config = mixtral({std::string("effects.moe_grouped_gemm=") + (on ? "true" : "false")});
    const ExpertLoad load = RoutingTable(config).load(0);
    int expert_ops = 0;
    for (const Phase phase : {Phase::kForward, Phase::kBackward, Phase::kWeightGrad})
      for (const auto& op : moe_block_ops(config, phase, load)) {
        if (op.rank_parts.empty()) continue;
        ++expert_ops;
        EXPECT_EQ(op.grouped,
                  on ? compute::GroupedGemmModel::kKernel : compute::GroupedGemmModel::kIdeal)
            << op.kernel.name;
      }
    // fc1, activation, fc2 forward and backward; fc1, fc2 weight gradients.
    EXPECT_EQ(expert_ops, 8);
  }
}

}  // namespace
}  // namespace cs::workload
