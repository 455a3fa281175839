#include "sim/lower/grad_buckets.h"

#include "sim/workload/layer_ops.h"

namespace cs::lower {

using workload::Dim;
using workload::Op;
using workload::OpClass;
using workload::Stream;

GradBuckets::GradBuckets(const StageRules& rules, OpMaker& make, const workload::PhaseOps& phase,
                         std::vector<workload::GradSync>& out)
    : rules_(rules),
      make_(make),
      phase_(phase),
      out_(out),
      bucket_(rules.grad_rule.bucket_params) {}

void GradBuckets::ready(int64_t params) {
  if (const int64_t full = bucket_.add(params)) reduce(full);
}

void GradBuckets::flush() {
  if (const int64_t rest = bucket_.flush()) reduce(rest);
}

void GradBuckets::reduce(int64_t params) {
  const auto after = static_cast<uint32_t>(phase_.ops.size() - 1);
  const Bytes bytes = rules_.grad_bytes * params;
  if (rules_.dp > 1) reduce_over_dp(params, bytes, after);
  if (rules_.config.parallel().cp() > 1) sum_over_cp(bytes, after);
  if (rules_.offload_optimizer) {
    // ZeRO-Offload: the reduced bucket (this rank's shard of it; the whole bucket on one GPU)
    // goes to the host as soon as it is ready, overlapping the rest of the backward (Ren et al.
    // 2021, section 4.1).
    const Bytes shard = bytes / rules_.shard_div;
    out_.push_back({after, make_.host_op(Stream::kDp,
                                         static_cast<double>(shard) / rules_.host.pcie_bytes_per_s,
                                         "offload_grad_d2h", shard)});
  }
}

void GradBuckets::reduce_over_dp(int64_t params, Bytes bytes, uint32_t after) {
  stack_rows(clustersim::StackKernel::REDUCE_PROLOGUE, params, after);
  const bool all_reduce = rules_.zero == 0 || rules_.grad_rule.all_reduce;
  Op reduce =
      make_.collective(all_reduce ? coll::Op::kAllReduce : coll::Op::kReduceScatter, Dim::kDp,
                       bytes, all_reduce ? "dp_grad_all_reduce" : "dp_grad_reduce_scatter");
  if (rules_.grad_rule.on_compute_stream) reduce.stream = Stream::kCompute;
  out_.push_back({after, reduce});
  stack_rows(clustersim::StackKernel::REDUCE_EPILOGUE, params, after);
}

void GradBuckets::sum_over_cp(Bytes bytes, uint32_t after) {
  // Context-parallel ranks hold the same weights but saw different tokens: their gradients are
  // summed too. Megatron reduces over one DP x CP group; here the DP reduction is followed, on
  // the same stream, by an all-reduce over CP of what it left on this rank (the whole bucket, or
  // its shard under ZeRO), which sums the same terms.
  const int32_t dp = rules_.dp;
  Op cp_sum =
      make_.collective(coll::Op::kAllReduce, Dim::kCp,
                       rules_.zero == 0 || dp == 1 ? bytes : bytes / dp, "cp_grad_all_reduce");
  cp_sum.stream = Stream::kDp;
  out_.push_back({after, cp_sum});
}

void GradBuckets::stack_rows(clustersim::StackKernel::Slot slot, int64_t params, uint32_t after) {
  const auto n = static_cast<double>(params);
  for (const workload::LayerOp& lop :
       workload::stack_kernel_ops(rules_.config, slot, n, n / rules_.dp)) {
    Op op;
    make_.to_op(lop, lop.dp_stream ? OpClass::kComm : OpClass::kBackward, op);
    out_.push_back({after, op});
  }
}

ExpertGradBuckets::ExpertGradBuckets(const StageRules& rules, OpMaker& make,
                                     const workload::PhaseOps& phase,
                                     std::vector<workload::GradSync>& out)
    : rules_(rules),
      make_(make),
      phase_(phase),
      out_(out),
      bucket_(rules.config.parallel().dp_bucket_params()) {}

void ExpertGradBuckets::ready(int64_t params) {
  if (const int64_t full = bucket_.add(params)) reduce(full);
}

void ExpertGradBuckets::flush() {
  if (const int64_t rest = bucket_.flush()) reduce(rest);
}

void ExpertGradBuckets::reduce(int64_t params) {
  const auto after = static_cast<uint32_t>(phase_.ops.size() - 1);
  const bool all_reduce = rules_.zero == 0;
  out_.push_back(
      {after, make_.collective(all_reduce ? coll::Op::kAllReduce : coll::Op::kReduceScatter,
                               Dim::kEdp, rules_.grad_bytes * params,
                               all_reduce ? "edp_grad_all_reduce" : "edp_grad_reduce_scatter")});
}

}  // namespace cs::lower
