// The planner's search space takes in what the base config itself uses, and an empty plan says
// why it is empty.
#include "sim/plan/layout_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "sim/compute/gpu_profile.h"
#include "sim/config/run_config.h"
#include "sim/plan/planner.h"
#include "tests/support/run_fixtures.h"

namespace cs::plan {
namespace {

using clustersim::ParallelConfig;
using clustersim::RunConfig;
using testing_support::small_llama;

double h100_capacity() {
  return static_cast<double>(compute::hbm_capacity_bytes(compute::load_gpu_profile("h100")));
}

// The layouts of `layouts` with `want`'s searched parallel fields.
std::vector<const RunConfig*> same_layouts(const std::vector<RunConfig>& layouts,
                                           const ParallelConfig& want) {
  std::vector<const RunConfig*> out;
  for (const RunConfig& c : layouts) {
    const ParallelConfig& p = c.parallel();
    if (p.tp() == want.tp() && p.cp() == want.cp() && p.pp() == want.pp() && p.dp() == want.dp() &&
        p.schedule() == want.schedule() && p.virtual_stages() == want.virtual_stages() &&
        p.zero_stage() == want.zero_stage() &&
        p.sharded_grad_reduce() == want.sharded_grad_reduce() &&
        p.microbatch_size() == want.microbatch_size() && p.recompute() == want.recompute() &&
        p.checkpoint_every_k_layers() == want.checkpoint_every_k_layers() &&
        p.sequence_parallel() == want.sequence_parallel() &&
        std::equal(p.layers_per_stage().begin(), p.layers_per_stage().end(),
                   want.layers_per_stage().begin(), want.layers_per_stage().end()))
      out.push_back(&c);
  }
  return out;
}

TEST(LayoutSearch, Llama3_405bOn16kGpusHasItsOwnLayoutAndItFits) {
  // PP 16 does not divide 126 layers: the preset splits them unevenly, with ZeRO-2 gradients
  // reduced once per step, and fits in 82.2 of 85.5 GB (memory_plan_test).
  const RunConfig base = load_run_config("", "llama3-405b", {}).config;
  const auto layouts = enumerate_layouts(base, 16384, 8);
  const auto own = same_layouts(layouts, base.parallel());
  ASSERT_EQ(own.size(), 1u);
  EXPECT_TRUE(check_fit(*own[0], h100_capacity()).fits);
  // The split is kept on the other layouts of its pipeline too.
  int64_t uneven = 0;
  for (const auto& c : layouts) uneven += c.parallel().layers_per_stage_size() > 0;
  EXPECT_GT(uneven, 1);
}

TEST(LayoutSearch, APresetsClusterSizeGivesWayToTheSearchedGpus) {
  // mixtral-8x7b's preset names its 64 GPUs (cluster.num_gpus): planned on 1,024, every layout's
  // cluster has 1,024, or each run refuses it as larger than the cluster.
  const RunConfig base = load_run_config("", "mixtral-8x7b", {}).config;
  ASSERT_EQ(base.cluster().num_gpus(), 64);
  const auto layouts = enumerate_layouts(base, 1024, 8);
  ASSERT_FALSE(layouts.empty());
  for (const RunConfig& c : layouts) EXPECT_EQ(c.cluster().num_gpus(), 1024);
  // Without a count of its own, a config's layouts keep none.
  for (const RunConfig& c : enumerate_layouts(small_llama({}), 64, 8))
    EXPECT_EQ(c.cluster().num_gpus(), 0);
}

TEST(LayoutSearch, TheBasesOwnLayoutIsACandidateEvenWhereTheLoopsDoNotGo) {
  // GPipe, cp 8 and no sequence parallelism are none of the search's choices.
  const RunConfig base = small_llama({"parallel.tp=2", "parallel.cp=8", "parallel.dp=1",
                                      "parallel.sequence_parallel=false", "parallel.schedule=GPIPE",
                                      "parallel.pp=2", "parallel.global_batch_size=8"});
  const auto layouts = enumerate_layouts(base, 64, 8);
  ParallelConfig want = base.parallel();
  want.set_dp(2);  // scaled to 64 GPUs
  EXPECT_EQ(same_layouts(layouts, want).size(), 1u);
  // Searched once, not twice, when the loops make it too.
  const RunConfig plain = small_llama({"parallel.global_batch_size=64"});
  EXPECT_EQ(same_layouts(enumerate_layouts(plain, 64, 8), plain.parallel()).size(), 1u);
}

TEST(LayoutSearch, SearchesTheBasesOwnOptions) {
  // ZeRO-2 with gradients reduced once per step and checkpoints every 2 layers: searched, and no
  // longer fatal to the ZeRO-1 layouts, which cannot reduce that way.
  const RunConfig base = small_llama({"parallel.global_batch_size=64", "parallel.zero_stage=2",
                                      "parallel.sharded_grad_reduce=ONCE_PER_STEP",
                                      "parallel.checkpoint_every_k_layers=2",
                                      "parallel.microbatch_size=4", "parallel.dp=8"});
  const auto layouts = enumerate_layouts(base, 16, 8);
  int64_t zero1 = 0, zero2_once = 0, every_2 = 0, mbs4 = 0;
  for (const auto& c : layouts) {
    const auto& p = c.parallel();
    zero1 += p.zero_stage() == 1;
    zero2_once += p.zero_stage() == 2 && p.sharded_grad_reduce() == ParallelConfig::ONCE_PER_STEP;
    every_2 += p.checkpoint_every_k_layers() == 2;
    mbs4 += p.microbatch_size() == 4;
    if (p.zero_stage() < 2) {
      EXPECT_EQ(p.sharded_grad_reduce(), ParallelConfig::EVERY_MICROBATCH);
    }
  }
  EXPECT_GT(zero1, 0);
  EXPECT_GT(zero2_once, 0);
  EXPECT_GT(every_2, 0);
  EXPECT_GT(mbs4, 0);
}

TEST(LayoutSearch, CountsTheRefusedByTheFieldTheirErrorNames) {
  // 7 GPUs: TP, CP and PP 1, DP 7, which does not divide a batch of 64.
  const RunConfig base = small_llama({"parallel.global_batch_size=64"});
  const LayoutSearch s = search_layouts(base, 7, 8);
  EXPECT_TRUE(s.layouts.empty());
  ASSERT_EQ(s.invalid.count("parallel.global_batch_size"), 1u);
  EXPECT_GT(s.invalid.at("parallel.global_batch_size"), 0);
}

PlanOptions quick(int64_t gpus, int32_t simulate = 1) {
  PlanOptions o;
  o.gpus = gpus;
  o.simulate = simulate;
  o.refine = 0;
  o.jobs = 1;
  return o;
}

std::string printed(const PlanResult& r, const PlanOptions& o) {
  std::ostringstream out;
  print_plan(out, r, o);
  return out.str();
}

TEST(PlanRefusals, Llama3_405bOn16kGpusFits) {
  const RunConfig base = load_run_config("", "llama3-405b", {}).config;
  const PlanResult r = plan_layouts(base, quick(16384, 0));  // none simulated: the estimate ranks
  EXPECT_GT(r.fitting, 0);
  ASSERT_FALSE(r.ranked.empty());
  EXPECT_NE(printed(r, quick(16384, 0)).find("not simulated (--simulate 0)"), std::string::npos);
}

TEST(PlanRefusals, NothingValidNamesTheField) {
  const RunConfig base = small_llama({"parallel.global_batch_size=64"});
  const PlanResult r = plan_layouts(base, quick(7));
  EXPECT_EQ(r.enumerated, 0);
  const std::string text = printed(r, quick(7));
  EXPECT_NE(text.find("no valid layout on 7 GPUs"), std::string::npos) << text;
  EXPECT_NE(text.find("parallel.global_batch_size"), std::string::npos) << text;
}

TEST(PlanRefusals, AConfigErrorReadsInFull) {
  // Every layout fails on the model itself: the plan quotes the error `run` would give.
  const RunConfig base = small_llama({"model.vocab_size=-1"});
  const PlanResult r = plan_layouts(base, quick(8));
  EXPECT_EQ(r.enumerated, 0);
  const std::string text = printed(r, quick(8));
  EXPECT_NE(text.find("the first of them: "), std::string::npos) << text;
  EXPECT_NE(text.find("model.vocab_size = -1 must be positive"), std::string::npos) << text;
}

TEST(PlanRefusals, NothingFittingGivesTheSmallestPeakAndItsLayout) {
  // 405B on one server: every layout needs several times the HBM.
  const RunConfig base = load_run_config("", "llama3-405b", {}).config;
  const PlanResult r = plan_layouts(base, quick(8));
  ASSERT_GT(r.enumerated, 0);
  EXPECT_EQ(r.fitting, 0);
  EXPECT_EQ(r.refused.over_hbm, r.enumerated);
  EXPECT_GT(r.refused.least_peak, r.refused.capacity);
  // The least is the smallest peak of all: full recompute and ZeRO-3 on 8 GPUs.
  for (const auto& c : enumerate_layouts(base, 8, 8))
    EXPECT_GE(check_fit(c, r.refused.capacity).peak, r.refused.least_peak);
  const std::string text = printed(r, quick(8));
  EXPECT_NE(text.find("none fits: " + std::to_string(r.enumerated) + " layouts need more than"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(r.refused.least_layout), std::string::npos) << text;
  std::ostringstream json;
  write_plan_json(json, r, quick(8));
  EXPECT_NE(json.str().find("\"least_memory_gb\""), std::string::npos) << json.str();
}

}  // namespace
}  // namespace cs::plan
