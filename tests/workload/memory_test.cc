#include "sim/workload/memory.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/workload/model_math.h"
#include "sim/workload/pipeline_schedule.h"

namespace cs::workload {
namespace {

using clustersim::ModelConfig;
using clustersim::ParallelConfig;

// GPT-3 175B as in Korthikanti et al. 2022, Table 3: t = 8, micro-batch 1; FlashAttention and no
// dropout unless paper() turns them to what the paper assumed.
clustersim::RunConfig gpt3(int32_t tp, bool sp) {
  clustersim::RunConfig c;
  auto* m = c.mutable_model();
  m->set_num_layers(96);
  m->set_hidden_size(12288);
  m->set_num_heads(96);
  m->set_ffn_hidden_size(4 * 12288);
  m->set_vocab_size(51200);
  m->set_seq_length(2048);
  auto* p = c.mutable_parallel();
  p->set_tp(tp);
  p->set_sequence_parallel(sp);
  p->set_microbatch_size(1);
  p->set_global_batch_size(64);
  return c;
}

// The paper's layer: unfused attention with dropout 0.1 on the scores and on both residuals.
clustersim::RunConfig paper(clustersim::RunConfig c) {
  c.mutable_model()->set_attention(ModelConfig::UNFUSED);
  c.mutable_model()->set_hidden_dropout(0.1);
  c.mutable_model()->set_attention_dropout(0.1);
  return c;
}

clustersim::RunConfig with_attention(clustersim::RunConfig c, bool flash) {
  c.mutable_model()->set_attention(flash ? ModelConfig::FLASH : ModelConfig::UNFUSED);
  return c;
}

TEST(Memory, ZeroModelStatesFor7_5BOn64Gpus) {
  // Rajbhandari et al. 2020, Figure 1: Psi = 7.5B, Nd = 64, K = 12.
  const double expected_gb[] = {120.0, 31.4, 16.6, 1.9};
  for (int32_t stage = 0; stage <= 3; ++stage) {
    EXPECT_NEAR(model_state_bytes(7.5e9, stage, 64).total() / 1e9, expected_gb[stage], 0.05)
        << "ZeRO stage " << stage;
  }
  const ModelStateBytes z1 = model_state_bytes(7.5e9, 1, 64);
  EXPECT_DOUBLE_EQ(z1.weights, 15e9);
  EXPECT_DOUBLE_EQ(z1.gradients, 15e9);
  EXPECT_DOUBLE_EQ(z1.optimizer, 90e9 / 64);
}

TEST(Memory, ModelStatesOfAConfigFollowItsParameters) {
  // A 7.5B-class GPT (h 4096, 36 layers): the breakdown is exactly 2/2/12 bytes over its params.
  clustersim::RunConfig c = gpt3(1, false);
  c.mutable_model()->set_num_layers(36);
  c.mutable_model()->set_hidden_size(4096);
  c.mutable_model()->set_num_heads(32);
  c.mutable_model()->set_ffn_hidden_size(4 * 4096);
  c.mutable_parallel()->set_dp(64);
  c.mutable_parallel()->set_zero_stage(2);
  const MemoryBreakdown b = estimate_memory(c, 1);
  const int64_t n = count_params(c.model()).total();
  EXPECT_EQ(b.params, n);
  EXPECT_EQ(b.weights, 2 * n);
  // fp32 main_grad buffers by default (Megatron), bf16 when asked.
  EXPECT_NEAR(static_cast<double>(b.gradients), 4.0 * n / 64, 1);
  EXPECT_NEAR(static_cast<double>(b.optimizer), 12.0 * n / 64, 1);
  EXPECT_EQ(b.total(),
            b.weights + b.gradients + b.optimizer + b.activations + b.temporary + b.working_set);
  c.mutable_parallel()->set_grad_reduce_dtype(ParallelConfig::GRAD_BF16);
  EXPECT_NEAR(static_cast<double>(estimate_memory(c, 1).gradients), 2.0 * n / 64, 1);
}

TEST(Memory, KorthikantiActivationFormulasExactly) {
  const double s = 2048, b = 1, h = 12288, a = 96;
  // No parallelism: s·b·h·(34 + 5as/h).
  EXPECT_DOUBLE_EQ(layer_activation_bytes(paper(gpt3(1, false))), s * b * h * (34 + 5 * a * s / h));
  for (int32_t t : {2, 4, 8}) {
    // TP: s·b·h·(10 + 24/t + 5as/(ht)).
    EXPECT_DOUBLE_EQ(layer_activation_bytes(paper(gpt3(t, false))),
                     s * b * h * (10 + 24.0 / t + 5 * a * s / (h * t)));
    // TP + SP: s·b·h·(34/t + 5as/(ht)).
    EXPECT_DOUBLE_EQ(layer_activation_bytes(paper(gpt3(t, true))),
                     s * b * h * (34.0 / t + 5 * a * s / (h * t)));
    // Selective recompute drops the 5as/h term.
    clustersim::RunConfig c = paper(gpt3(t, true));
    c.mutable_parallel()->set_recompute(ParallelConfig::SELECTIVE);
    EXPECT_DOUBLE_EQ(layer_activation_bytes(c), s * b * h * 34.0 / t);
    // Full recompute keeps the layer input, 2sbh (sharded under SP).
    c.mutable_parallel()->set_recompute(ParallelConfig::FULL);
    EXPECT_DOUBLE_EQ(layer_activation_bytes(c), 2 * s * b * h / t);
    c.mutable_parallel()->set_sequence_parallel(false);
    EXPECT_DOUBLE_EQ(layer_activation_bytes(c), 2 * s * b * h);
  }
}

TEST(Memory, FlashAttentionKeepsOnlyItsLogSumExpInsteadOfTheScores) {
  const double s = 2048, h = 12288, a = 96;
  const double lse = 4.0 * a / 8 * s;  // fp32 per local head and query token
  for (bool sp : {false, true}) {
    clustersim::RunConfig c = paper(gpt3(8, sp));
    c.mutable_model()->set_attention(ModelConfig::FLASH);
    const double flash = layer_activation_bytes(c);
    c.mutable_parallel()->set_recompute(ParallelConfig::SELECTIVE);
    EXPECT_DOUBLE_EQ(flash, layer_activation_bytes(c) + lse);
    // FlashAttention regenerates its dropout mask from the RNG state: attention dropout is free.
    c.mutable_model()->set_attention_dropout(0);
    EXPECT_DOUBLE_EQ(flash, layer_activation_bytes(c) + lse);
  }
  clustersim::RunConfig c = paper(gpt3(8, true));
  c.mutable_model()->set_attention(ModelConfig::FLASH);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(c), s * h * 34.0 / 8 + lse);
}

TEST(Memory, UnfusedAttentionKeepsTheSoftmaxAndOnlyWithDropoutItsMaskAndOutput) {
  const double s = 2048, a = 96, t = 8;
  clustersim::RunConfig c = paper(gpt3(8, true));
  c.mutable_model()->set_attention_dropout(0);
  const double no_dropout = layer_activation_bytes(c);
  c.mutable_parallel()->set_recompute(ParallelConfig::SELECTIVE);
  // Without dropout the bf16 softmax output, 2·(a/t)·s² bytes, is the only score tensor kept.
  EXPECT_DOUBLE_EQ(no_dropout - layer_activation_bytes(c), 2 * a / t * s * s);
  c.mutable_parallel()->set_recompute(ParallelConfig::NONE);
  c.mutable_model()->set_attention_dropout(0.1);
  // Dropout adds its 1-byte mask and 2-byte output: the paper's 5·a·s²·b / t in all.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(c) - no_dropout, 3 * a / t * s * s);
}

TEST(Memory, DropoutMasksOnlyWhereTheModelHasDropout) {
  const double s = 2048, h = 12288;
  for (bool sp : {false, true}) {
    clustersim::RunConfig c = gpt3(8, sp);
    const double sp_div = sp ? 8.0 : 1.0;
    const double without = layer_activation_bytes(c);
    EXPECT_DOUBLE_EQ(embedding_activation_bytes(c), 0.0);
    c.mutable_model()->set_hidden_dropout(0.1);
    // Two 1-byte masks of s·b·h (the attention and MLP residual dropouts), / t under SP.
    EXPECT_DOUBLE_EQ(layer_activation_bytes(c) - without, 2 * s * h / sp_div);
    EXPECT_DOUBLE_EQ(embedding_activation_bytes(c), s * h / sp_div);
  }
}

TEST(Memory, RecomputeOrdersActivations) {
  for (bool flash : {false, true}) {
    for (bool sp : {false, true}) {
      clustersim::RunConfig c = with_attention(gpt3(8, sp), flash);
      const double none = layer_activation_bytes(c);
      c.mutable_parallel()->set_recompute(ParallelConfig::SELECTIVE);
      const double selective = layer_activation_bytes(c);
      c.mutable_parallel()->set_recompute(ParallelConfig::FULL);
      const double full = layer_activation_bytes(c);
      EXPECT_LT(full, selective);
      EXPECT_LT(selective, none);
      // Same ordering for the whole GPU, temporaries included.
      c.mutable_parallel()->set_pp(8);
      c.mutable_parallel()->set_recompute(ParallelConfig::NONE);
      const Bytes total_none = estimate_memory(c, 8).activations;
      c.mutable_parallel()->set_recompute(ParallelConfig::FULL);
      const MemoryBreakdown full_mem = estimate_memory(c, 8);
      EXPECT_LT(full_mem.activations + full_mem.temporary + full_mem.working_set, total_none);
    }
  }
}

TEST(Memory, SequenceParallelReducesActivationsVersusTensorParallelAlone) {
  for (int32_t t : {2, 4, 8}) {
    for (bool flash : {false, true}) {
      EXPECT_LT(layer_activation_bytes(with_attention(gpt3(t, true), flash)),
                layer_activation_bytes(with_attention(gpt3(t, false), flash)));
      EXPECT_LT(layer_activation_bytes(with_attention(gpt3(t, false), flash)),
                layer_activation_bytes(with_attention(gpt3(1, false), flash)));
    }
  }
  // With tp = 1 sequence parallelism is a no-op.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3(1, true)), layer_activation_bytes(gpt3(1, false)));
}

TEST(Memory, ContextParallelSplitsTheSequence) {
  clustersim::RunConfig c = gpt3(8, true);
  const double one = layer_activation_bytes(c);
  c.mutable_parallel()->set_cp(2);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(c), one / 2);
  // The score term: this GPU's s/cp queries against all s keys.
  const double unfused_one = layer_activation_bytes(paper(gpt3(8, true)));
  EXPECT_DOUBLE_EQ(layer_activation_bytes(paper(c)), unfused_one / 2);
}

