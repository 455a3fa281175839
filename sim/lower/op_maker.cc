#include "sim/lower/op_maker.h"

#include <algorithm>

#include "sim/compute/grouped_gemm.h"
#include "sim/workload/layout_config.h"

namespace cs::lower {

OpMaker::OpMaker(const clustersim::RunConfig& config, const compute::KernelCostModel& cost,
                 workload::StageWork& work)
    : config_(config),
      cost_(cost),
      work_(work),
      overlap_tp_(config.parallel().tp_comm_overlap() &&
                  workload::sequence_parallel_on(config.parallel())),
      overlap_cp_(config.parallel().cp_comm_overlap() && config.parallel().cp() > 1) {}

uint32_t OpMaker::label(std::string_view name) {
  const auto [it, added] =
      labels_.emplace(std::string(name), static_cast<uint32_t>(work_.labels.size()));
  if (added) work_.labels.emplace_back(name);
  return it->second;
}

std::size_t OpMaker::append(PhaseOps& phase, const std::vector<LayerOp>& ops, OpClass cls,
                            int32_t first_also_after) {
  std::size_t added = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const int32_t also = added == 0 ? first_also_after : PhaseOp::kNone;
    const LayerOp* next = i + 1 < ops.size() ? &ops[i + 1] : nullptr;
    if (next) {
      if (const std::size_t ring = overlapped_pair(phase, ops[i], *next, cls, also)) {
        added += ring;
        ++i;
        continue;
      }
    }
    Op op;
    if (!make(ops[i], cls, op)) continue;
    phase.add(op, PhaseOp::kPrevious, also);
    ++added;
  }
  return added;
}

std::size_t OpMaker::overlapped_pair(PhaseOps& phase, const LayerOp& a, const LayerOp& b,
                                     OpClass cls, int32_t also) {
  using coll::Op;
  if (overlap_tp_ && is_comm(a, {Dim::kTp, Op::kAllGather}) && is_gemm(b))
    return tp_ring(phase, a, b, cls, also, true);
  if (overlap_tp_ && is_gemm(a) && is_comm(b, {Dim::kTp, Op::kReduceScatter}))
    return tp_ring(phase, b, a, cls, also, false);
  if (overlap_cp_ && is_comm(a, {Dim::kCp, Op::kAllGather}) && is_attention(b))
    return cp_ring(phase, a, b, cls, also, true);
  if (overlap_cp_ && is_attention(a) && is_comm(b, {Dim::kCp, Op::kReduceScatter}))
    return cp_ring(phase, b, a, cls, also, false);
  return 0;
}

OpMaker::Op OpMaker::collective(coll::Op kind, Dim dim, Bytes bytes, std::string_view name) {
  Op op;
  op.kind = OpKind::kCollective;
  op.stream = dim == Dim::kDp || dim == Dim::kEdp ? Stream::kDp
              : dim == Dim::kCp                   ? Stream::kCp
                                                  : Stream::kCompute;
  op.op_class = OpClass::kComm;
  op.dim = dim;
  op.coll_op = kind;
  op.bytes = bytes;
  op.label = label(name);
  op.layer = layer;
  return op;
}

OpMaker::Op OpMaker::kernel(const LayerOp& lop, OpClass cls) {
  Op op;
  op.kind = OpKind::kCompute;
  op.op_class = cls;
  op.duration = cost_.time(lop.kernel, lop.precision);
  op.flops = lop.kernel.flops;
  op.label = label(lop.kernel.name);
  op.layer = layer;
  op.kernel = static_cast<uint32_t>(work_.kernels.size());
  work_.kernels.push_back({lop.kernel, lop.precision});
  if (!lop.rank_parts.empty()) {
    // Each EP rank's time is that of its experts' parts; the op's own, their mean.
    std::vector<Time> times;
    Time sum;
    for (const auto& parts : lop.rank_parts) {
      const Time t = compute::expert_part_time(cost_, parts, lop.precision, lop.grouped);
      times.push_back(t);
      sum += t;
    }
    op.duration = Time::ps(sum.count_ps() / static_cast<int64_t>(times.size()));
    op.varies = static_cast<uint32_t>(work_.rank_times.size());
    work_.rank_times.push_back(std::move(times));
  }
  return op;
}

OpMaker::Op OpMaker::host_op(Stream stream, double seconds, std::string_view name, Bytes bytes) {
  Op op;
  op.kind = OpKind::kCompute;
  op.stream = stream;
  op.op_class = stream == Stream::kCompute ? OpClass::kOptimizer : OpClass::kComm;
  op.duration = Time::from_seconds(seconds);
  op.bytes = bytes;
  op.label = label(name);
  return op;
}

