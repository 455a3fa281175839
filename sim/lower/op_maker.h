// Turns a layer's ops (kernels, collectives) into program ops for one stage's work: kernels timed
// by the cost model, collectives given their group and stream, TP and CP overlap rings built.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proto/config.pb.h"
#include "sim/compute/kernel_cost.h"
#include "sim/workload/layer_ops.h"
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
          workload::StageWork& work);

  // The transformer layer the next ops belong to (model order), -1 outside layers.
  int32_t layer = -1;

  uint32_t label(std::string_view name);

  // Appends `ops` to `phase`, each after the previous one; returns how many were added. With
  // TP comm overlap, a TP all-gather feeding a GEMM and a GEMM feeding a TP reduce-scatter are
  // pipelined chunk by chunk instead.
  std::size_t append(PhaseOps& phase, const std::vector<LayerOp>& ops, OpClass cls,
                     int32_t first_also_after = PhaseOp::kNone);

  // When `a` then `b` is a pair an enabled overlap pipelines (a TP all-gather feeding a GEMM, a
  // GEMM feeding a TP reduce-scatter, and their CP counterparts around attention), appends the
  // ring that replaces them and returns its op count; otherwise appends nothing and returns 0.
  std::size_t overlapped_pair(PhaseOps& phase, const LayerOp& a, const LayerOp& b, OpClass cls,
                              int32_t also);

  // One layer op as a program op (false: a collective over a group of one GPU, which vanishes).
  bool to_op(const LayerOp& lop, OpClass cls, Op& op) { return make(lop, cls, op); }

  Op collective(coll::Op kind, Dim dim, Bytes bytes, std::string_view name);

  Op kernel(const LayerOp& lop, OpClass cls);

  // A copy between GPU and host (or the host's optimizer step) of `seconds`: a compute-kind op,
  // so that the executor times it without the network, on `stream`; labelled so timelines show
  // it. It belongs to no layer.
  Op host_op(Stream stream, double seconds, std::string_view name, Bytes bytes);

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
  Op gemm_piece(const LayerOp& gemm, OpClass cls, int32_t pieces);

  Op tp_chunk(coll::Op kind, Bytes bytes, std::string_view name);

  // One of `pieces` blocks of an attention kernel along its key/value length: ring attention's
  // step on the K/V chunk of one context-parallel rank (Megatron's load-balanced causal split
  // gives every step the same share of the work).
  Op attention_piece(const LayerOp& attention, OpClass cls, int32_t pieces);

  // A ring whose `steps` - 1 hops each bring the next chunk: piece j runs on the chunk that
  // arrived in hop j while hop j + 1 brings the next (piece 0 on the local chunk).
  static std::size_t ring_gather(PhaseOps& phase, const Op& piece, const Op& hop, int32_t steps,
                                 int32_t also);

  // A ring that carries partial sums: piece j computes one destination chunk's partial output,
  // added to what hop j - 1 brought and sent on by hop j while piece j + 1 runs; the last piece
  // is this rank's own chunk. Each hop waits for its piece and (its stream is in order) the hop
  // before; what follows waits for the last hop.
  static std::size_t ring_scatter(PhaseOps& phase, const Op& piece, const Op& hop, int32_t steps,
                                  int32_t also);

  // Userbuffers ring exchange (Transformer Engine; NeMo's RingExchangeOverlapCfg): a TP
  // all-gather before a GEMM, or reduce-scatter after one, becomes tp - 1 steps in which every
  // rank sends one token chunk, S / tp, to the next rank of the ring (a send/recv over the TP
  // group, one hop each): the collective's (tp - 1) / tp x S.
  std::size_t tp_ring(PhaseOps& phase, const LayerOp& comm, const LayerOp& gemm, OpClass cls,
                      int32_t also, bool gather);

  // Ring attention (Megatron's context parallelism, cp_comm_type "p2p"): the K/V all-gather
  // becomes cp - 1 send/recv hops of one rank's K/V, each beside the attention block on the K/V
  // already here; backward, the dK/dV partial sums travel the ring the same way.
  std::size_t cp_ring(PhaseOps& phase, const LayerOp& comm, const LayerOp& attention, OpClass cls,
                      int32_t also, bool gather);

  bool make(const LayerOp& lop, OpClass cls, Op& op);

  const clustersim::RunConfig& config_;
  const compute::KernelCostModel& cost_;
  workload::StageWork& work_;
  bool overlap_tp_;  // Transformer Engine comm-GEMM overlap applies
  bool overlap_cp_;  // ring attention overlaps the K/V exchange
  std::unordered_map<std::string, uint32_t> labels_;
};

}  // namespace cs::lower
