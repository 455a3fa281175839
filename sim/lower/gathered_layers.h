// ZeRO-3 / FSDP under Megatron's lowering: a layer's weights are all-gathered on the DP stream
// before the layer runs, and under ZeRO-Infinity parameter offload its shard first comes over
// PCIe. A pass appends its layers through one GatheredLayers.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/lower/op_maker.h"
#include "sim/lower/stage_rules.h"
#include "sim/workload/program_builder.h"

namespace cs::lower {

// The layers of one pass in one phase. A layer's gather may start once the layer two places back
// has finished, so at most two layers' gathered weights exist at once and the next layer's gather
// overlaps the current layer. The offloaded shard's copy (NVMe reads go through host DRAM at the
// node's NVMe bandwidth shared by its GPUs) runs on the same DP stream, just before the gather.
class GatheredLayers {
 public:
  GatheredLayers(const StageRules& rules, OpMaker& make, workload::PhaseOps& phase);

  // Appends one layer's `ops` of class `cls`, after its copy and gather when there are any.
  void add(const std::vector<workload::LayerOp>& ops, workload::OpClass cls);

 private:
  // What a layer's first copy or gather waits for: the end of the layer two places back.
  int32_t two_back() const;
  int32_t last() const { return static_cast<int32_t>(phase_.ops.size()) - 1; }
  // The copy of this rank's shard of a layer's weights from the host.
  workload::Op shard_copy();

  const StageRules& rules_;
  OpMaker& make_;
  workload::PhaseOps& phase_;
  std::vector<int32_t> ends_;  // each layer's last op
};

}  // namespace cs::lower
