// The forward pass of one model chunk: the embedding, the layers (each after its ZeRO-3 weight
// gather), the head and the multi-token prediction modules, with the distributed optimizer's
// overlapped parameter gathers bucketed ahead of the ops that use them.
#pragma once

#include "sim/lower/op_maker.h"
#include "sim/lower/stage_layers.h"
#include "sim/lower/stage_rules.h"
#include "sim/workload/program_builder.h"

namespace cs::lower {

// Fills chunk.forward and chunk.param_gather for the chunk at `span`.
void build_forward(const StageRules& rules, const StageLayers& layers, OpMaker& make,
                   const ChunkSpan& span, workload::ChunkWork& chunk);

}  // namespace cs::lower