OpMaker::Op OpMaker::gemm_piece(const LayerOp& gemm, OpClass cls, int32_t pieces) {
  LayerOp part = gemm;
  compute::Kernel& k = part.kernel;
  auto operands = [](const compute::Kernel& g) {
    return static_cast<double>(g.m) * static_cast<double>(g.k) +
           static_cast<double>(g.k) * static_cast<double>(g.n) +
           static_cast<double>(g.m) * static_cast<double>(g.n);
  };
  const double whole = operands(k);
  k.m = std::max<int64_t>(k.m / pieces, 1);
  k.flops = gemm.kernel.flops / pieces;
  if (whole > 0) k.bytes = gemm.kernel.bytes * operands(k) / whole;
  return kernel(part, cls);
}

OpMaker::Op OpMaker::tp_chunk(coll::Op kind, Bytes bytes, std::string_view name) {
  Op op = collective(kind, Dim::kTp, bytes, name);
  op.stream = Stream::kTp;
  return op;
}

OpMaker::Op OpMaker::attention_piece(const LayerOp& attention, OpClass cls, int32_t pieces) {
  LayerOp part = attention;
  part.kernel.seq_kv = std::max<int64_t>(part.kernel.seq_kv / pieces, 1);
  part.kernel.flops /= pieces;
  part.kernel.bytes /= pieces;
  return kernel(part, cls);
}

std::size_t OpMaker::ring_gather(PhaseOps& phase, const Op& piece, const Op& hop, int32_t steps,
                                 int32_t also) {
  const int32_t start = pair_start(phase);
  int32_t last_hop = start, last_piece = start;
  for (int32_t j = 0; j < steps; ++j) {
    const int32_t arrived = last_hop;  // the hop that brought chunk j (j > 0)
    if (j + 1 < steps) {
      phase.add(hop, last_hop, j == 0 ? also : PhaseOp::kNone);
      last_hop = static_cast<int32_t>(phase.ops.size()) - 1;
    }
    phase.add(piece, last_piece, j == 0 ? also : arrived);
    last_piece = static_cast<int32_t>(phase.ops.size()) - 1;
  }
  return static_cast<std::size_t>(2 * steps - 1);
}

std::size_t OpMaker::ring_scatter(PhaseOps& phase, const Op& piece, const Op& hop, int32_t steps,
                                  int32_t also) {
  int32_t last_piece = pair_start(phase);
  for (int32_t j = 0; j < steps; ++j) {
    phase.add(piece, last_piece, j == 0 ? also : PhaseOp::kNone);
    const int32_t previous_piece = last_piece;
    last_piece = static_cast<int32_t>(phase.ops.size()) - 1;
    if (j > 0) phase.add(hop, previous_piece);
  }
  return static_cast<std::size_t>(2 * steps - 1);
}

std::size_t OpMaker::tp_ring(PhaseOps& phase, const LayerOp& comm, const LayerOp& gemm, OpClass cls,
                             int32_t also, bool gather) {
  const auto t = config_.parallel().tp();
  const Op piece = gemm_piece(gemm, cls, t);
  const Op hop = tp_chunk(coll::Op::kSendRecv, comm.bytes / t, comm.comm_name);
  return gather ? ring_gather(phase, piece, hop, t, also)
                : ring_scatter(phase, piece, hop, t, also);
}

std::size_t OpMaker::cp_ring(PhaseOps& phase, const LayerOp& comm, const LayerOp& attention,
                             OpClass cls, int32_t also, bool gather) {
  const auto c = config_.parallel().cp();
  const Op piece = attention_piece(attention, cls, c);
  const Op hop = collective(coll::Op::kSendRecv, Dim::kCp, comm.bytes / c, comm.comm_name);
  return gather ? ring_gather(phase, piece, hop, c, also)
                : ring_scatter(phase, piece, hop, c, also);
}

bool OpMaker::make(const LayerOp& lop, OpClass cls, Op& op) {
  if (!lop.is_comm) {
    op = kernel(lop, cls);
    if (lop.dp_stream) op.stream = Stream::kDp;  // a stack's side-stream copy
    return true;
  }
  if (workload::dim_sizes(config_.parallel())[static_cast<std::size_t>(lop.comm.dim)] == 1)
    return false;
  op = collective(lop.comm.op, lop.comm.dim, lop.bytes, lop.comm_name);
  if (lop.comm.dim == Dim::kEp && lop.comm.op == coll::Op::kAllToAll) {
    // Layers routed alike share one row, so that the executor builds their transfers once.
    auto& rows = work_.all_to_alls;
    const auto same = std::find(rows.begin(), rows.end(), lop.all_to_all);
    op.varies = static_cast<uint32_t>(same - rows.begin());
    if (same == rows.end()) rows.push_back(lop.all_to_all);
  }
  return true;
}

}  // namespace cs::lower
