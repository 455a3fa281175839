#include "sim/workload/validate.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "sim/config/config_error.h"

namespace cs::workload {
namespace {

// Llama-3-70B-like, TP 8 x PP 4 x DP 4 on 128 GPUs: valid as given.
clustersim::RunConfig valid_config() {
  clustersim::RunConfig c;
  auto* m = c.mutable_model();
  m->set_num_layers(80);
  m->set_hidden_size(8192);
  m->set_num_heads(64);
  m->set_num_kv_heads(8);
  m->set_ffn_hidden_size(28672);
  m->set_vocab_size(128256);
  m->set_seq_length(8192);
  m->set_activation(clustersim::ModelConfig::SWIGLU);
  auto* p = c.mutable_parallel();
  p->set_tp(8);
  p->set_pp(4);
  p->set_dp(4);
  p->set_microbatch_size(1);
  p->set_global_batch_size(64);
  return c;
}

// The error names the source and the field.
void expect_error(const std::function<void(clustersim::RunConfig&)>& edit, const std::string& field,
                  int64_t gpus = 128) {
  clustersim::RunConfig c = valid_config();
  edit(c);
  try {
    validate_run_config(c, gpus, "run.textproto");
    ADD_FAILURE() << "no error; expected one naming " << field;
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("run.textproto: ", 0), 0u) << what;
    EXPECT_NE(what.find(field), std::string::npos) << what;
  }
}

TEST(Validate, AcceptsValidConfigs) {
  clustersim::RunConfig c = valid_config();
  EXPECT_NO_THROW(validate_run_config(c, 128, "x"));
  EXPECT_NO_THROW(validate_run_config(c, 0, "x"));     // GPU count unknown: skipped
  EXPECT_NO_THROW(validate_run_config(c, 1024, "x"));  // spare GPUs are fine
  // Vocabulary not divisible by tp is padded, not rejected.
  c.mutable_model()->set_vocab_size(50257);
  EXPECT_NO_THROW(validate_run_config(c, 128, "x"));
  // Interleaved with v = 2: 16 microbatches per replica, divisible by pp = 4.
  c.mutable_parallel()->set_schedule(clustersim::ParallelConfig::INTERLEAVED);
  c.mutable_parallel()->set_virtual_stages(2);
  EXPECT_NO_THROW(validate_run_config(c, 128, "x"));
  // Uneven split given explicitly.
  c = valid_config();
  for (int32_t n : {19, 21, 21, 19}) c.mutable_parallel()->add_layers_per_stage(n);
  EXPECT_NO_THROW(validate_run_config(c, 128, "x"));
}

TEST(Validate, ModelShapes) {
  expect_error([](auto& c) { c.mutable_model()->set_num_layers(0); }, "model.num_layers");
  expect_error([](auto& c) { c.mutable_model()->clear_hidden_size(); }, "model.hidden_size");
  expect_error([](auto& c) { c.mutable_model()->set_seq_length(-1); }, "model.seq_length");
  expect_error([](auto& c) { c.mutable_model()->set_vocab_size(0); }, "model.vocab_size");
  expect_error([](auto& c) { c.mutable_model()->set_hidden_size(8200); }, "model.hidden_size");
  expect_error([](auto& c) { c.mutable_model()->set_num_kv_heads(6); }, "model.num_kv_heads");
  expect_error([](auto& c) { c.mutable_model()->set_num_kv_heads(-2); }, "model.num_kv_heads");
  expect_error([](auto& c) { c.clear_model(); }, "model");
}

// DeepSeek-V3's latent attention on the valid Llama-70B-like layout (64 heads, kv heads per head).
void add_mla(clustersim::RunConfig& c) {
  c.mutable_model()->set_num_kv_heads(0);
  auto* mla = c.mutable_model()->mutable_mla();
  mla->set_q_lora_rank(1536);
  mla->set_kv_lora_rank(512);
  mla->set_qk_nope_head_dim(128);
  mla->set_qk_rope_head_dim(64);
  mla->set_v_head_dim(128);
}

TEST(Validate, HeadDimAndLatentAttention) {
  clustersim::RunConfig c = valid_config();
  c.mutable_model()->set_head_dim(128);
  c.mutable_model()->set_hidden_size(8000);  // 64 heads of 128 need not divide h
  EXPECT_NO_THROW(validate_run_config(c, 128, "x"));
  c = valid_config();
  add_mla(c);
  EXPECT_NO_THROW(validate_run_config(c, 128, "x"));
  c.mutable_model()->set_num_kv_heads(64);  // explicit per-head keys and values
  EXPECT_NO_THROW(validate_run_config(c, 128, "x"));
  c.mutable_model()->mutable_mla()->set_q_lora_rank(0);  // DeepSeek-V2-Lite: no q LoRA
  EXPECT_NO_THROW(validate_run_config(c, 128, "x"));

  expect_error([](auto& c) { c.mutable_model()->set_head_dim(-64); }, "model.head_dim = -64");
  expect_error([](auto& c) { c.mutable_model()->set_head_dim(1 << 20); }, "model.head_dim");
  auto mla = [](std::function<void(clustersim::RunConfig&)> edit) {
    return [edit](clustersim::RunConfig& c) {
      add_mla(c);
      edit(c);
    };
  };
  expect_error(mla([](auto& c) { c.mutable_model()->mutable_mla()->set_kv_lora_rank(0); }),
               "model.mla.kv_lora_rank = 0 must be positive");
  expect_error(mla([](auto& c) { c.mutable_model()->mutable_mla()->clear_qk_nope_head_dim(); }),
               "model.mla.qk_nope_head_dim");
  expect_error(mla([](auto& c) { c.mutable_model()->mutable_mla()->set_qk_rope_head_dim(-1); }),
               "model.mla.qk_rope_head_dim");
  expect_error(mla([](auto& c) { c.mutable_model()->mutable_mla()->set_v_head_dim(0); }),
               "model.mla.v_head_dim");
  expect_error(mla([](auto& c) { c.mutable_model()->mutable_mla()->set_q_lora_rank(-1); }),
               "model.mla.q_lora_rank = -1");
  expect_error(mla([](auto& c) { c.mutable_model()->mutable_mla()->set_q_lora_rank(1 << 20); }),
               "model.mla.q_lora_rank");
  expect_error(mla([](auto& c) { c.mutable_model()->set_head_dim(192); }),
               "model.head_dim must be 0 with model.mla");
  expect_error(mla([](auto& c) { c.mutable_model()->set_num_kv_heads(8); }),
               "model.num_kv_heads = 8 must be 0 or model.num_heads with model.mla");
  expect_error(mla([](auto& c) {
                 c.mutable_parallel()->set_cp(2);
                 c.mutable_parallel()->set_dp(2);
               }),
               "parallel.cp = 2 with model.mla");
  expect_error(mla([](auto& c) { c.mutable_model()->set_add_bias(true); }), "model.add_bias");
  expect_error(mla([](auto& c) {
                 c.mutable_model()->set_position_embedding(clustersim::ModelConfig::LEARNED);
               }),
               "model.position_embedding must be ROPE");
}

TEST(Validate, MultiTokenPredictionNeedsACountAndNoZeroThree) {
  expect_error([](auto& c) { c.mutable_model()->set_mtp_layers(-1); },
               "model.mtp_layers = -1 must be >= 0");
  expect_error(
      [](auto& c) {
        c.mutable_model()->set_mtp_layers(1);
        c.mutable_parallel()->set_zero_stage(3);
      },
      "model.mtp_layers = 1 with parallel.zero_stage = 3");
  // 2^31 - 1 modules once built programs of 14-18 GB before any check.
  for (const int32_t n : {81, 10'000, 2147483647})
    expect_error([n](auto& c) { c.mutable_model()->set_mtp_layers(n); },
                 "model.mtp_layers = " + std::to_string(n) + " must be at most model.num_layers");
  clustersim::RunConfig as_many = valid_config();
  as_many.mutable_model()->set_mtp_layers(80);
  EXPECT_NO_THROW(validate_run_config(as_many, 128, "run.textproto"));
}

// A dense model's layout still divides by expert TP (Layout strides): a bad value once stopped
// run, generate, plan, sweep and the Python interpreter with SIGFPE.
TEST(Validate, ExpertTensorParallelIsCheckedOnDenseModelsToo) {
  for (const int32_t etp : {-1, -2, 3, 2147483647})
    expect_error([etp](auto& c) { c.mutable_parallel()->set_etp(etp); },
                 "parallel.etp = " + std::to_string(etp) + " must be 0 (= tp), 1 or parallel.tp");
  for (const int32_t etp : {0, 1}) {
    clustersim::RunConfig c = valid_config();
    c.mutable_parallel()->set_etp(etp);
    EXPECT_NO_THROW(validate_run_config(c, 128, "run.textproto")) << etp;
  }
}

// Expert TP of a dense model splits nothing: refused as EP is (etp = tp = 8 was accepted and ran
// as the dense layout it is).
TEST(Validate, ExpertTensorParallelNeedsExperts) {
  expect_error([](auto& c) { c.mutable_parallel()->set_etp(8); },
               "parallel.etp = 8 needs a mixture of experts (model.moe)");
}

// valid_config() with 16 experts, top 2, on TP 8 with sequence parallelism.
void make_moe(clustersim::RunConfig& c) {
  auto* moe = c.mutable_model()->mutable_moe();
  moe->set_num_experts(16);
  moe->set_top_k(2);
  moe->set_expert_ffn_hidden_size(4096);
  c.mutable_parallel()->set_sequence_parallel(true);
}

TEST(Validate, MixtureOfExpertsFields) {
  auto moe = [](std::function<void(clustersim::RunConfig&)> edit) {
    return [edit](clustersim::RunConfig& c) {
      make_moe(c);
      edit(c);
    };
  };
  clustersim::RunConfig ok = valid_config();
  make_moe(ok);
  ok.mutable_parallel()->set_ep(4);
  EXPECT_NO_THROW(validate_run_config(ok, 128, "run.textproto"));
  using M = clustersim::RunConfig;
  expect_error(moe([](M& c) { c.mutable_model()->mutable_moe()->set_num_experts(0); }),
               "model.moe.num_experts = 0 must be positive");
  expect_error(moe([](M& c) { c.mutable_model()->mutable_moe()->set_top_k(17); }),
               "model.moe.top_k = 17 is above the supported 16");
  expect_error(moe([](M& c) { c.mutable_model()->mutable_moe()->set_expert_ffn_hidden_size(0); }),
               "model.moe.expert_ffn_hidden_size");
  expect_error(moe([](M& c) { c.mutable_model()->mutable_moe()->set_first_k_dense(80); }),
               "model.moe.first_k_dense = 80 must be in [0, model.num_layers)");
  expect_error(moe([](M& c) { c.mutable_model()->mutable_moe()->set_capacity_factor(0.5); }),
               "model.moe.capacity_factor");
  expect_error(moe([](M& c) { c.mutable_model()->mutable_moe()->set_fp8_dispatch(true); }),
               "model.moe.fp8_dispatch needs precision FP8");
  expect_error(moe([](M& c) { c.mutable_model()->mutable_moe()->set_max_nodes_per_token(-1); }),
               "model.moe.max_nodes_per_token");
  expect_error(moe([](M& c) {
                 c.mutable_model()->mutable_moe()->mutable_routing()->set_kind(
                     clustersim::RoutingDistribution::HISTOGRAM);
               }),
               "model.moe.routing.histogram_file must be set");
  expect_error(moe([](M& c) {
                 auto* r = c.mutable_model()->mutable_moe()->mutable_routing();
                 r->set_kind(clustersim::RoutingDistribution::SKEWED);
                 r->set_skew(-1);
               }),
               "model.moe.routing.skew");
  expect_error(moe([](M& c) { c.mutable_parallel()->set_ep(3); }),
               "model.moe.num_experts = 16 must be divisible by parallel.ep = 3");
  // EP 8 x expert TP 8 = 64 does not divide TP 8 x DP 4 = 32.
  expect_error(moe([](M& c) { c.mutable_parallel()->set_ep(8); }), "expert TP x parallel.ep");
  expect_error(moe([](M& c) { c.mutable_parallel()->set_etp(2); }), "parallel.etp = 2");
  expect_error(moe([](M& c) { c.mutable_parallel()->set_sequence_parallel(false); }),
               "parallel.sequence_parallel must be on");
  expect_error(moe([](M& c) {
                 c.mutable_parallel()->set_ep(4);
                 c.mutable_parallel()->set_zero_stage(3);
               }),
               "parallel.zero_stage = 3 with parallel.ep > 1");
  expect_error([](M& c) { c.mutable_parallel()->set_ep(2); },
               "parallel.ep = 2 needs a mixture of experts");
}

TEST(Validate, TensorParallelSplits) {
  // 64 heads, 8 kv heads, ffn 28672: tp = 16 splits the heads but not the kv groups.
  expect_error(
      [](auto& c) {
        c.mutable_parallel()->set_tp(16);
        c.mutable_parallel()->set_dp(2);
      },
      "model.num_kv_heads");
  expect_error([](auto& c) { c.mutable_parallel()->set_tp(3); }, "model.num_heads");
  expect_error(
      [](auto& c) {
        c.mutable_model()->set_ffn_hidden_size(28676);  // divisible by 4, not by 8
      },
      "model.ffn_hidden_size");
}

TEST(Validate, SequenceSplits) {
  expect_error([](auto& c) { c.mutable_parallel()->set_cp(3); }, "parallel.cp");
  expect_error(
      [](auto& c) {
        c.mutable_model()->set_seq_length(8196);  // divisible by 4 and cp = 2, not by 2 x 8
        c.mutable_parallel()->set_cp(2);
        c.mutable_parallel()->set_dp(2);
        c.mutable_parallel()->set_sequence_parallel(true);
      },
      "model.seq_length");
  // Without SP the same sequence is fine.
  clustersim::RunConfig c = valid_config();
  c.mutable_model()->set_seq_length(8196);
  c.mutable_parallel()->set_cp(2);
  c.mutable_parallel()->set_dp(2);
  EXPECT_NO_THROW(validate_run_config(c, 128, "x"));
}

TEST(Validate, PipelineSplits) {
  expect_error([](auto& c) { c.mutable_parallel()->set_pp(3); }, "model.num_layers");
  expect_error(
      [](auto& c) {
        for (int32_t n : {20, 20, 40}) c.mutable_parallel()->add_layers_per_stage(n);
      },
      "parallel.layers_per_stage");
  expect_error(
      [](auto& c) {
        for (int32_t n : {20, 20, 20, 21}) c.mutable_parallel()->add_layers_per_stage(n);
      },
      "parallel.layers_per_stage");
  expect_error(
      [](auto& c) {
        for (int32_t n : {40, 0, 20, 20}) c.mutable_parallel()->add_layers_per_stage(n);
      },
      "parallel.layers_per_stage[1]");
}

// Interleaved 1F1B at one virtual stage runs 1F1B's order under another name: it was accepted
// and labelled INTERLEAVED, while ZB-V and DualPipe refused the same.
TEST(Validate, InterleavedNeedsTwoVirtualStagesOrMore) {
  const auto interleaved = [](int32_t v) {
    return [v](clustersim::RunConfig& c) {
      c.mutable_parallel()->set_schedule(clustersim::ParallelConfig::INTERLEAVED);
      c.mutable_parallel()->set_virtual_stages(v);
    };
  };
  expect_error(interleaved(1),
               "parallel.virtual_stages = 1 but INTERLEAVED needs at least 2 (with one model "
               "chunk per stage it is ONE_F_ONE_B");
  clustersim::RunConfig c = valid_config();
  interleaved(4)(c);
  EXPECT_NO_THROW(validate_run_config(c, 128, "x"));
}

// ZB-V and DualPipe take exactly two chunks per stage; DualPipe an even pp and an even count of
// at least 2 x pp microbatches; DualPipe's layers split over pp pieces, not pp x 2.
TEST(Validate, ZbVAndDualPipeShapes) {
  using clustersim::ParallelConfig;
  for (const auto schedule : {ParallelConfig::ZB_V, ParallelConfig::DUALPIPE}) {
    expect_error([&](auto& c) { c.mutable_parallel()->set_schedule(schedule); },
                 "parallel.virtual_stages = 1 but");
    expect_error(
        [&](auto& c) {
          c.mutable_parallel()->set_schedule(schedule);
          c.mutable_parallel()->set_virtual_stages(3);
        },
        "needs exactly 2");
  }
  auto dualpipe = [](auto& c) {
    c.mutable_parallel()->set_schedule(ParallelConfig::DUALPIPE);
    c.mutable_parallel()->set_virtual_stages(2);
  };
  expect_error(
      [&](auto& c) {
        dualpipe(c);
        c.mutable_parallel()->set_pp(5);
        c.mutable_parallel()->set_dp(1);
        c.mutable_model()->set_num_layers(80);
      },
      "parallel.pp = 5 must be even");
  expect_error(
      [&](auto& c) {
        dualpipe(c);
        c.mutable_parallel()->set_global_batch_size(28);  // 7 microbatches
      },
      "at least 8");
  expect_error(
      [&](auto& c) {
        dualpipe(c);
        c.mutable_parallel()->set_global_batch_size(36);  // 9 microbatches
      },
      "must be even for DUALPIPE");
  expect_error(
      [&](auto& c) {
        dualpipe(c);
        c.mutable_model()->set_num_layers(82);
      },
      "divisible by parallel.pp = 4");
}

TEST(Validate, BatchAndSchedule) {
  expect_error([](auto& c) { c.mutable_parallel()->set_global_batch_size(66); },
               "parallel.global_batch_size");
  expect_error([](auto& c) { c.mutable_parallel()->clear_global_batch_size(); },
               "parallel.global_batch_size");
  expect_error([](auto& c) { c.mutable_parallel()->set_virtual_stages(2); },
               "parallel.virtual_stages");
  expect_error(
      [](auto& c) {
        c.mutable_parallel()->set_schedule(clustersim::ParallelConfig::ZB_H1);
        c.mutable_parallel()->set_virtual_stages(2);
      },
      "parallel.virtual_stages");
  expect_error(
      [](auto& c) {
        c.mutable_parallel()->set_schedule(clustersim::ParallelConfig::ZB_H2);
        c.mutable_parallel()->set_virtual_stages(2);
      },
      "needs parallel.schedule = INTERLEAVED or ZB_V or DUALPIPE");
  // 24 / 4 = 6 microbatches, not a multiple of pp = 4.
  expect_error(
      [](auto& c) {
        c.mutable_parallel()->set_schedule(clustersim::ParallelConfig::INTERLEAVED);
        c.mutable_parallel()->set_virtual_stages(2);
        c.mutable_parallel()->set_global_batch_size(24);
      },
      "microbatches");
  expect_error(
      [](auto& c) {
        c.mutable_parallel()->set_schedule(clustersim::ParallelConfig::INTERLEAVED);
        c.mutable_parallel()->set_virtual_stages(2);
        c.mutable_parallel()->set_pp(1);
        c.mutable_parallel()->set_dp(16);
      },
      "parallel.pp");
  expect_error([](auto& c) { c.mutable_parallel()->set_zero_stage(4); }, "parallel.zero_stage");
  expect_error([](auto& c) { c.mutable_parallel()->set_microbatch_size(0); },
               "parallel.microbatch_size");
  expect_error([](auto& c) { c.mutable_parallel()->set_dp(0); }, "parallel.dp");
}

TEST(Validate, GpuCount) {
  expect_error([](auto&) {}, "parallel.tp x cp x pp x dp = 128", 64);
}

}  // namespace
}  // namespace cs::workload
