// HFU's hardware FLOPs come from the timed ops; the closed form (model_math) checks them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/config/run_config.h"
#include "sim/report/kernel_breakdown.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/model_math.h"
#include "sim/workload/stack.h"
#include "tests/support/run_fixtures.h"

namespace cs::run {
namespace {

// The closed form's hardware FLOPs plus what it leaves out on purpose: FlashAttention's backward
// recomputes the forward's scores (2.5x the forward's FLOPs where the 6N-style count has 2x), and
// the output head multiplies by the vocabulary padded to a multiple of TP (Megatron's padding),
// where model FLOPs count the real vocabulary.
double closed_form_as_run(clustersim::RunConfig c) {
  workload::resolve_stack(c, "test");  // the stack fuses (or splits) the projections
  const int64_t tp = c.parallel().tp();
  c.mutable_model()->set_vocab_size((c.model().vocab_size() + tp - 1) / tp * tp);
  const double attention_forward = workload::attention_flops_per_token(c.model()) / 3.0;
  return workload::hardware_flops_per_step(c) +
         0.5 * attention_forward * workload::tokens_per_step(c);
}

double op_list_flops(const clustersim::RunConfig& c) {
  const PreparedStep prepared = prepare_step(c, "test");
  const double gpus = static_cast<double>(workload::layout_of(prepared.config.parallel()).world());
  return report::matmul_flops_per_gpu(prepared.programs) * gpus;
}

TEST(HardwareFlops, TheTimedOpsDoTheClosedFormsFlopsUnderEveryRecompute) {
  for (const char* recompute : {"NONE", "SELECTIVE", "FULL"}) {
    const auto c = testing_support::small_llama({std::string("parallel.recompute=") + recompute});
    EXPECT_NEAR(op_list_flops(c) / closed_form_as_run(c), 1.0, 1e-12) << recompute;
  }
}

// torchtitan's op-level checkpointing re-runs k, o and up (forward_matrices' 2nd, 4th, 6th):
// the timed ops and the closed form agree, and it adds less than FULL.
TEST(HardwareFlops, OpLevelCheckpointingAddsEveryOtherMatmul) {
  std::vector<double> flops;
  for (const char* recompute : {"NONE", "OP_SELECTIVE", "FULL"}) {
    const auto c = testing_support::small_llama(
        {"software_stack=PYTORCH_FSDP", "parallel.tp=1", "parallel.zero_stage=3",
         "parallel.sequence_parallel=false", std::string("parallel.recompute=") + recompute});
    flops.push_back(op_list_flops(c));
    EXPECT_NEAR(flops.back() / closed_form_as_run(c), 1.0, 1e-12) << recompute;
  }
  EXPECT_LT(flops[0], flops[1]);
  EXPECT_LT(flops[1], flops[2]);
}

TEST(HardwareFlops, EveryPresetsTimedOpsDoTheClosedFormsFlops) {
  // gpt3-175b pads its 50,257-word vocabulary; deepseek-v3 recomputes MLA up-projections in its
  // multi-token-prediction block too.
  for (const char* preset : {"llama3.2-1b", "llama3-8b", "llama3-70b", "gpt3-175b", "mixtral-8x7b",
                             "qwen3-30b-a3b", "deepseek-v3"}) {
    const auto c = load_run_config("", preset, {}).config;
    EXPECT_NEAR(op_list_flops(c) / closed_form_as_run(c), 1.0, 1e-12) << preset;
  }
}

TEST(HardwareFlops, TheReportsHfuIsTheTimedOpsFlopsOverTheStep) {
  const auto c = testing_support::small_llama({"parallel.recompute=SELECTIVE"});
  const report::StepReport r = simulate_step(c, "test");
  const double peak = r.model_flops_per_step / (r.mfu * r.iteration_time_s * r.gpus);
  EXPECT_NEAR(r.hfu, op_list_flops(c) / (r.iteration_time_s * r.gpus * peak), 1e-12);
  EXPECT_GT(r.hfu, r.mfu);
}

}  // namespace
}  // namespace cs::run
