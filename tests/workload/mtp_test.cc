// Multi-token prediction modules (DeepSeek-V3 section 2.2): parameters against the published
// split, FLOPs by closed form, where the modules' weights live, and the entry's kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/config/run_config.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/model_math.h"

namespace cs::workload {
namespace {

clustersim::RunConfig preset(const std::string& name, std::vector<std::string> overrides) {
  return load_run_config("", name, overrides).config;
}

TEST(MultiTokenPrediction, DeepSeekV3ModuleHasThePublishedFourteenBillionParameters) {
  // Hugging Face model card of deepseek-ai/DeepSeek-V3: 685B = 671B of the main model + 14B of
  // the MTP module, whose checkpoint stores its own copies of the embedding and head.
  const auto with = count_params(preset("deepseek-v3", {"model.mtp_layers=1"}).model());
  const auto without = count_params(preset("deepseek-v3", {"model.mtp_layers=0"}).model());
  EXPECT_EQ(with.total(), without.total());  // the main model, as papers count it
  EXPECT_EQ(without.mtp_params(), 0);
  const double module = static_cast<double>(with.mtp_params() + with.embedding + with.output_head);
  EXPECT_NEAR(module / 14e9, 1.0, 0.05);
}

TEST(MultiTokenPrediction, FlopsAddProjectionBlockAndASecondHead) {
  auto model = preset("deepseek-v3", {"model.mtp_layers=0"}).model();
  const double base = model_flops_per_token(model);
  model.set_mtp_layers(2);
  const ParamCounts p = count_params(model);
  const double h = model.hidden_size();
  const double block =
      p.attention_per_layer + p.router_per_layer + p.shared_per_layer + p.top_k * p.expert_params;
  const double attention_per_layer = attention_flops_per_token(model) / (model.num_layers() + 2);
  const double expected =
      2 * (6.0 * (2 * h * h + block + static_cast<double>(p.vocab_matmul)) + attention_per_layer);
  EXPECT_NEAR(model_flops_per_token(model) - base, expected, 1e-9 * expected);
}

TEST(MultiTokenPrediction, TheLastStageHoldsTheModulesAndAnEmbeddingCopy) {
  const std::vector<std::string> layout = {"model.num_layers=4",
                                           "parallel.pp=2",
                                           "parallel.virtual_stages=1",
                                           "parallel.schedule=ONE_F_ONE_B",
                                           "parallel.tp=2",
                                           "parallel.dp=8",
                                           "parallel.ep=4",
                                           "parallel.global_batch_size=32",
                                           "cluster.num_gpus=32"};
  auto with_overrides = layout;
  with_overrides.push_back("model.mtp_layers=1");
  const auto without = preset("mixtral-8x7b", layout);
  const auto with = preset("mixtral-8x7b", with_overrides);
  EXPECT_EQ(stage_params(with, 0), stage_params(without, 0));
  const auto& m = with.model();
  const int64_t h = m.hidden_size(), t = 2;
  const int64_t vocab_shard = padded_vocab(m, t) * h / t;
  const int64_t module = layer_dense_params(with, 3) + layer_expert_params(with, 3) +
                         2 * h * h / t + 3 * h + vocab_shard;
  EXPECT_EQ(stage_params(with, 1) - stage_params(without, 1), module);
  EXPECT_EQ(stage_expert_params(with, 1) - stage_expert_params(without, 1),
            layer_expert_params(with, 3));
  const std::vector<int32_t> last = stage_layers(with, 1);
  EXPECT_EQ(last.back(), 4);  // the module's block, numbered after the model's layers
}

TEST(MultiTokenPrediction, EntryProjectsTheConcatenationOverTensorParallelRanks) {
  const auto c = preset("mixtral-8x7b", {"parallel.tp=4", "parallel.pp=1", "parallel.dp=1",
                                         "parallel.ep=1", "parallel.global_batch_size=4",
                                         "parallel.sequence_parallel=true", "cluster.num_gpus=4"});
  const double T = c.parallel().microbatch_size() * c.model().seq_length();
  const double h = c.model().hidden_size();
  for (const Phase phase : {Phase::kForward, Phase::kBackward, Phase::kWeightGrad}) {
    double gemm_flops = 0;
    int gathers = 0;
    for (const LayerOp& op : mtp_entry_ops(c, phase)) {
      if (!op.is_comm && op.kernel.kind == compute::KernelKind::kGemm)
        gemm_flops += op.kernel.flops;
      if (op.is_comm && op.comm.op == coll::Op::kAllGather) ++gathers;
    }
    // One GEMM of T x 2h -> h/tp in each phase.
    EXPECT_DOUBLE_EQ(gemm_flops, 2.0 * T * (2 * h) * (h / 4)) << static_cast<int>(phase);
    EXPECT_GE(gathers, 1) << static_cast<int>(phase);
  }
}

}  // namespace
}  // namespace cs::workload
