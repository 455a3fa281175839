// The planner on mixtures of experts: the expert-parallel search, its rank order, its estimate
// terms, and a model whose experts only fit when split over EP.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "sim/compute/gpu_profile.h"
#include "sim/config/run_config.h"
#include "sim/plan/collective_cost.h"
#include "sim/plan/planner.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/validate.h"
#include "tests/support/test_helpers.h"

namespace cs::plan {
namespace {

using clustersim::ParallelConfig;

// Mixtral 8x7B cut to 4 layers of 1K tokens, with EP 1 and the default rank order so that the
// planner's own choices show.
clustersim::RunConfig small_moe(std::vector<std::string> overrides = {}) {
  overrides.insert(overrides.begin(),
                   {"model.num_layers=4", "model.seq_length=1024", "parallel.global_batch_size=32",
                    "parallel.ep=1", "parallel.rank_order=TP_CP_PP_DP"});
  return load_run_config("", "mixtral-8x7b", overrides).config;
}

TEST(PlannerMoe, SearchesEveryValidExpertParallelSizeAndExpertTp) {
  const auto base = small_moe();
  const auto layouts = enumerate_layouts(base, 16, 8);
  std::set<int32_t> eps;
  bool expert_tp_one = false;
  for (const auto& c : layouts) {
    const auto& p = c.parallel();
    EXPECT_NO_THROW(workload::validate_run_config(c, 0, "candidate")) << short_layout(c);
    const int32_t etp = workload::expert_tp_of(p);
    EXPECT_TRUE(etp == p.tp() || etp == 1);
    EXPECT_EQ(8 % p.ep(), 0);
    EXPECT_EQ(int64_t{p.tp()} * p.cp() * p.dp() % (int64_t{etp} * p.ep()), 0);
    // Split experts take Megatron-Core's order; the others keep the base config's.
    EXPECT_EQ(p.rank_order(),
              p.ep() > 1 ? ParallelConfig::TP_CP_DP_PP : ParallelConfig::TP_CP_PP_DP)
        << short_layout(c);
    if (p.ep() > 1) {
      EXPECT_NE(short_layout(c).find(" EP " + std::to_string(p.ep()) + " EDP "), std::string::npos)
          << short_layout(c);
    }
    if (etp != p.tp()) {
      expert_tp_one = true;
      EXPECT_NE(short_layout(c).find(", ETP 1, "), std::string::npos) << short_layout(c);
    }
    eps.insert(p.ep());
  }
  EXPECT_EQ(eps, (std::set<int32_t>{1, 2, 4, 8}));
  EXPECT_TRUE(expert_tp_one);
  // Pinned, the rank order is every candidate's, and the search is otherwise the same.
  const auto pinned = enumerate_layouts(base, 16, 8, ParallelConfig::TP_CP_PP_DP);
  ASSERT_EQ(pinned.size(), layouts.size());
  for (const auto& c : pinned) EXPECT_EQ(c.parallel().rank_order(), ParallelConfig::TP_CP_PP_DP);
}

TEST(PlannerMoe, SplitsTheExpertsOfLayoutsWithoutTensorParallelism) {
  // TP 1 layouts (DeepSeek-V3's, Mixtral's on 64 H100s) take every EP size as TP 2 ones do.
  std::set<int32_t> eps;
  for (const auto& c : enumerate_layouts(small_moe(), 16, 8))
    if (c.parallel().tp() == 1) eps.insert(c.parallel().ep());
  EXPECT_EQ(eps, (std::set<int32_t>{1, 2, 4, 8}));
}

TEST(PlannerMoe, DenseLayoutsLeaveTheExpertFieldsUnset) {
  const auto base = load_run_config("", "llama3-8b", {"model.num_layers=4"}).config;
  for (const auto& c : enumerate_layouts(base, 16, 8)) {
    EXPECT_FALSE(c.parallel().has_ep());
    EXPECT_FALSE(c.parallel().has_etp());
    EXPECT_FALSE(c.parallel().has_rank_order());
  }
}

// An all-to-all moves this GPU's T x top_k x h bf16 bytes, of which (ep - 1) / ep leave the GPU:
// inside a server over NVLink, across servers over the NIC, at once. NCCL's step latencies are off.
TEST(PlannerMoe, AllToAllsCrossTheNicAcrossServers) {
  auto config =
      small_moe({"parallel.pp=1", "parallel.dp=8", "parallel.ep=8", "parallel.virtual_stages=1",
                 "parallel.schedule=ONE_F_ONE_B", "parallel.global_batch_size=8",
                 "parallel.rank_order=TP_CP_DP_PP", "effects.nccl_step_latency=false"});
  const auto gpu = compute::load_gpu_profile("h100");
  workload::Op a2a;
  a2a.kind = workload::OpKind::kCollective;
  a2a.dim = workload::Dim::kEp;
  a2a.coll_op = coll::Op::kAllToAll;
  a2a.bytes = 1024 * 2 * 4096 * 2;
  const double leaving = a2a.bytes * 7.0 / 8;
  const double nvlink = gpu.nvlink_bandwidth_gbytes() * 1e9;
  const double nic = gpu.nic_bandwidth_gbits() * 1e9 / 8;
  // Eight GPUs a server: all over NVLink; one: all over the NIC.
  EXPECT_NEAR(CollectiveCost(config, 8).seconds(a2a, true), 5e-6 + leaving / nvlink, 1e-12);
  EXPECT_NEAR(CollectiveCost(config, 1).seconds(a2a, true), 5e-6 + leaving / nic, 1e-12);
  // Two servers of four: 4 of the 7 peers are remote, and their NIC time is the longer.
  EXPECT_NEAR(CollectiveCost(config, 4).seconds(a2a, true), 5e-6 + leaving * 4 / 7 / nic, 1e-12);
  // The estimate pays them: 4 layers x 4 all-to-alls of its one microbatch, and more across
  // servers.
  EXPECT_GT(estimate_step_seconds(config, 1) - estimate_step_seconds(config, 8),
            16 * (leaving / nic - leaving / nvlink));
}

// DualPipe's overlapped pairs hide the all-to-alls under compute, up to a forward and a
// backward's worth per slot; in sequence they are all charged.
TEST(PlannerMoe, EstimateHidesTheAllToAllsOfDualPipePairs) {
  const std::vector<std::string> dualpipe = {"parallel.pp=2",
                                             "parallel.dp=8",
                                             "parallel.ep=8",
                                             "parallel.virtual_stages=2",
                                             "parallel.schedule=DUALPIPE",
                                             "parallel.global_batch_size=32"};
  auto sequential = dualpipe;
  sequential.push_back("parallel.dualpipe_overlap=false");
  const double paired = estimate_step_seconds(small_moe(dualpipe), 1);
  const double alone = estimate_step_seconds(small_moe(sequential), 1);
  EXPECT_LT(paired, alone);
  EXPECT_GT(paired, 0);
}

// 2 layers of 32 experts, 1B parameters each (64B in all), and 2 KV heads, so TP is at most 2:
// on 16 x 80 GB, ZeRO-1 without EP keeps at least 16B parameters' states per GPU, 113 GB.
TEST(PlannerMoe, ExpertsThatFitOnlyWhenSplitAreSplitByTheBestPlan) {
  const auto base = small_moe({"model.num_layers=2", "model.num_kv_heads=2",
                               "model.moe.num_experts=32", "model.moe.expert_ffn_hidden_size=81920",
                               "parallel.global_batch_size=16", "cluster.gpu=h100"});
  int fitting_split = 0;
  for (const auto& c : enumerate_layouts(base, 16, 8)) {
    const FitCheck fit = check_fit(c, 80e9);
    // Without EP only ZeRO-3 fits: it gathers every expert's weights for every microbatch.
    if (c.parallel().ep() == 1 && c.parallel().zero_stage() == 1) {
      EXPECT_FALSE(fit.fits) << short_layout(c);
    }
    if (c.parallel().ep() > 1 && fit.fits) ++fitting_split;
  }
  EXPECT_GT(fitting_split, 0);
  PlanOptions o;
  o.gpus = 16;
  o.simulate = 4;
  o.refine = 0;
  o.jobs = 2;
  const PlanResult r = plan_layouts(base, o);
  ASSERT_FALSE(r.ranked.empty());
  for (const Candidate& c : r.ranked) {
    EXPECT_NO_THROW(workload::validate_run_config(c.config, 0, "candidate"));
    EXPECT_TRUE(c.fit.fits);
  }
  EXPECT_GT(r.ranked.front().config.parallel().ep(), 1) << short_layout(r.ranked.front().config);
  std::ostringstream json;
  write_plan_json(json, r, o);
  EXPECT_NE(json.str().find("\"ep\": " + std::to_string(r.ranked.front().config.parallel().ep())),
            std::string::npos)
      << json.str();
  EXPECT_NE(json.str().find("\"rank_order\": \"TP_CP_DP_PP\""), std::string::npos);
}

}  // namespace
}  // namespace cs::plan
