// DualPipe's F&B pair as the builder lays it out: the two halves take the compute stream in turn
// at their expert all-to-alls, which leave for a stream of their own, and a full backward's
// weight gradients run inside the pair.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/workload/program_builder.h"

namespace cs::workload {
namespace {

// 'c' a compute op, 'a' an expert all-to-all, all of class `cls`.
PhaseOps phase(const std::string& pattern, OpClass cls) {
  PhaseOps p;
  for (const char c : pattern) {
    Op op;
    op.op_class = cls;
    if (c == 'a') {
      op.kind = OpKind::kCollective;
      op.dim = Dim::kEp;
      op.coll_op = coll::Op::kAllToAll;
    } else {
      op.duration = Time::us(1);
    }
    p.add(op);
  }
  return p;
}

Program pair_program(bool overlap) {
  StageWork work;
  work.overlap_pairs = overlap;
  work.chunks.resize(2);
  for (ChunkWork& c : work.chunks) {
    c.forward = phase("cac", OpClass::kForward);
    c.backward = phase("cac", OpClass::kBackward);
    c.weight_grad = phase("cc", OpClass::kWeightGrad);
  }
  // Stage 0 of 2 holds the first piece (chunk 0) and the last (chunk 1): neither half receives.
  const std::vector<WorkItem> order = {{Phase::kForward, 0, 0, Pairing::kOverlapped},
                                       {Phase::kBackward, 1, 1, Pairing::kSequential},
                                       {Phase::kWeightGrad, 1, 1}};
  return build_stage_program(work, order, PipelineSchedule::kDualPipe, 0, 2);
}

// The compute stream as a string: F, B, W by class, and 'a' for an all-to-all on it.
std::string compute_stream(const Program& p) {
  std::string out;
  for (const uint32_t i : p.streams[static_cast<int>(Stream::kCompute)]) {
    const Op& op = p.ops[i];
    if (op.kind == OpKind::kCollective) {
      out += 'a';
      continue;
    }
    out += op.op_class == OpClass::kForward ? 'F' : op.op_class == OpClass::kBackward ? 'B' : 'W';
  }
  return out;
}

TEST(OverlappedPair, HalvesTakeTurnsAndTheirAllToAllsLeaveTheComputeStream) {
  const Program p = pair_program(true);
  EXPECT_EQ(compute_stream(p), "FBFBWW");
  EXPECT_EQ(p.streams[static_cast<int>(Stream::kEp)].size(), 2u);
}

TEST(OverlappedPair, SwitchedOffTheHalvesRunInSequence) {
  const Program p = pair_program(false);
  EXPECT_EQ(compute_stream(p), "FaFBaBWW");
  EXPECT_TRUE(p.streams[static_cast<int>(Stream::kEp)].empty());
}

}  // namespace
}  // namespace cs::workload