TEST(Memory, GroupedQueryAttentionShrinksKeysAndValues) {
  clustersim::RunConfig c = gpt3(8, false);
  const double mha = layer_activation_bytes(c);
  c.mutable_model()->set_num_kv_heads(8);
  const double s = 2048, h = 12288;
  // K and V go from 2sbh/t each to 2sbh/t · kv/a each.
  EXPECT_DOUBLE_EQ(mha - layer_activation_bytes(c), 2 * 2 * s * h / 8 * (1 - 8.0 / 96));
}

TEST(Memory, OneFOneBStageZeroHoldsTheWholeModelsActivations) {
  // Korthikanti section 4.2.3: p microbatches x L/p layers on stage 0 = L layers, whatever p.
  const double per_layer = layer_activation_bytes(gpt3(8, true));
  const double embedding = embedding_activation_bytes(gpt3(8, true));
  for (int32_t p : {2, 4, 8}) {
    clustersim::RunConfig c = gpt3(8, true);
    c.mutable_parallel()->set_pp(p);
    const MemoryBreakdown b = estimate_stage_memory(c, 0, p);
    EXPECT_NEAR(static_cast<double>(b.activations), 96 * per_layer + p * embedding, 1.0);
  }
}

TEST(Memory, InterleavingAddsMegatronsFactor) {
  // Stage 0 of interleaved 1F1B holds p·v + p − 1 chunk passes of L/(p·v) layers:
  // (1 + (p−1)/(p·v)) times the 1F1B amount.
  clustersim::RunConfig c = gpt3(8, true);
  const int32_t p = 4, v = 3;
  c.mutable_parallel()->set_pp(p);
  c.mutable_model()->set_num_layers(96);
  const double one_f_one_b = static_cast<double>(estimate_stage_memory(c, 1, p).activations);
  c.mutable_parallel()->set_virtual_stages(v);
  const double interleaved =
      static_cast<double>(estimate_stage_memory(c, 1, p * v + p - 1).activations);
  EXPECT_NEAR(interleaved / one_f_one_b, 1.0 + (p - 1.0) / (p * v), 1e-9);
}

