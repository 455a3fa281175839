// A software stack's kernel row (stack.proto StackKernel) as the memory-bound kernel it times as.
#pragma once

#include <string_view>

#include "proto/stack.pb.h"
#include "sim/compute/kernel.h"

namespace cs::compute {

// `elements` of the row's extent on one GPU (and `written` of its write_extent, the same when it
// has none): its bytes and FLOPs per element times those. When the row says PyTorch runs it in an
// unvectorized loop, that loop walks the elements it writes (TensorIterator's shape is the
// output's: a copy that repeats K to every query head walks the query heads). A row launched
// through multi_tensor_apply streams at the profile's multi-tensor share of bandwidth.
inline Kernel stack_kernel(const clustersim::StackKernel& row, std::string_view name,
                           double elements, double written, KernelGroup group) {
  Kernel k = memory_bound(name, row.read_bytes() * elements + row.write_bytes() * written,
                          row.flops() * elements, group);
  if (row.unvectorized()) k.unvectorized_elements = written;
  k.multi_tensor = row.multi_tensor();
  return k;
}

}  // namespace cs::compute
