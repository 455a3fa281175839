// Reading and writing a layout's sizes in protobuf messages (ParallelConfig, a trace's Layout),
// by the dimension table's field names.
#pragma once

#include <google/protobuf/message.h>

#include "proto/config.pb.h"

#include "sim/workload/dims.h"
#include "sim/workload/layout.h"

namespace cs::workload {

// The sizes in the int32 fields named by kDims (ParallelConfig.tp, .cp, ...). EDP has no field:
// it is TP·CP·DP / (ETP·EP), with ETP from the `etp` field (0: TP), or 0 when that does not
// divide (validate() says why).
DimSizes dim_sizes(const google::protobuf::Message& message);
// Writes every size that has a field (all but EDP).
void set_dim_sizes(const DimSizes& sizes, google::protobuf::Message& message);
// The expert tensor-parallel size: the `etp` field, or TP when it is 0.
int32_t expert_tp_of(const google::protobuf::Message& message);
// The product of the sizes that number the world (not the expert ones), in 64 bits so absurd
// sizes cannot overflow; 0 if one is below 1.
int64_t world_of(const DimSizes& sizes);
// Whether pipeline stages are the outermost dimension: ParallelConfig.rank_order TP_CP_DP_PP,
// or a trace Layout's pipeline_outermost.
bool pipeline_outermost_of(const google::protobuf::Message& message);
inline Layout layout_of(const google::protobuf::Message& message) {
  return Layout(dim_sizes(message), expert_tp_of(message), pipeline_outermost_of(message));
}
// Whether activations are split over the TP ranks: sequence_parallel with TP > 1. At TP 1 there
// is nothing to split over, so the flag changes nothing (Megatron-LM turns it off there too) and
// no label may claim it.
inline bool sequence_parallel_on(const clustersim::ParallelConfig& p) {
  return p.sequence_parallel() && p.tp() > 1;
}

}  // namespace cs::workload