TEST(Memory, StageParamsAddUpToTheModel) {
  for (bool tied : {false, true}) {
    clustersim::RunConfig c = gpt3(1, false);
    c.mutable_model()->set_tied_embeddings(tied);
    c.mutable_parallel()->set_pp(4);
    const ParamCounts n = count_params(c.model());
    int64_t sum = 0;
    for (int32_t s = 0; s < 4; ++s) sum += stage_params(c, s);
    // A tied head still needs its copy on the last stage.
    EXPECT_EQ(sum, n.total() + (tied ? n.embedding : 0));
    EXPECT_EQ(stage_params(c, 1), 24 * n.per_layer());
  }
  // TP divides the matrices; the padded vocabulary splits evenly.
  clustersim::RunConfig c = gpt3(8, false);
  c.mutable_model()->set_vocab_size(50257);
  const ParamCounts n = count_params(c.model());
  EXPECT_EQ(stage_params(c, 0),
            96 * ((n.attention_per_layer + n.mlp_per_layer) / 8 + n.norms_per_layer) +
                2 * (50264 / 8) * 12288 + 12288);
}

TEST(Memory, PeakStageAndZeroTemporaries) {
  clustersim::RunConfig c = gpt3(8, true);
  c.mutable_parallel()->set_pp(8);
  // 1F1B: stage s holds p - s microbatches, so stage 0 (which also has the embedding) peaks.
  std::vector<int32_t> held;
  for (int32_t s = 0; s < 8; ++s) held.push_back(8 - s);
  const MemoryBreakdown peak = estimate_memory(c, held);
  EXPECT_EQ(peak.stage, 0);
  for (int32_t s = 0; s < 8; ++s) {
    EXPECT_LE(estimate_stage_memory(c, s, held[s]).total(), peak.total());
  }
  EXPECT_EQ(peak.temporary, 0);
  // ZeRO-3 over dp adds the gathered weights of two layers and the unsharded fp32 gradient
  // buckets in flight: two with overlap_grad_reduce (one filling, one being reduce-scattered).
  c.mutable_parallel()->set_dp(8);
  c.mutable_parallel()->set_zero_stage(3);
  const ParamCounts n = count_params(c.model());
  const double layer =
      static_cast<double>((n.attention_per_layer + n.mlp_per_layer) / 8 + n.norms_per_layer);
  EXPECT_NEAR(static_cast<double>(estimate_memory(c, held).temporary), 2 * 2 * layer + 4 * 2 * 40e6,
              1.0);
  c.mutable_parallel()->set_overlap_grad_reduce(false);
  EXPECT_NEAR(static_cast<double>(estimate_memory(c, held).temporary), 2 * 2 * layer + 4 * 40e6,
              1.0);
  c.mutable_parallel()->set_grad_reduce_dtype(ParallelConfig::GRAD_BF16);
  EXPECT_NEAR(static_cast<double>(estimate_memory(c, held).temporary), 2 * 2 * layer + 2 * 40e6,
              1.0);
}

