// The layout planner: enumeration laws, the memory filter, ranking, and the fewest GPUs.
#include "sim/plan/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "sim/compute/gpu_profile.h"
#include "sim/config/run_config.h"
#include "sim/workload/schedules/registry.h"
#include "tests/support/record_fields_check.h"
#include "tests/support/run_fixtures.h"

namespace cs::plan {
namespace {

using testing_support::small_llama;

// A search on `gpus` GPUs that simulates `simulate` layouts and refines `refine`, on two threads.
PlanOptions options(int32_t gpus, int32_t simulate, int32_t refine) {
  PlanOptions o;
  o.gpus = gpus;
  o.simulate = simulate;
  o.refine = refine;
  o.jobs = 2;
  return o;
}

TEST(Planner, EveryLayoutUsesAllGpusAndKeepsTpInANode) {
  const auto base = small_llama({"parallel.global_batch_size=64"});
  const auto layouts = enumerate_layouts(base, 32, 8);
  ASSERT_FALSE(layouts.empty());
  for (const auto& c : layouts) {
    const auto& p = c.parallel();
    EXPECT_EQ(int64_t{p.tp()} * p.cp() * p.pp() * p.dp(), 32);
    EXPECT_EQ(8 % p.tp(), 0);
    EXPECT_EQ(64 % (p.dp() * p.microbatch_size()), 0);
    if (p.virtual_stages() > 1) {
      EXPECT_TRUE(workload::schedule_info(p.schedule()).virtual_stages) << p.schedule();
    }
  }
}

// The schedules' display names, and the order in which the search tries them: 1F1B alone without
// a pipeline; with one, the schedules of one virtual stage (1F1B, ZB-H1) before interleaving.
TEST(Planner, TriesTheSchedulesEntriesAskForInOrder) {
  const auto base = small_llama({"parallel.global_batch_size=64"});
  auto names = [&](int64_t gpus) {
    std::vector<std::string> out;
    for (const auto& c : enumerate_layouts(base, gpus, 8)) {
      const auto& p = c.parallel();
      if (p.tp() != 1 || p.cp() != 1 || p.dp() != 1 || p.zero_stage() != 1 ||
          p.microbatch_size() != 1 || p.recompute() != clustersim::ParallelConfig::NONE)
        continue;
      const std::string s = short_layout(c);
      out.push_back(s.substr(s.find(", ") + 2, s.find(", mbs") - s.find(", ") - 2));
    }
    return out;
  };
  EXPECT_EQ(names(1), (std::vector<std::string>{"1F1B"}));
  EXPECT_EQ(names(2), (std::vector<std::string>{"1F1B", "ZB-H1", "interleaved v2", "ZB-V v2",
                                                "DualPipe v2"}));
  auto gpipe = base;
  gpipe.mutable_parallel()->set_schedule(clustersim::ParallelConfig::GPIPE);
  EXPECT_NE(short_layout(gpipe).find(", GPipe, "), std::string::npos) << short_layout(gpipe);
}

// Layouts that differ only in what they recompute read differently: OP_SELECTIVE once read as
// NONE ("TP 1 CP 1 PP 1 DP 64, 1F1B, mbs 1, ZeRO-3, PYTORCH_FSDP" twice in one ranking). Every
// value of the enum, so that a new mode without a label fails here.
TEST(Planner, TheLayoutLabelNamesEveryRecomputeMode) {
  const auto base = small_llama({"parallel.global_batch_size=64"});
  const auto* modes = clustersim::ParallelConfig::Recompute_descriptor();
  std::set<std::string> labels;
  for (int i = 0; i < modes->value_count(); ++i) {
    auto c = base;
    c.mutable_parallel()->set_recompute(
        static_cast<clustersim::ParallelConfig::Recompute>(modes->value(i)->number()));
    labels.insert(short_layout(c));
    c.mutable_parallel()->set_checkpoint_every_k_layers(4);
    labels.insert(short_layout(c));
  }
  EXPECT_EQ(labels.size(), 2u * static_cast<std::size_t>(modes->value_count()));
  auto op = base;
  op.mutable_parallel()->set_recompute(clustersim::ParallelConfig::OP_SELECTIVE);
  EXPECT_NE(short_layout(op).find(", op-sel. recompute"), std::string::npos) << short_layout(op);
}

TEST(Planner, TheCostObjectiveRanksByTheRunWithItsFailures) {
  // Frequent interruptions, slow storage: goodput differs between layouts of 8 and 16 GPUs.
  auto base = small_llama({"parallel.global_batch_size=16", "cluster.gpu=h100",
                           "reliability.interruptions_per_gpu_day=2", "reliability.restart_s=600"});
  PlanOptions o = options(16, 4, 0);
  o.objective = Objective::kCost;
  const PlanResult r = plan_layouts(base, o);
  ASSERT_GE(r.ranked.size(), 2u);
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const auto& cost = r.ranked[i].report.cost;
    EXPECT_LT(cost.goodput, 1.0);
    EXPECT_DOUBLE_EQ(cost.effective_dollars, cost.dollars / cost.goodput);
    if (i) {
      EXPECT_LE(r.ranked[i - 1].report.cost.effective_dollars, cost.effective_dollars);
    }
  }
  std::ostringstream json;
  write_plan_json(json, r, o);
  EXPECT_NE(json.str().find("\"effective_dollars\""), std::string::npos);
}

TEST(Planner, RanksFittingSimulatedCandidatesBestFirst) {
  auto base = small_llama({"parallel.global_batch_size=16", "cluster.gpu=h100"});
  PlanOptions o = options(16, 3, 0);  // every step on the same (analytical) network
  const PlanResult r = plan_layouts(base, o);
  ASSERT_EQ(r.simulated, 3);
  EXPECT_GE(r.enumerated, r.fitting);
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    EXPECT_TRUE(r.ranked[i].fit.fits);
    EXPECT_EQ(r.ranked[i].report.gpus, 16);
    if (i) {
      EXPECT_LE(r.ranked[i - 1].report.iteration_time_s, r.ranked[i].report.iteration_time_s);
    }
  }
  // The JSON lists the same candidates in the same order.
  std::ostringstream json;
  write_plan_json(json, r, o);
  std::size_t entries = 0, at = 0;
  while ((at = json.str().find("\"iteration_time_s\"", at)) != std::string::npos) ++entries, ++at;
  EXPECT_EQ(entries, r.ranked.size());
  EXPECT_NE(json.str().find("\"layout\": \"" + short_layout(r.ranked[0].config) + "\""),
            std::string::npos);
}

