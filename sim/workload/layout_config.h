// Reading and writing a layout's sizes in protobuf messages (ParallelConfig, a trace's Layout),
// by the dimension table's field names.
#pragma once

#include <google/protobuf/message.h>

#include "sim/workload/dims.h"
#include "sim/workload/layout.h"

namespace cs::workload {

// The sizes in the int32 fields named by kDims (ParallelConfig.tp, .cp, ...).
DimSizes dim_sizes(const google::protobuf::Message& message);
void set_dim_sizes(const DimSizes& sizes, google::protobuf::Message& message);
// The product of the sizes, in 64 bits so absurd sizes cannot overflow; 0 if one is below 1.
int64_t world_of(const DimSizes& sizes);
inline Layout layout_of(const google::protobuf::Message& message) {
  return Layout(dim_sizes(message));
}

}  // namespace cs::workload
