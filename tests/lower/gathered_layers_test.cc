// ZeRO-3 under Megatron's lowering: each layer's weights gathered before it, at most two layers'
// gathers ahead; under parameter offload the shard's copy from the host comes first.
#include "sim/lower/gathered_layers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/workload/model_math.h"
#include "tests/support/lowering_fixtures.h"

namespace cs::lower {
namespace {

using testing_support::small_llama;
using testing_support::StageLowering;
using workload::OpClass;
using workload::OpKind;
using workload::PhaseOp;

clustersim::RunConfig zero(int stage, std::vector<std::string> more = {}) {
  std::vector<std::string> o = {"parallel.tp=2", "parallel.dp=8", "parallel.global_batch_size=16",
                                "parallel.zero_stage=" + std::to_string(stage)};
  o.insert(o.end(), more.begin(), more.end());
  return small_llama(o);
}

// Two kernels: one layer's ops.
std::vector<workload::LayerOp> two_kernels() {
  return {StageLowering::kernel_op("a_fwd"), StageLowering::kernel_op("b_fwd")};
}

TEST(GatheredLayers, BelowZero3LayersAreAppendedAsTheyAre) {
  StageLowering s(zero(1));
  GatheredLayers layers(s.rules, s.make, s.phase);
  layers.add(two_kernels(), OpClass::kForward);
  layers.add(two_kernels(), OpClass::kForward);
  ASSERT_EQ(s.phase.ops.size(), 4u);
  for (const auto& e : s.phase.ops) {
    EXPECT_EQ(e.op.kind, OpKind::kCompute);
    EXPECT_EQ(e.after, PhaseOp::kPrevious);
    EXPECT_EQ(e.also_after, PhaseOp::kNone);
  }
}

TEST(GatheredLayers, Zero3GathersEachLayerOnceTheLayerTwoBackHasRun) {
  StageLowering s(zero(3));
  GatheredLayers layers(s.rules, s.make, s.phase);
  for (int l = 0; l < 4; ++l) layers.add(two_kernels(), OpClass::kForward);
  // Per layer: its gather, then its two kernels.
  ASSERT_EQ(s.phase.ops.size(), 12u);
  const int64_t per_layer = workload::count_params(s.config.model()).per_layer_on_tp_rank(2);
  const std::vector<int32_t> waits = {PhaseOp::kItemStart, PhaseOp::kItemStart, 2, 5};
  for (std::size_t l = 0; l < 4; ++l) {
    SCOPED_TRACE(l);
    const auto& gather = s.phase.ops[3 * l];
    EXPECT_EQ(gather.op.coll_op, coll::Op::kAllGather);
    EXPECT_EQ(gather.op.dim, workload::Dim::kDp);
    EXPECT_EQ(gather.op.bytes, 2 * per_layer);  // the layer's bf16 weights on this TP rank
    EXPECT_EQ(gather.after, waits[l]);          // the last op of layer l - 2
    // The layer's first kernel waits for the kernel before it and for its gather.
    EXPECT_EQ(s.phase.ops[3 * l + 1].also_after, static_cast<int32_t>(3 * l));
  }
}

TEST(GatheredLayers, ParameterOffloadCopiesTheShardInBeforeTheGather) {
  auto copy_of = [](const std::string& target) {
    StageLowering s(zero(3, {"offload.parameters=" + target}));
    GatheredLayers layers(s.rules, s.make, s.phase);
    for (int l = 0; l < 3; ++l) layers.add(two_kernels(), OpClass::kForward);
    EXPECT_EQ(s.phase.ops.size(), 12u);  // copy, gather, two kernels per layer
    const auto& copy = s.phase.ops[8];   // layer 2's
    EXPECT_EQ(s.label(copy.op), "offload_param_h2d");
    EXPECT_EQ(copy.op.kind, OpKind::kCompute);
    EXPECT_EQ(copy.op.stream, workload::Stream::kDp);
    EXPECT_EQ(copy.op.bytes, s.rules.layer_weight_bytes / 8);  // this rank's shard
    EXPECT_EQ(copy.after, 3);                                  // layer 0's end
    const auto& gather = s.phase.ops[9];
    EXPECT_EQ(gather.op.coll_op, coll::Op::kAllGather);
    EXPECT_EQ(gather.after, PhaseOp::kPrevious);  // the copy
    EXPECT_EQ(s.phase.ops[10].also_after, 9);
    return copy.op.duration;
  };
  // NVMe reads come through host DRAM: slower than the copy from DRAM alone.
  EXPECT_GT(copy_of("NVME"), copy_of("CPU"));
}

}  // namespace
}  // namespace cs::lower
