// Turns a layer's ops (kernels, collectives) into program ops for one stage's work: kernels timed
// by the cost model, collectives given their group and stream, TP and CP overlap rings built.
#pragma once

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "proto/config.pb.h"
#include "sim/compute/grouped_gemm.h"
#include "sim/compute/kernel_cost.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/program_builder.h"

namespace cs::lower {

// Turns layer ops into program ops: kernels get their time from the cost model, collectives
// their group and stream; collectives over a group of one GPU vanish.
class OpMaker {
 public:
  using Dim = workload::Dim;
  using LayerOp = workload::LayerOp;
  using Op = workload::Op;
  using OpClass = workload::OpClass;
  using OpKind = workload::OpKind;
  using PhaseOp = workload::PhaseOp;
  using PhaseOps = workload::PhaseOps;
  using Stream = workload::Stream;

  OpMaker(const clustersim::RunConfig& config, const compute::KernelCostModel& cost,
          workload::StageWork& work)
      : config_(config),
        cost_(cost),
        work_(work),
        overlap_tp_(config.parallel().tp_comm_overlap() && config.parallel().sequence_parallel() &&
                    config.parallel().tp() > 1),
        overlap_cp_(config.parallel().cp_comm_overlap() && config.parallel().cp() > 1) {}

  // The transformer layer the next ops belong to (model order), -1 outside layers.
  int32_t layer = -1;

  uint32_t label(std::string_view name) {
    const auto [it, added] =
        labels_.emplace(std::string(name), static_cast<uint32_t>(work_.labels.size()));
    if (added) work_.labels.emplace_back(name);
    return it->second;
  }

