#include "sim/lower/gathered_layers.h"

namespace cs::lower {

using workload::PhaseOp;

GatheredLayers::GatheredLayers(const StageRules& rules, OpMaker& make, workload::PhaseOps& phase)
    : rules_(rules), make_(make), phase_(phase) {}

void GatheredLayers::add(const std::vector<workload::LayerOp>& ops, workload::OpClass cls) {
  int32_t also = PhaseOp::kNone;
  if (rules_.offload_params) {
    phase_.add(shard_copy(), two_back());
    also = last();
  }
  if (rules_.gather_weights) {
    phase_.add(make_.collective(coll::Op::kAllGather, workload::Dim::kDp, rules_.layer_weight_bytes,
                                "zero3_weight_gather"),
               rules_.offload_params ? PhaseOp::kPrevious : two_back());
    also = last();
  }
  make_.append(phase_, ops, cls, also);
  ends_.push_back(last());
}

int32_t GatheredLayers::two_back() const {
  return ends_.size() >= 2 ? ends_[ends_.size() - 2] : PhaseOp::kItemStart;
}

workload::Op GatheredLayers::shard_copy() {
  const cost::HostFigures& host = rules_.host;
  const Bytes shard = rules_.layer_weight_bytes / rules_.dp;
  double seconds = static_cast<double>(shard) / host.pcie_bytes_per_s;
  if (rules_.config.offload().parameters() == clustersim::OffloadConfig::NVME)
    seconds += static_cast<double>(shard) / (host.nvme_bytes_per_s / host.gpus_per_node);
  return make_.host_op(workload::Stream::kDp, seconds, "offload_param_h2d", shard);
}

}  // namespace cs::lower
