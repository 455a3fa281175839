// Layer ops into program ops: labels interned in first-use order, collectives over one GPU
// vanish, host copies timed without the network, and the TP ring exchange that replaces an
// all-gather before a GEMM.
#include "sim/lower/op_maker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/lowering_fixtures.h"

namespace cs::lower {
namespace {

using testing_support::small_llama;
using testing_support::StageLowering;
using workload::Dim;
using workload::LayerOp;
using workload::OpClass;
using workload::Stream;

LayerOp comm_op(Dim dim, coll::Op op, Bytes bytes) {
  LayerOp l;
  l.is_comm = true;
  l.comm = {dim, op};
  l.comm_name = "test_comm";
  l.bytes = bytes;
  return l;
}

TEST(OpMaker, LabelsAreInternedInFirstUseOrder) {
  StageLowering s(small_llama());
  EXPECT_EQ(s.make.label("b"), 0u);
  EXPECT_EQ(s.make.label("a"), 1u);
  EXPECT_EQ(s.make.label("b"), 0u);
  EXPECT_EQ(s.work.labels, (std::vector<std::string>{"b", "a"}));
}

TEST(OpMaker, ACollectiveOverOneGpuVanishes) {
  StageLowering s(small_llama({"parallel.tp=2", "parallel.cp=1"}));
  workload::Op op;
  EXPECT_FALSE(s.make.to_op(comm_op(Dim::kCp, coll::Op::kAllGather, 100), OpClass::kForward, op));
  ASSERT_TRUE(s.make.to_op(comm_op(Dim::kTp, coll::Op::kAllGather, 100), OpClass::kForward, op));
  EXPECT_EQ(op.bytes, 100);
  const std::vector<LayerOp> ops = {comm_op(Dim::kCp, coll::Op::kAllGather, 100),
                                    StageLowering::kernel_op("k")};
  EXPECT_EQ(s.make.append(s.phase, ops, OpClass::kForward), 1u);
}

TEST(OpMaker, CollectivesRunOnTheirDimensionsStream) {
  StageLowering s(small_llama());
  s.make.layer = 3;
  EXPECT_EQ(s.make.collective(coll::Op::kAllReduce, Dim::kDp, 1, "x").stream, Stream::kDp);
  EXPECT_EQ(s.make.collective(coll::Op::kAllReduce, Dim::kEdp, 1, "x").stream, Stream::kDp);
  EXPECT_EQ(s.make.collective(coll::Op::kAllReduce, Dim::kCp, 1, "x").stream, Stream::kCp);
  const auto tp = s.make.collective(coll::Op::kAllReduce, Dim::kTp, 1, "x");
  EXPECT_EQ(tp.stream, Stream::kCompute);
  EXPECT_EQ(tp.layer, 3);
}

TEST(OpMaker, AHostOpIsTimedComputeOfNoLayer) {
  StageLowering s(small_llama());
  s.make.layer = 5;
  const auto copy = s.make.host_op(Stream::kDp, 0.5, "copy", 1000);
  EXPECT_EQ(copy.kind, workload::OpKind::kCompute);
  EXPECT_EQ(copy.op_class, OpClass::kComm);
  EXPECT_EQ(copy.duration, Time::from_seconds(0.5));
  EXPECT_EQ(copy.bytes, 1000);
  EXPECT_EQ(copy.layer, -1);
  EXPECT_EQ(s.make.host_op(Stream::kCompute, 1, "adam", 0).op_class, OpClass::kOptimizer);
}

TEST(OpMaker, TpRingExchangeHasTpMinusOneHopsAndTpGemmPiecesOfTheWholeGemm) {
  // Forward of one layer: the QKV GEMM after the attention all-gather becomes tp pieces whose
  // FLOPs add up to the GEMM's, fed by tp - 1 send/recv hops of S / tp on the TP stream.
  auto forward = [](bool overlap) {
    return testing_support::stage_work_of(
        small_llama({"model.num_layers=1", "parallel.tp=8", "parallel.dp=1",
                     "parallel.global_batch_size=1", "parallel.sequence_parallel=true",
                     std::string("parallel.tp_comm_overlap=") + (overlap ? "true" : "false")}));
  };
  const auto plain = forward(false), piped = forward(true);
  auto ops_named = [](const workload::StageWork& w, const std::string& name) {
    std::vector<workload::Op> found;
    for (const auto& e : w.chunks[0].forward.ops)
      if (w.labels[e.op.label] == name) found.push_back(e.op);
    return found;
  };
  const auto gather = ops_named(plain, "attn_sp_ag"), hops = ops_named(piped, "attn_sp_ag");
  ASSERT_EQ(gather.size(), 1u);
  ASSERT_EQ(hops.size(), 7u);
  for (const auto& h : hops) {
    EXPECT_EQ(h.stream, Stream::kTp);
    EXPECT_EQ(h.coll_op, coll::Op::kSendRecv);
    EXPECT_EQ(h.bytes, gather[0].bytes / 8);
  }
  const auto whole = ops_named(plain, "qkv_fwd"), pieces = ops_named(piped, "qkv_fwd");
  ASSERT_EQ(whole.size(), 1u);
  ASSERT_EQ(pieces.size(), 8u);
  double flops = 0;
  for (const auto& p : pieces) flops += p.flops;
  EXPECT_DOUBLE_EQ(flops, whole[0].flops);
}

}  // namespace
}  // namespace cs::lower
