#include "sim/lower/param_gather.h"

#include <algorithm>
#include <limits>

namespace cs::lower {

int64_t param_gather_bucket(const clustersim::ParallelConfig& par, int32_t stage, int32_t chunk) {
  return stage == 0 && chunk == 0 ? par.dp_bucket_params() : std::numeric_limits<int64_t>::max();
}

ParamGatherBuckets::ParamGatherBuckets(bool enabled, int64_t capacity, OpMaker& make,
                                       const workload::PhaseOps& forward,
                                       std::vector<workload::ParamGather>& out)
    : enabled_(enabled), bucket_(capacity), make_(make), forward_(forward), out_(out) {}

void ParamGatherBuckets::used(int64_t params, std::size_t first_op) {
  if (!enabled_) return;
  if (bucket_.empty()) before_ = static_cast<uint32_t>(first_op);
  if (const int64_t full = bucket_.add(params)) gather(full);
}

void ParamGatherBuckets::flush() {
  if (!enabled_) return;
  if (const int64_t rest = bucket_.flush()) gather(rest);
}

void ParamGatherBuckets::gather(int64_t params) {
  out_.push_back({std::min(before_, static_cast<uint32_t>(forward_.ops.size() - 1)),
                  make_.collective(coll::Op::kAllGather, workload::Dim::kDp, 2 * params,
                                   "zero_param_all_gather")});
}

}  // namespace cs::lower