// --simulate 0: the ranking is the pre-estimate's best `top`, none simulated, in the order the
// estimate (and, without simulation, nothing else) gives; the JSON says so and has no step.
TEST(Planner, RanksByThePreEstimateAloneWhenNoneIsSimulated) {
  auto base = small_llama({"parallel.global_batch_size=16", "cluster.gpu=h100"});
  PlanOptions o = options(16, 0, 0);
  o.top = 3;
  const PlanResult r = plan_layouts(base, o);
  EXPECT_EQ(r.simulated, 0);
  ASSERT_GT(r.fitting, 3);
  ASSERT_EQ(r.ranked.size(), 3u);
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    EXPECT_FALSE(r.ranked[i].simulated);
    EXPECT_TRUE(r.ranked[i].fit.fits);
    EXPECT_GT(r.ranked[i].estimate_s, 0);
    if (i) {
      EXPECT_LE(r.ranked[i - 1].estimate_s, r.ranked[i].estimate_s);
    }
  }
  std::ostringstream json, text;
  write_plan_json(json, r, o);
  EXPECT_NE(json.str().find("\"simulated\": false"), std::string::npos) << json.str();
  EXPECT_NE(json.str().find("\"estimate_s\""), std::string::npos);
  EXPECT_EQ(json.str().find("\"iteration_time_s\""), std::string::npos);
  print_plan(text, r, o);
  EXPECT_NE(text.str().find("not simulated (--simulate 0)"), std::string::npos) << text.str();
}