TEST(Memory, ZeroTwoKeepsTheGradientShardAndOnlyTheBucketsInFlightUnsharded) {
  clustersim::RunConfig c = gpt3(8, true);
  c.mutable_parallel()->set_pp(8);
  c.mutable_parallel()->set_dp(16);
  c.mutable_parallel()->set_zero_stage(1);
  const MemoryBreakdown z1 = estimate_memory(c, 8);
  c.mutable_parallel()->set_zero_stage(2);
  const MemoryBreakdown z2 = estimate_memory(c, 8);
  const double params = static_cast<double>(z1.params);
  EXPECT_NEAR(static_cast<double>(z1.gradients), 4 * params, 1.0);
  EXPECT_NEAR(static_cast<double>(z2.gradients), 4 * params / 16, 1.0);
  EXPECT_NEAR(static_cast<double>(z2.temporary - z1.temporary), 4 * 2 * 40e6, 1.0);
  // Buckets never exceed the stage's own gradients.
  c.mutable_parallel()->set_dp_bucket_params(int64_t{1} << 40);
  EXPECT_NEAR(static_cast<double>(estimate_memory(c, 8).temporary - z1.temporary), 4 * params, 1.0);
}

// An interleaved pipeline of 4 stages x 2 chunks of 12 layers, 8 microbatches.
clustersim::RunConfig interleaved() {
  clustersim::RunConfig c = gpt3(8, true);
  c.mutable_parallel()->set_pp(4);
  c.mutable_parallel()->set_virtual_stages(2);
  c.mutable_parallel()->set_schedule(ParallelConfig::INTERLEAVED);
  c.mutable_parallel()->set_global_batch_size(8);
  return c;
}

std::vector<std::vector<WorkItem>> orders_of(const clustersim::RunConfig& c) {
  return pipeline_orders(PipelineSchedule::kInterleaved, c.parallel().pp(),
                         num_microbatches(c.parallel()), c.parallel().virtual_stages());
}