  // Appends `ops` to `phase`, each after the previous one; returns how many were added. With
  // TP comm overlap, a TP all-gather feeding a GEMM and a GEMM feeding a TP reduce-scatter are
  // pipelined chunk by chunk instead.
  std::size_t append(PhaseOps& phase, const std::vector<LayerOp>& ops, OpClass cls,
                     int32_t first_also_after = PhaseOp::kNone) {
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

  // When `a` then `b` is a pair an enabled overlap pipelines (a TP all-gather feeding a GEMM, a
  // GEMM feeding a TP reduce-scatter, and their CP counterparts around attention), appends the
  // ring that replaces them and returns its op count; otherwise appends nothing and returns 0.
  std::size_t overlapped_pair(PhaseOps& phase, const LayerOp& a, const LayerOp& b, OpClass cls,
                              int32_t also) {
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

  // One layer op as a program op (false: a collective over a group of one GPU, which vanishes).
  bool to_op(const LayerOp& lop, OpClass cls, Op& op) { return make(lop, cls, op); }

  Op collective(coll::Op kind, Dim dim, Bytes bytes, std::string_view name) {
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

  Op kernel(const LayerOp& lop, OpClass cls) {
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

 private:
  static bool is_gemm(const LayerOp& l) {
    return !l.is_comm && l.kernel.kind == compute::KernelKind::kGemm;
  }
  static bool is_attention(const LayerOp& l) {
    return !l.is_comm && l.kernel.kind == compute::KernelKind::kAttention;
  }
  static bool is_comm(const LayerOp& l, workload::LayerComm kind) {
    return l.is_comm && l.comm == kind;
  }
  // Where a pipelined pair starts: after the phase's last op, or with the item.
  static int32_t pair_start(const PhaseOps& phase) {
    return phase.ops.empty() ? PhaseOp::kItemStart : static_cast<int32_t>(phase.ops.size()) - 1;
  }

  // One of `pieces` equal slices of a GEMM along its token dimension m, timed on its own (a
  // thinner GEMM fills the GPU less well, which is part of what the overlap costs).
  Op gemm_piece(const LayerOp& gemm, OpClass cls, int32_t pieces) {
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

  Op tp_chunk(coll::Op kind, Bytes bytes, std::string_view name) {
    Op op = collective(kind, Dim::kTp, bytes, name);
    op.stream = Stream::kTp;
    return op;
  }

  // One of `pieces` blocks of an attention kernel along its key/value length: ring attention's
  // step on the K/V chunk of one context-parallel rank (Megatron's load-balanced causal split
  // gives every step the same share of the work).
  Op attention_piece(const LayerOp& attention, OpClass cls, int32_t pieces) {
    LayerOp part = attention;
    part.kernel.seq_kv = std::max<int64_t>(part.kernel.seq_kv / pieces, 1);
    part.kernel.flops /= pieces;
    part.kernel.bytes /= pieces;
    return kernel(part, cls);
  }

  // A ring whose `steps` - 1 hops each bring the next chunk: piece j runs on the chunk that
  // arrived in hop j while hop j + 1 brings the next (piece 0 on the local chunk).
  static std::size_t ring_gather(PhaseOps& phase, const Op& piece, const Op& hop, int32_t steps,
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

  // A ring that carries partial sums: piece j computes one destination chunk's partial output,
  // added to what hop j - 1 brought and sent on by hop j while piece j + 1 runs; the last piece
  // is this rank's own chunk. Each hop waits for its piece and (its stream is in order) the hop
  // before; what follows waits for the last hop.
  static std::size_t ring_scatter(PhaseOps& phase, const Op& piece, const Op& hop, int32_t steps,
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

  // Userbuffers ring exchange (Transformer Engine; NeMo's RingExchangeOverlapCfg): a TP
  // all-gather before a GEMM, or reduce-scatter after one, becomes tp - 1 steps in which every
  // rank sends one token chunk, S / tp, to the next rank of the ring (a send/recv over the TP
  // group, one hop each): the collective's (tp - 1) / tp x S.
  std::size_t tp_ring(PhaseOps& phase, const LayerOp& comm, const LayerOp& gemm, OpClass cls,
                      int32_t also, bool gather) {
    const auto t = config_.parallel().tp();
    const Op piece = gemm_piece(gemm, cls, t);
    const Op hop = tp_chunk(coll::Op::kSendRecv, comm.bytes / t, comm.comm_name);
    return gather ? ring_gather(phase, piece, hop, t, also)
                  : ring_scatter(phase, piece, hop, t, also);
  }

  // Ring attention (Megatron's context parallelism, cp_comm_type "p2p"): the K/V all-gather
  // becomes cp - 1 send/recv hops of one rank's K/V, each beside the attention block on the K/V
  // already here; backward, the dK/dV partial sums travel the ring the same way.
  std::size_t cp_ring(PhaseOps& phase, const LayerOp& comm, const LayerOp& attention, OpClass cls,
                      int32_t also, bool gather) {
    const auto c = config_.parallel().cp();
    const Op piece = attention_piece(attention, cls, c);
    const Op hop = collective(coll::Op::kSendRecv, Dim::kCp, comm.bytes / c, comm.comm_name);
    return gather ? ring_gather(phase, piece, hop, c, also)
                  : ring_scatter(phase, piece, hop, c, also);
  }

  bool make(const LayerOp& lop, OpClass cls, Op& op) {
    if (!lop.is_comm) {
      op = kernel(lop, cls);
      if (lop.dp_stream) op.stream = Stream::kDp;  // a stack's side-stream copy
      return true;
    }
    if (workload::dim_sizes(config_.parallel())[static_cast<std::size_t>(lop.comm.dim)] == 1)
      return false;
    op = collective(lop.comm.op, lop.comm.dim, lop.bytes, lop.comm_name);
    if (lop.comm.dim == Dim::kEp) {
      // Layers routed alike share one row, so that the executor builds their transfers once.
      auto& rows = work_.all_to_alls;
      const auto same = std::find(rows.begin(), rows.end(), lop.all_to_all);
      op.varies = static_cast<uint32_t>(same - rows.begin());
      if (same == rows.end()) rows.push_back(lop.all_to_all);
    }
    return true;
  }

  const clustersim::RunConfig& config_;
  const compute::KernelCostModel& cost_;
  workload::StageWork& work_;
  bool overlap_tp_;  // Transformer Engine comm-GEMM overlap applies
  bool overlap_cp_;  // ring attention overlaps the K/V exchange
  std::unordered_map<std::string, uint32_t> labels_;
};

}  // namespace cs::lower