TEST(Planner, SearchesSoftwareStacksOnlyWhenAsked) {
  auto base = small_llama({"parallel.global_batch_size=16", "cluster.gpu=h100"});
  auto stacks_of = [](const LayoutSearch& s) {
    std::set<clustersim::SoftwareStack> out;
    for (const auto& c : s.layouts) out.insert(c.software_stack());
    return out;
  };
  EXPECT_EQ(stacks_of(search_layouts(base, 8, 8)),
            (std::set<clustersim::SoftwareStack>{clustersim::MEGATRON_TE}));
  const LayoutSearch all = search_layouts(
      base, 8, 8, std::nullopt,
      {clustersim::MEGATRON_TE, clustersim::PYTORCH_FSDP, clustersim::DEEPSPEED_ZERO});
  EXPECT_EQ(stacks_of(all).size(), 3u);
  for (const auto& c : all.layouts) {
    if (c.software_stack() != clustersim::PYTORCH_FSDP) continue;
    EXPECT_EQ(c.parallel().tp(), 1);  // the stack's limits hold on every candidate
    EXPECT_EQ(c.parallel().zero_stage(), 3);
    EXPECT_EQ(c.resolved_stack().name(), "pytorch_fsdp2");
  }
  EXPECT_GT(all.invalid.at("software_stack"), 0);  // what the stacks refuse, counted
  // Each stack's own checkpointing modes are tried, not the other's: torchtitan's op-level
  // selective under FSDP, Megatron's selective under Megatron-TE.
  std::set<std::pair<clustersim::SoftwareStack, clustersim::ParallelConfig::Recompute>> modes;
  for (const auto& c : all.layouts) modes.insert({c.software_stack(), c.parallel().recompute()});
  EXPECT_TRUE(modes.count({clustersim::PYTORCH_FSDP, clustersim::ParallelConfig::OP_SELECTIVE}));
  EXPECT_TRUE(modes.count({clustersim::MEGATRON_TE, clustersim::ParallelConfig::SELECTIVE}));
  EXPECT_FALSE(modes.count({clustersim::MEGATRON_TE, clustersim::ParallelConfig::OP_SELECTIVE}));
  EXPECT_FALSE(modes.count({clustersim::PYTORCH_FSDP, clustersim::ParallelConfig::SELECTIVE}));
  // The ranking simulates them and names the stack of each candidate.
  PlanOptions o = options(8, 4, 0);
  o.stacks = {clustersim::PYTORCH_FSDP};
  const PlanResult r = plan_layouts(base, o);
  ASSERT_FALSE(r.ranked.empty());
  for (const auto& c : r.ranked) {
    EXPECT_EQ(c.config.software_stack(), clustersim::PYTORCH_FSDP);
    EXPECT_NE(short_layout(c.config).find("PYTORCH_FSDP (pytorch_fsdp2)"), std::string::npos);
  }
}

TEST(Planner, LeadersAreRankedByTheirCongestionAwareStep) {
  auto base = small_llama({"parallel.global_batch_size=16", "cluster.gpu=h100"});
  PlanOptions o = options(16, 4, 2);
  const PlanResult r = plan_layouts(base, o);
  ASSERT_EQ(r.refined, 2);
  ASSERT_GE(r.ranked.size(), 3u);
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const Candidate& c = r.ranked[i];
    EXPECT_EQ(c.refined, i < 2);
    EXPECT_EQ(c.report.network, i < 2 ? "congestion_aware" : "analytical");
    EXPECT_GT(c.search_iteration_time_s, 0);
  }
  // The refined two are ordered by their congestion-aware step, which congestion only lengthens.
  EXPECT_LE(r.ranked[0].report.iteration_time_s, r.ranked[1].report.iteration_time_s);
  EXPECT_GE(r.ranked[0].report.iteration_time_s, r.ranked[0].search_iteration_time_s * (1 - 1e-9));
  o.refine = 0;
  EXPECT_EQ(plan_layouts(base, o).refined, 0);
}

