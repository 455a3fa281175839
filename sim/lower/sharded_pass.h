// The forward and backward passes of a ZeRO-3 model under a software stack's own rules
// (StackProfile.gather and .reduce): units all-gathered as far ahead as the stack prefetches,
// the copies around each gather, and each unit's (or bucket's) gradient reduction issued between
// the gathers in the order the stack's hooks issue them.
#pragma once

#include <vector>

#include "proto/config.pb.h"
#include "sim/lower/op_maker.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/program_builder.h"

namespace cs::lower {

// The ops of one transformer layer in each pass (stage_work's LayerWork for a dense layer).
struct LayerPasses {
  std::vector<workload::LayerOp> forward, backward, weight_grad, recompute;
};

// Fills chunk.forward and chunk.backward of the run's only pipeline stage (pp 1, one chunk, no
// split backward, dense layers: the stacks' limits refuse the rest) with `layers` layers of
// `layer` between the embedding and the output head. Throws std::logic_error for a layout the
// stack limits should have refused.
void build_sharded_chunk(const clustersim::RunConfig& config, OpMaker& make,
                         const LayerPasses& layer, int32_t layers, workload::ChunkWork& chunk);

}  // namespace cs::lower
