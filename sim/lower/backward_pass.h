// The backward pass of one model chunk: the multi-token prediction modules and the head, the
// layers in reverse (each after its recompute and ZeRO-3 weight gather), the embedding, and the
// gradient buckets reduced as the layers complete them.
#pragma once

#include "sim/lower/op_maker.h"
#include "sim/lower/stage_layers.h"
#include "sim/lower/stage_rules.h"
#include "sim/workload/program_builder.h"

namespace cs::lower {

// Fills chunk.backward (and, with `split_backward`, chunk.weight_grad: ZB-H1's weight gradients
// apart) and chunk.grad_sync for the chunk at `span`.
void build_backward(const StageRules& rules, const StageLayers& layers, OpMaker& make,
                    const ChunkSpan& span, bool split_backward, workload::ChunkWork& chunk);

}  // namespace cs::lower