TEST(Memory, TheOutputHeadIsChargedOnceOnTheInterleavedLastStage) {
  const clustersim::RunConfig c = interleaved();
  const auto orders = orders_of(c);
  const double chunk = 12 * layer_activation_bytes(c);
  const double head = head_activation_bytes(c);
  ASSERT_GT(head, 0);
  const auto& last = orders[3];
  const int32_t held = peak_held_activations(last);
  ASSERT_GT(held, 1);
  // Megatron's last stage runs each last-chunk forward right before that chunk's backward, so
  // at its peak it holds `held` chunk passes of which one is the last chunk with the logits.
  const MemoryBreakdown exact = estimate_stage_memory(c, 3, std::span<const WorkItem>(last));
  EXPECT_NEAR(static_cast<double>(exact.activations), held * chunk + head, 1.0);
  // The upper bound charges the head to every in-flight pass; the switch brings it back.
  const MemoryBreakdown bound = estimate_stage_memory(c, 3, held);
  EXPECT_NEAR(static_cast<double>(bound.activations), held * (chunk + head), 1.0);
  clustersim::RunConfig off = c;
  off.mutable_effects()->set_memory_exact_pipeline_peak(false);
  EXPECT_EQ(estimate_stage_memory(off, 3, std::span<const WorkItem>(last)).activations,
            bound.activations);
  // A middle stage has neither head nor embedding: both paths agree.
  EXPECT_EQ(estimate_stage_memory(c, 1, std::span<const WorkItem>(orders[1])).activations,
            estimate_stage_memory(c, 1, peak_held_activations(orders[1])).activations);
}

TEST(Memory, ChunkParamsAddUpToTheStage) {
  clustersim::RunConfig c = interleaved();
  for (int32_t s = 0; s < 4; ++s)
    EXPECT_EQ(chunk_params(c, s, 0) + chunk_params(c, s, 1), stage_params(c, s)) << "stage " << s;
  // Stage 0's first chunk is model piece 0 with the embedding; its second, piece 4, has none.
  EXPECT_GT(chunk_params(c, 0, 0), chunk_params(c, 0, 1));
  EXPECT_EQ(chunk_params(c, 1, 0), chunk_params(c, 1, 1));
}

TEST(Memory, GradientsReducedOncePerStepHoldEachChunksBufferFromItsFirstBackwardToItsLast) {
  // 4 microbatches on 4 stages at 8K tokens: Megatron's interleaved order runs every forward,
  // then every backward of chunk 1 before chunk 0's first, and activations outweigh a buffer.
  clustersim::RunConfig c = interleaved();
  c.mutable_model()->set_seq_length(8192);
  c.mutable_parallel()->set_dp(16);
  c.mutable_parallel()->set_global_batch_size(4 * 16);
  c.mutable_parallel()->set_zero_stage(2);
  c.mutable_parallel()->set_sharded_grad_reduce(ParallelConfig::ONCE_PER_STEP);
  const auto orders = orders_of(c);
  ASSERT_EQ(peak_held_activations(orders[1]), 8);
  const double shard = 4.0 * static_cast<double>(stage_params(c, 1)) / 16;
  // So at stage 1's peak (the start of its first backward, all passes still kept) only chunk
  // 1's fp32 buffer is live, beside the shard; no bucket allowance is added.
  const MemoryBreakdown once = estimate_stage_memory(c, 1, std::span<const WorkItem>(orders[1]));
  EXPECT_NEAR(static_cast<double>(once.gradients),
              shard + 4.0 * static_cast<double>(chunk_params(c, 1, 1)), 1.0);
  EXPECT_EQ(once.temporary, 0);
  const double chunk = 12 * layer_activation_bytes(c);
  EXPECT_NEAR(static_cast<double>(once.activations), peak_held_activations(orders[1]) * chunk, 1.0);
  // Against ZeRO-1 (the whole buffer kept all step) it saves the other chunk's buffer less the
  // shard; against reducing every microbatch it adds chunk 1's buffer less two buckets.
  clustersim::RunConfig z1 = c;
  z1.mutable_parallel()->set_zero_stage(1);
  z1.mutable_parallel()->set_sharded_grad_reduce(ParallelConfig::EVERY_MICROBATCH);
  const MemoryBreakdown one = estimate_stage_memory(z1, 1, std::span<const WorkItem>(orders[1]));
  EXPECT_NEAR(static_cast<double>(one.total() - once.total()),
              4.0 * static_cast<double>(chunk_params(c, 1, 0)) - shard, 1.0);
  // One chunk (1F1B): its buffer is live from the first backward on, so ZeRO-1's total + shard.
  clustersim::RunConfig flat = c;
  flat.mutable_parallel()->set_virtual_stages(1);
  flat.mutable_parallel()->set_schedule(ParallelConfig::ONE_F_ONE_B);
  clustersim::RunConfig flat1 = flat;
  flat1.mutable_parallel()->set_zero_stage(1);
  flat1.mutable_parallel()->set_sharded_grad_reduce(ParallelConfig::EVERY_MICROBATCH);
  const auto flat_orders =
      pipeline_orders(PipelineSchedule::kOneFOneB, 4, num_microbatches(flat.parallel()), 1);
  for (int32_t s = 0; s < 4; ++s) {
    const std::span<const WorkItem> order(flat_orders[static_cast<size_t>(s)]);
    EXPECT_NEAR(static_cast<double>(estimate_stage_memory(flat, s, order).total() -
                                    estimate_stage_memory(flat1, s, order).total()),
                4.0 * static_cast<double>(stage_params(flat, s)) / 16, 1.0)
        << "stage " << s;
  }
  // Without the exact peak, every chunk's buffer is charged.
  clustersim::RunConfig bound = c;
  bound.mutable_effects()->set_memory_exact_pipeline_peak(false);
  EXPECT_NEAR(static_cast<double>(
                  estimate_stage_memory(bound, 1, std::span<const WorkItem>(orders[1])).gradients),
              shard + 4.0 * static_cast<double>(stage_params(c, 1)), 1.0);
}

