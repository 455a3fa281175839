// The end of a stage's step: the optimizer on this GPU's shard (CPU Adam on the host's copy under
// ZeRO-Offload) and, after it, the ZeRO-1/2 parameter all-gathers over DP and EDP that the
// forward does not overlap.
#pragma once

#include <cstdint>

#include "sim/lower/op_maker.h"
#include "sim/lower/stage_layers.h"
#include "sim/lower/stage_rules.h"
#include "sim/workload/program_builder.h"

namespace cs::lower {

// Fills work.optimizer and work.after_optimizer of pipeline stage `stage` (after its chunks and
// work.grad_sync_every_microbatch are set).
void build_optimizer_tail(const StageRules& rules, const StageLayers& layers, OpMaker& make,
                          int32_t stage, workload::StageWork& work);

}  // namespace cs::lower