// 20 GPUs leave a factor of 5 that neither the 16-sequence batch nor the 4 layers divide: the plan
// takes the most whole servers below with a valid layout, 16, and says so, where it once ranked
// nothing.
TEST(Planner, PlansTheMostServersBelowWhereNoLayoutOnTheCountIsValid) {
  const auto base = small_llama({"parallel.global_batch_size=16", "cluster.gpu=h100"});
  const PlanOptions o = options(20, 1, 0);
  const PlanResult r = plan_layouts(base, o);
  EXPECT_EQ(r.fallback_gpus, 16);
  ASSERT_FALSE(r.ranked.empty());
  EXPECT_EQ(r.ranked.front().report.gpus, 16);
  std::ostringstream text;
  print_plan(text, r, o);
  EXPECT_NE(text.str().find("no valid layout on 20 GPUs: planned on 16"), std::string::npos);
  EXPECT_EQ(plan_layouts(base, options(16, 1, 0)).fallback_gpus, 0);
}

// llama3-24k hashes each connection onto one of its paths (multi-flow ECMP). With
// effects.analytical_hashed_paths off, the analytical network and the pre-estimate do not see the
// collisions: a ranking left unrefined across servers says so there, and not on one server, nor
// where the fabric's adaptive routing spreads every connection, nor with the effect on.
TEST(Planner, AnUnrefinedRankingSaysWhereItMissesHashCollisions) {
  const auto printed_for = [](const std::vector<std::string>& overrides, int32_t gpus = 16) {
    const auto base = small_llama(overrides);
    const PlanOptions o = options(gpus, 1, 0);
    std::ostringstream text;
    print_plan(text, plan_layouts(base, o), o);
    return text.str();
  };
  const std::string hashed = "ECMP hashes connections onto paths";
  const std::vector<std::string> pooled = {"parallel.global_batch_size=16",
                                           "cluster.topology=llama3-24k",
                                           "effects.analytical_hashed_paths=false"};
  EXPECT_NE(printed_for(pooled).find("on llama3-24k " + hashed), std::string::npos);
  const std::string one_server = printed_for(pooled, 8);
  EXPECT_NE(one_server.find("analytical network only"), std::string::npos) << one_server;
  EXPECT_EQ(one_server.find(hashed), std::string::npos);
  auto adaptive = pooled;
  adaptive.push_back("cluster.load_balancing.mode=ADAPTIVE");
  EXPECT_EQ(printed_for(adaptive).find(hashed), std::string::npos);
  EXPECT_EQ(
      printed_for({"parallel.global_batch_size=16", "cluster.topology=llama3-24k"}).find(hashed),
      std::string::npos);
}

TEST(Planner, ProgressCountsEachPassUpToItsTotal) {
  auto base = small_llama({"parallel.global_batch_size=16", "cluster.gpu=h100"});
  PlanOptions o = options(16, 4, 2);
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  o.on_progress = [&calls](std::size_t done, std::size_t n) { calls.emplace_back(done, n); };
  const PlanResult r = plan_layouts(base, o);
  ASSERT_EQ(r.simulated, 4);
  // The search pass 0..4 of 4, then the refine pass 0..2 of 2, one step at a time.
  std::vector<std::pair<std::size_t, std::size_t>> expected;
  for (std::size_t i = 0; i <= 4; ++i) expected.emplace_back(i, 4);
  for (std::size_t i = 0; i <= 2; ++i) expected.emplace_back(i, 2);
  EXPECT_EQ(calls, expected);
}

// What a plan prints and writes as JSON, but the wall time.
std::string plan_outputs(const PlanResult& r, const PlanOptions& o) {
  std::ostringstream text, json;
  print_plan(text, r, o);
  write_plan_json(json, r, o);
  std::string t = text.str();
  return t.substr(t.find('\n')) + json.str();
}

TEST(Planner, TwoRanksRankExactlyWhatOneProcessRanks) {
  auto base = small_llama({"parallel.global_batch_size=16", "cluster.gpu=h100"});
  PlanOptions o = options(16, 5, 2);
  const std::string single = plan_outputs(plan_layouts(base, o), o);
  // Rank 1 simulates every other candidate and hands its figures over as text, as mpirun would.
  std::string from_rank1;
  PlanOptions rank1 = o;
  rank1.rank = 1;
  rank1.ranks = 2;
  rank1.gather = [&](const std::string& mine) {
    from_rank1 = mine;
    return std::vector<std::string>{};
  };
  EXPECT_TRUE(plan_layouts(base, rank1).ranked.empty());
  ASSERT_FALSE(from_rank1.empty());
  PlanOptions rank0 = o;
  rank0.ranks = 2;
  rank0.gather = [&](const std::string& mine) {
    return std::vector<std::string>{mine, from_rank1};
  };
  EXPECT_EQ(plan_outputs(plan_layouts(base, rank0), rank0), single);
  EXPECT_NE(single.find("\"analytical_iteration_time_s\""), std::string::npos);
  EXPECT_EQ(single.find("analytical_step_s"), std::string::npos);
}

