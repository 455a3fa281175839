// End-to-end steps on small layouts: determinism, communication volumes, validation.
#include "sim/run/step_simulation.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/config/run_config.h"
#include "sim/workload/model_math.h"
#include "tests/support/lowering_fixtures.h"
#include "tests/support/run_fixtures.h"
#include "tests/support/test_helpers.h"

namespace cs::run {
namespace {

using testing_support::report_json;
using testing_support::small_llama;

TEST(StepSimulation, SameConfigSameJsonBitForBit) {
  const auto config = small_llama(
      {"parallel.tp=4", "parallel.pp=2", "parallel.dp=4", "parallel.global_batch_size=16"});
  const std::string a = report_json(simulate_step(config, "test"));
  const std::string b = report_json(simulate_step(config, "test"));
  EXPECT_EQ(a, b);
  EXPECT_NE(a.find("\"iteration_time_s\""), std::string::npos);
}

// sequence_parallel at TP 1 splits nothing: the step is the one without it, and the label does
// not claim "SP" (it did, for --set parallel.tp=1 on a preset with SP on).
TEST(StepSimulation, SequenceParallelAtTpOneIsNotInTheLayout) {
  const std::vector<std::string> tp1 = {"parallel.tp=1", "parallel.dp=8",
                                        "parallel.global_batch_size=16"};
  auto with = tp1, without = tp1;
  with.push_back("parallel.sequence_parallel=true");
  without.push_back("parallel.sequence_parallel=false");
  const auto on = simulate_step(small_llama(with), "test");
  const auto off = simulate_step(small_llama(without), "test");
  EXPECT_EQ(on.layout, off.layout);
  EXPECT_EQ(on.layout.find("SP"), std::string::npos) << on.layout;
  EXPECT_DOUBLE_EQ(on.iteration_time_s, off.iteration_time_s);
  const auto tp2 =
      simulate_step(small_llama({"parallel.tp=2", "parallel.dp=4", "parallel.global_batch_size=16",
                                 "parallel.sequence_parallel=true"}),
                    "test");
  EXPECT_NE(tp2.layout.find(", SP"), std::string::npos) << tp2.layout;
}

// The report names each kind of collective by how it ran: NCCL's choice of algorithm and protocol
// for each (dimension, op), with its calls and mean size. A forced protocol shows in every kind;
// an extrapolated step counts the calls the full run makes.
TEST(StepSimulation, CollectivesRunNameNcclsChoiceAndCountEveryCall) {
  const std::vector<std::string> layout = {"parallel.tp=2", "parallel.dp=4",
                                           "parallel.sequence_parallel=true",
                                           "parallel.global_batch_size=512"};
  auto full_run = layout;
  full_run.push_back("simulation.microbatch_extrapolation=false");
  const auto extrapolated = simulate_step(small_llama(layout), "test");
  const auto full = simulate_step(small_llama(full_run), "test");
  ASSERT_FALSE(extrapolated.extrapolated_from.empty());
  ASSERT_FALSE(full.collectives_run.empty());
  std::set<std::string> dims;
  for (const auto& c : full.collectives_run) {
    dims.insert(c.dim);
    EXPECT_GT(c.calls, 0) << c.dim << " " << c.op;
    EXPECT_GT(c.mean_bytes, 0) << c.dim << " " << c.op;
  }
  EXPECT_EQ(dims, (std::set<std::string>{"tp", "dp"}));
  ASSERT_EQ(extrapolated.collectives_run.size(), full.collectives_run.size());
  for (std::size_t i = 0; i < full.collectives_run.size(); ++i) {
    const auto& a = extrapolated.collectives_run[i];
    const auto& b = full.collectives_run[i];
    EXPECT_EQ(a.dim + a.op + a.algo + a.protocol, b.dim + b.op + b.algo + b.protocol);
    EXPECT_DOUBLE_EQ(a.calls, b.calls) << b.dim << " " << b.op;
    EXPECT_DOUBLE_EQ(a.mean_bytes, b.mean_bytes) << b.dim << " " << b.op;
  }
  auto forced = layout;
  forced.push_back("nccl.protocol=LL128");
  for (const auto& c : simulate_step(small_llama(forced), "test").collectives_run)
    EXPECT_EQ(c.protocol, "ll128") << c.dim << " " << c.op << " " << c.algo;
}

TEST(StepSimulation, ReusingIsolatedCollectivesChangesNothingButSpeed) {
  // TP 8 fills each server and no other dimension shares one: TP collectives own their NVLink
  // ports, so timing one and reusing it must give exactly what simulating every message gives.
  const auto config = small_llama(
      {"parallel.tp=8", "parallel.pp=2", "parallel.dp=2", "parallel.global_batch_size=8",
       "simulation.fold_tensor_parallel=false", "simulation.fluid_collectives=false"});
  SimulationOptions every_message;
  every_message.reuse_isolated_collectives = false;
  const auto fast = simulate_step(config, "test");
  const auto full = simulate_step(config, "test", every_message);
  EXPECT_DOUBLE_EQ(fast.iteration_time_s, full.iteration_time_s);
  EXPECT_DOUBLE_EQ(fast.comm_bytes_nvlink, full.comm_bytes_nvlink);
  EXPECT_DOUBLE_EQ(fast.comm_bytes_by_dim[0], full.comm_bytes_by_dim[0]);
  EXPECT_LT(fast.events, full.events / 2);
}

TEST(StepSimulation, DataParallelAllReduceMovesTwoNMinusOneOverNOfTheGradients) {
  // ZeRO-0: every gradient byte is all-reduced once per step, in ring buckets, in the type of the
  // gradient buffers: 4 bytes per element in fp32 (the default), 2 in bf16.
  for (const auto& [dtype, element] : {std::pair{"GRAD_FP32", 4.0}, std::pair{"GRAD_BF16", 2.0}}) {
    for (const int dp : {2, 4, 8}) {
      const auto config =
          small_llama({"parallel.tp=2", "parallel.dp=" + std::to_string(dp),
                       "parallel.global_batch_size=" + std::to_string(dp), "parallel.zero_stage=0",
                       "parallel.dp_bucket_params=100000000",
                       std::string("parallel.grad_reduce_dtype=") + dtype});
      const auto r = simulate_step(config, "test");
      const double grad_bytes = element * static_cast<double>(workload::stage_params(config, 0));
      const double per_rank = r.comm_bytes_by_dim[3] / r.gpus;
      EXPECT_NEAR(per_rank / grad_bytes, 2.0 * (dp - 1) / dp, 1e-6) << "dp=" << dp << dtype;
    }
  }
}

TEST(StepSimulation, Fp32GradientReductionMovesTwiceTheBf16Bytes) {
  auto dp_bytes = [](const char* dtype) {
    const auto config =
        small_llama({"parallel.tp=2", "parallel.dp=4", "parallel.global_batch_size=4",
                     "parallel.zero_stage=0", std::string("parallel.grad_reduce_dtype=") + dtype});
    return simulate_step(config, "test").comm_bytes_by_dim[3];
  };
  EXPECT_DOUBLE_EQ(dp_bytes("GRAD_FP32"), 2.0 * dp_bytes("GRAD_BF16"));
}

TEST(StepSimulation, ZeroTwoReduceScattersEveryMicrobatchWhereZeroOneReducesOnce) {
  // ZeRO-2 keeps only its gradient shard, so each of the 4 microbatches' gradients is
  // reduce-scattered ((dp-1)/dp of the fp32 gradient bytes per rank each time); ZeRO-1
  // accumulates the full gradients and reduce-scatters them once. The rest of the DP traffic
  // (the bf16 parameter all-gather) is the same in both.
  auto dp_bytes_per_rank = [](int zero) {
    const auto config = small_llama(
        {"parallel.tp=2", "parallel.dp=4", "parallel.global_batch_size=16",
         "parallel.zero_stage=" + std::to_string(zero), "parallel.dp_bucket_params=100000000"});
    const auto r = simulate_step(config, "test");
    return r.comm_bytes_by_dim[3] / r.gpus;
  };
  const auto config = small_llama({"parallel.tp=2"});
  const double grad_bytes = 4.0 * static_cast<double>(workload::stage_params(config, 0));
  const double reduce_scatter = grad_bytes * 3.0 / 4.0;
  EXPECT_NEAR((dp_bytes_per_rank(2) - dp_bytes_per_rank(1)) / reduce_scatter, 3.0, 1e-6);
}

TEST(StepSimulation, ZeroTwoReducingOncePerStepTimesLikeZeroOne) {
  // Sharded gradients accumulated per chunk and reduce-scattered once (Llama 3's FSDP) move
  // ZeRO-1's bytes at ZeRO-1's times: only the memory differs.
  auto run = [](std::vector<std::string> zero) {
    std::vector<std::string> o = {"parallel.tp=2", "parallel.pp=2", "parallel.dp=4",
                                  "parallel.global_batch_size=16"};
    o.insert(o.end(), zero.begin(), zero.end());
    return simulate_step(small_llama(o), "test");
  };
  const auto once = run({"parallel.zero_stage=2", "parallel.sharded_grad_reduce=ONCE_PER_STEP"});
  const auto one = run({"parallel.zero_stage=1"});
  const auto every = run({"parallel.zero_stage=2"});
  EXPECT_EQ(once.iteration_time_s, one.iteration_time_s);
  EXPECT_EQ(once.comm_bytes_by_dim, one.comm_bytes_by_dim);
  EXPECT_EQ(once.bubble_fraction, one.bubble_fraction);
  EXPECT_GT(every.comm_bytes_by_dim[3], once.comm_bytes_by_dim[3]);
}

TEST(StepSimulation, ContextParallelRanksSumTheirGradients) {
  // CP ranks saw different tokens of the same sequences: their gradients must be all-reduced,
  // 2(cp-1)/cp of the gradient bytes per rank at least (K/V gathers come on top).
  const auto config = small_llama({"parallel.tp=1", "parallel.cp=2", "parallel.dp=1",
                                   "parallel.global_batch_size=2", "parallel.zero_stage=0"});
  const auto r = simulate_step(config, "test");
  const double grad_bytes = 2.0 * static_cast<double>(workload::stage_params(config, 0));
  EXPECT_GE(r.comm_bytes_by_dim[1] / r.gpus, grad_bytes * 2.0 * (2 - 1) / 2);
}

TEST(StepSimulation, ModelFlopsAndMfuAreConsistent) {
  const auto config =
      small_llama({"parallel.tp=2", "parallel.dp=2", "parallel.global_batch_size=4"});
  const auto r = simulate_step(config, "test");
  EXPECT_DOUBLE_EQ(r.model_flops_per_step, workload::model_flops_per_step(config));
  EXPECT_NEAR(r.mfu, r.model_flops_per_step / (r.iteration_time_s * r.gpus * 989.4e12), 1e-12);
  EXPECT_GT(r.mfu, 0.05);
  EXPECT_LT(r.mfu, 0.8);
  EXPECT_NEAR(r.tokens_per_s * r.iteration_time_s, 4.0 * 2048, 1e-6);
}

TEST(StepSimulation, IdealNetworkPipelineBubbleIsNearItsFormula) {
  // With a small vocabulary the embedding and the head are a sliver of the first and last
  // stages, so the stages are close to uniform and the bubble close to (p-1)/(m+p-1).
  const auto config =
      small_llama({"model.num_layers=16", "model.vocab_size=1024", "parallel.pp=4", "parallel.tp=1",
                   "parallel.dp=1", "parallel.global_batch_size=8", "network=IDEAL"});
  const auto r = simulate_step(config, "test");
  EXPECT_DOUBLE_EQ(r.analytic_bubble_fraction, 3.0 / 11.0);
  EXPECT_NEAR(r.bubble_fraction, r.analytic_bubble_fraction, 0.02);
  EXPECT_GT(r.bubble_fraction, 0.1);
  EXPECT_EQ(r.exposed(workload::Dim::kPp), 0);
}

// Each stage's lines, as its JSON gives them, against the step: compute-stream kernels, exposed
// communication by dimension, interference, host dispatch, side-stream hold and the bubble.
void expect_stage_lines_add_up(const report::StepReport& r, const std::string& what) {
  const double step = r.iteration_time_s;
  for (std::size_t i = 0; i < r.stages.size(); ++i) {
    const auto& s = r.stages[i];
    double lines = s.compute_s - s.side_stream_s + s.interference_s + s.host_dispatch_s +
                   s.side_stream_hold_s + s.bubble_fraction * step;
    for (const double wait : s.comm_wait_s) lines += wait;
    EXPECT_NEAR(lines, step, 1e-9 * step) << what << ", stage " << i;
  }
}

TEST(StepSimulation, EveryStagesLinesAddUpToTheStep) {
  // TP 8 over two 4-GPU Alps nodes: one half of a TP group reaches a collective before the other
  // (its input came over another path) and waits for it inside the collective. Before that wait
  // was counted, 2.3 ms of a 2.7 s step of Llama 3 70B on 64 such GPUs was on no line.
  const auto skewed =
      small_llama({"parallel.tp=8", "parallel.pp=2", "parallel.dp=2", "parallel.schedule=GPIPE",
                   "parallel.global_batch_size=4", "cluster.topology=alps-gh200"});
  const auto r = simulate_step(skewed, "test");
  EXPECT_GT(r.peer_wait_s[static_cast<std::size_t>(workload::Dim::kTp)], 0);
  expect_stage_lines_add_up(r, "TP over two nodes");
  // FSDP's side-stream copies beside the compute stream, and the GPU they hold.
  const auto fsdp = simulate_step(testing_support::data_parallel("PYTORCH_FSDP"), "test");
  EXPECT_GT(fsdp.stages[0].side_stream_s, 0);
  EXPECT_GT(fsdp.stages[0].side_stream_hold_s, 0);
  expect_stage_lines_add_up(fsdp, "FSDP");
  // A model small enough that eager PyTorch's kernels wait for the host to launch them.
  const auto tiny =
      simulate_step(testing_support::data_parallel(
                        "PYTORCH_FSDP",
                        {"model.hidden_size=256", "model.ffn_hidden_size=512", "model.num_heads=4",
                         "model.num_kv_heads=4", "model.seq_length=128", "model.vocab_size=32000"}),
                    "test");
  EXPECT_GT(tiny.stages[0].host_dispatch_s, 0);
  expect_stage_lines_add_up(tiny, "host-bound FSDP");
}

TEST(StepSimulation, InvalidLayoutsNameTheField) {
  auto expect_error = [](const clustersim::RunConfig& c, const std::string& field) {
    try {
      simulate_step(c, "cfg.textproto");
      ADD_FAILURE() << "expected an error naming " << field;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cfg.textproto"), std::string::npos) << e.what();
    }
  };
  expect_error(small_llama({"parallel.tp=3"}), "tp");
  expect_error(small_llama({"parallel.pp=3"}), "pp");
  expect_error(small_llama({"parallel.global_batch_size=33"}), "global_batch_size");
  expect_error(small_llama({"parallel.dp=2", "parallel.global_batch_size=2",
                            "parallel.zero_stage=1", "parallel.sharded_grad_reduce=ONCE_PER_STEP"}),
               "sharded_grad_reduce");
  expect_error(small_llama({"parallel.dp=3000000", "parallel.global_batch_size=3000000"}), "GPU");
  // Absurd sizes fail at once instead of exhausting memory or overflowing the clock.
  expect_error(small_llama({"model.num_layers=2000000000"}), "model.num_layers");
  expect_error(small_llama({"parallel.global_batch_size=2000000000"}), "microbatches per step");
  expect_error(small_llama({"simulation.memory_limit_gb=-1"}), "simulation.memory_limit_gb");
  expect_error(small_llama({"reliability.storage_gb_per_s=0"}), "reliability.storage_gb_per_s");
}

TEST(StepSimulation, TheRunCostCountsFailuresThroughTheGoodput) {
  const auto r = simulate_step(small_llama({}), "test");
  EXPECT_GT(r.cost.goodput, 0.9);
  EXPECT_LT(r.cost.goodput, 1.0);
  // Llama 3's Table 5 over 54 days: 331 interruptions of GPU causes on 16,384 GPUs, 42 of
  // network causes on as many NICs, 46 of host causes on 2,048 servers; servers of 8 GPUs here,
  // one NIC per GPU.
  EXPECT_EQ(r.cost.servers, (r.gpus + 7) / 8);
  EXPECT_EQ(r.cost.nics, r.gpus);
  const double per_day = (331.0 * r.gpus + 42.0 * r.cost.nics) / (54 * 16384) +
                         46.0 * static_cast<double>(r.cost.servers) / (54 * 2048);
  EXPECT_NEAR(r.cost.interruptions_total_per_day, per_day, 1e-5 * per_day);
  EXPECT_NEAR(r.cost.mtbf_hours, 24 / per_day, 1e-5 * r.cost.mtbf_hours);
  EXPECT_DOUBLE_EQ(r.cost.effective_dollars, r.cost.dollars / r.cost.goodput);
  EXPECT_DOUBLE_EQ(r.cost.effective_wall_days, r.cost.wall_days / r.cost.goodput);
  // Ten times the interruptions: a lower goodput and a dearer run.
  const auto worse =
      simulate_step(small_llama({"reliability.interruptions_per_gpu_day=4.736e-3"}), "test");
  EXPECT_LT(worse.cost.goodput, r.cost.goodput);
  EXPECT_GT(worse.cost.effective_dollars, r.cost.effective_dollars);
  EXPECT_EQ(worse.iteration_time_s, r.iteration_time_s);
}

TEST(StepSimulation, ARunNeedingMoreMemoryThanAllowedIsRefusedWithTheEstimate) {
  try {
    simulate_step(small_llama({"simulation.memory_limit_gb=0.001"}), "cfg.textproto");
    ADD_FAILURE() << "expected a refusal";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cfg.textproto"), std::string::npos) << what;
    EXPECT_NE(what.find("would need about"), std::string::npos) << what;
    EXPECT_NE(what.find("simulation.memory_limit_gb"), std::string::npos) << what;
  }
  // Within its limit the same run goes ahead.
  EXPECT_GT(simulate_step(small_llama({"simulation.memory_limit_gb=64"}), "cfg.textproto")
                .iteration_time_s,
            0);
}

TEST(StepSimulation, ClusterGpuStandsInForATopologysGpuThatHasNoProfile) {
  // A site's topology file naming its own GPU: with cluster.gpu set, that name is never looked up.
  const std::string topology = testing_support::temp_file(
      "site-topology.textproto",
      "name: \"site\" gpu: \"site-gpu\"\n"
      "tiered { node { gpus_per_node: 8 nvlink_bandwidth_gbytes: 450 nics_per_gpu: 1\n"
      "  nic_bandwidth_gbits: 400 pcie_bandwidth_gbytes: 63 }\n"
      "  tiers { name: \"leaf\" group_size: 4 switches_per_group: 1 } }\n");
  const auto with_gpu = [&](const std::string& gpu) {
    return simulate_step(
        testing_support::small_llama({"cluster.topology=" + topology, "cluster.gpu=" + gpu,
                                      "cluster.num_gpus=16", "parallel.dp=2"}),
        "test");
  };
  EXPECT_GT(with_gpu("h100").iteration_time_s, with_gpu("b200").iteration_time_s);
}

TEST(RunConfig, OverridesGoThroughReflection) {
  const auto c =
      load_run_config("", "llama3-405b",
                      {"parallel.pp=8", "model.activation=GELU", "parallel.layers_per_stage=1,2"})
          .config;
  EXPECT_EQ(c.parallel().pp(), 8);
  EXPECT_EQ(c.model().activation(), clustersim::ModelConfig::GELU);
  EXPECT_EQ(c.parallel().layers_per_stage_size(), 2);
  EXPECT_THROW(load_run_config("", "llama3-405b", {"parallel.nope=1"}), ConfigError);
  EXPECT_THROW(load_run_config("", "llama3-405b", {"parallel.pp=eight"}), ConfigError);
  EXPECT_THROW(load_run_config("", "llama3-405b", {"model.activation=RELU"}), ConfigError);
  EXPECT_THROW(load_run_config("", "llama3-405b", {"parallel"}), ConfigError);
  EXPECT_THROW(load_run_config("", "no-such-preset", {}), ConfigError);
}

}  // namespace
}  // namespace cs::run