TEST(Memory, EachHeldChunkCountsItsOwnLayersAndTheEmbeddingOnlyItsFirstChunk) {
  clustersim::RunConfig c = interleaved();
  c.mutable_model()->set_hidden_dropout(0.1);  // the embedding keeps a dropout mask
  // Chunk 0 of stage 0 (model piece 0) has 9 layers, chunk 1 (piece 4) 15: 96 in all.
  for (int32_t n : {9, 12, 12, 12, 15, 12, 12, 12}) c.mutable_parallel()->add_layers_per_stage(n);
  const auto orders = orders_of(c);
  const auto& first = orders[0];
  // Count the chunk passes held at the exact peak by replaying the order.
  const double layer = layer_activation_bytes(c);
  const double piece0 = 9 * layer + embedding_activation_bytes(c), piece4 = 15 * layer;
  double now = 0, peak = 0;
  for (const WorkItem& item : first) {
    const double bytes = item.chunk == 0 ? piece0 : piece4;
    now += item.phase == Phase::kForward ? bytes : -bytes;
    peak = std::max(peak, now);
  }
  const MemoryBreakdown exact = estimate_stage_memory(c, 0, std::span<const WorkItem>(first));
  EXPECT_NEAR(static_cast<double>(exact.activations), peak, 1.0);
  EXPECT_LT(static_cast<double>(exact.activations),
            peak_held_activations(first) * (15 * layer + embedding_activation_bytes(c)));
}

TEST(Memory, BackwardWorkingSetIsTheWidestLinearLayersGradientsAndGatheredInput) {
  clustersim::RunConfig c = gpt3(8, true);
  c.mutable_model()->set_activation(ModelConfig::SWIGLU);
  const double s = 2048, h = 12288, ffn = 4 * 12288, t = 8;
  // SwiGLU fc1 under SP: gate|up gradient 4·ffn/t, re-gathered ln_out 2h, full input gradient 2h.
  EXPECT_DOUBLE_EQ(backward_working_set_bytes(c), s * (4 * ffn / t + 4 * h));
  c.mutable_parallel()->set_sequence_parallel(false);
  EXPECT_DOUBLE_EQ(backward_working_set_bytes(c), s * (4 * ffn / t + 2 * h));
  c.mutable_parallel()->set_pp(4);
  const MemoryBreakdown last = estimate_stage_memory(c, 3, 1);
  EXPECT_NEAR(static_cast<double>(last.working_set),
              std::max(backward_working_set_bytes(c), head_working_set_bytes(c)), 1.0);
  EXPECT_DOUBLE_EQ(head_working_set_bytes(c), 2 * s * 51200 / t);
  c.mutable_effects()->set_memory_backward_working_set(false);
  EXPECT_EQ(estimate_stage_memory(c, 3, 1).working_set, 0);
  EXPECT_EQ(estimate_stage_memory(c, 3, 1).total() + last.working_set, last.total());
}

}  // namespace
}  // namespace cs::workload