TEST(Planner, EveryWireFigureOfACandidateCrossesExactly) {
  Candidate sent;
  testing_support::fill_every_field(candidate_fields(), sent);
  std::vector<Candidate> received(4);
  EXPECT_EQ(parse_candidate_figures(serialize_candidate_figures(3, sent), received), 3u);
  // The fit and the estimate are each rank's own; every other figure travels, bit for bit.
  std::vector<report::Field<Candidate>> wire;
  for (const auto& f : candidate_fields())
    if (f.shown & report::kWire) wire.push_back(f);
  EXPECT_GE(wire.size(), 15u);
  EXPECT_EQ(testing_support::first_difference<Candidate>(wire, sent, received[3]), "");
  EXPECT_THROW(parse_candidate_figures(serialize_candidate_figures(4, sent), received),
               std::runtime_error);
}

TEST(Planner, TheReserveComesOffTheCapacityOfTheFitsTest) {
  auto base = small_llama({"parallel.global_batch_size=16", "cluster.gpu=h100"});
  PlanOptions o = options(16, 2, 0);
  const PlanResult all = plan_layouts(base, o);
  const auto hbm =
      static_cast<double>(compute::hbm_capacity_bytes(compute::load_gpu_profile("h100")));
  double largest = 0;  // the peak of the hungriest layout that fits the whole HBM
  for (const auto& c : search_layouts(base, 16, 8, std::nullopt, {}).layouts) {
    const FitCheck f = check_fit(c, hbm);
    if (f.fits) largest = std::max(largest, f.peak);
  }
  ASSERT_GT(largest, 0);
  o.reserve_bytes = hbm - largest + 1;  // leaves that layout 1 byte short
  const PlanResult reserved = plan_layouts(base, o);
  EXPECT_LT(reserved.fitting, all.fitting);
  EXPECT_DOUBLE_EQ(reserved.refused.capacity, largest - 1);
}

// A reserve that leaves no HBM would refuse every layout, and send find_min_gpus through every
// GPU count: both refuse it, naming the GPU's capacity.
TEST(Planner, AReserveOfTheWholeHbmIsRefused) {
  auto base = small_llama({"parallel.global_batch_size=16", "cluster.gpu=h100"});
  const auto hbm =
      static_cast<double>(compute::hbm_capacity_bytes(compute::load_gpu_profile("h100")));
  EXPECT_DOUBLE_EQ(usable_hbm_bytes(base, 4e9), hbm - 4e9);
  PlanOptions o = options(16, 2, 0);
  o.reserve_bytes = hbm;
  try {
    plan_layouts(base, o);
    ADD_FAILURE() << "a reserve of the whole HBM was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("leaves no HBM for any layout: one h100 has"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(find_min_gpus(base, 64, 8, std::nullopt, hbm + 1), std::invalid_argument);
  EXPECT_THROW(usable_hbm_bytes(base, -1), std::invalid_argument);
}

TEST(Planner, MinGpusIsMinimal) {
  // A model that cannot fit on one 80 GB GPU: 8B parameters need 128 GB of states alone.
  auto base =
      small_llama({"model.num_layers=32", "parallel.global_batch_size=64", "cluster.gpu=h100"});
  const MinGpus m = find_min_gpus(base, 64, 8);
  ASSERT_GT(m.gpus, 1);
  EXPECT_TRUE(m.layout.fit.fits);
  const auto& p = m.layout.config.parallel();
  EXPECT_EQ(int64_t{p.tp()} * p.cp() * p.pp() * p.dp(), m.gpus);
  const double capacity = 80e9;
  for (int64_t g = 1; g < m.gpus; ++g)
    for (const auto& c : enumerate_layouts(base, g, 8)) EXPECT_FALSE(check_fit(c, capacity).fits);
}

TEST(Planner, EstimateAmortisesTheBubbleOverMoreMicrobatches) {
  // Per microbatch the estimate falls as m grows: the pipeline's fill and drain, about p - 1
  // passes, are paid once a step.
  const auto a = small_llama({"parallel.pp=4", "parallel.dp=1", "parallel.global_batch_size=4"});
  const auto b = small_llama({"parallel.pp=4", "parallel.dp=1", "parallel.global_batch_size=16"});
  const double est_a = estimate_step_seconds(a, 8), est_b = estimate_step_seconds(b, 8);
  // A microbatch more costs a pass of the slowest stage (the last, with the output layer and
  // loss); est_a beyond its 4 such passes holds the fill and drain (3 passes of the lighter
  // stages: 1.5 of the slowest here) and the optimizer.
  const double pass = (est_b - est_a) / 12;
  EXPECT_GT(pass, 0);
  EXPECT_LT(est_b / 16, est_a / 4);
  const double beyond = est_a - 4 * pass;
  EXPECT_GT(beyond, pass) << est_a << " " << est_b;
  EXPECT_LT(beyond, 3 * pass) << est_a << " " << est_b;
}

// llama3-24k's pods of 3,072 GPUs have a seventh of their NICs' rate above them. ZeRO-3 at DP
// 1,024 gathers every layer by PAT over servers 96 GPUs apart, whose longer steps all leave the
// pod; the preset's ZeRO-2 over DP 128 runs rings, which leave a pod once a ring. The links are
// pooled into trunks here, as if sprayed (analytical_hashed_paths off; StepEstimate tests the
// hashed links).
TEST(Planner, EstimateSlowsGathersThatLeaveAnOversubscribedPod) {
  const auto config = [](std::vector<std::string> sets, bool trunks) {
    sets.push_back("effects.analytical_hashed_paths=false");
    sets.push_back(std::string("effects.analytical_oversubscribed_trunks=") +
                   (trunks ? "true" : "false"));
    return load_run_config("", "llama3-405b", sets).config;
  };
  const std::vector<std::string> zero3{"parallel.cp=4",
                                       "parallel.pp=3",
                                       "parallel.dp=1024",
                                       "parallel.zero_stage=3",
                                       "parallel.schedule=ZB_V",
                                       "parallel.microbatch_size=2",
                                       "parallel.layers_per_stage="};
  const double across = estimate_step_seconds(config(zero3, true), 8);
  const double free = estimate_step_seconds(config(zero3, false), 8);
  EXPECT_GT(across, 3 * free) << across << " vs " << free;
  EXPECT_EQ(estimate_step_seconds(config({}, true), 8),
            estimate_step_seconds(config({}, false), 8));
}

// ZeRO-3 over 24,576 ranks, two a server, gathers each layer by NCCL's ring (PAT needs one GPU a
// server): 24,575 steps of NCCL's network latency a call, which the estimate charges every call.
TEST(Planner, EstimateChargesNcclsLatencyForEachDataParallelCall) {
  const auto config = [](bool latency) {
    return load_run_config(
               "", "llama3-8b",
               {"cluster.topology=dgx-h100", "parallel.global_batch_size=98304", "parallel.tp=2",
                "parallel.pp=2", "parallel.dp=24576", "parallel.virtual_stages=4",
                "parallel.zero_stage=3", "parallel.schedule=INTERLEAVED",
                "parallel.microbatch_size=2",
                std::string("effects.nccl_step_latency=") + (latency ? "true" : "false")})
        .config;
  };
  const double with = estimate_step_seconds(config(true), 8);
  const double without = estimate_step_seconds(config(false), 8);
  // At least one pass of 16 layer calls, each of 24,575 steps of no less than NCCL's 3.4 us a
  // hop (its NVLink ring latency; across servers 14). The layout simulates in 5.0 s on the
  // analytical network; without the latencies the estimate was 0.74.
  EXPECT_GT(with - without, 16 * 24575 * 3.4e-6) << with << " vs " << without;
}

}  // namespace
}  // namespace cs::plan
