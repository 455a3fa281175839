#include "sim/workload/program_builder.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace cs::workload {

namespace {

Op p2p(OpKind kind, Stream stream, int32_t peer, uint32_t tag, Bytes bytes, int32_t microbatch,
       uint32_t label) {
  Op o;
  o.kind = kind;
  o.stream = stream;
  o.op_class = OpClass::kComm;
  o.dim = Dim::kPp;
  o.coll_op = coll::Op::kSendRecv;
  o.peer_stage = peer;
  o.tag = tag;
  o.bytes = bytes;
  o.microbatch = microbatch;
  o.label = label;
  return o;
}

}  // namespace

Program build_stage_program(const StageWork& work, const std::vector<WorkItem>& order,
                            int32_t stage, int32_t stages) {
  Program program;
  for (const auto& l : work.labels) program.label(l);
  program.kernels = work.kernels;
  program.rank_times = work.rank_times;
  program.all_to_alls = work.all_to_alls;
  const auto v = static_cast<int32_t>(work.chunks.size());
  const int32_t pieces = stages * v;
  const int32_t next = (stage + 1) % stages, prev = (stage + stages - 1) % stages;
  const uint32_t recv_label = program.label("recv"), send_label = program.label("send");

  // The last microbatch's final backward phase of each chunk triggers its gradient sync.
  std::vector<int32_t> last_microbatch(static_cast<std::size_t>(v), -1);
  const bool split = std::any_of(order.begin(), order.end(),
                                 [](const WorkItem& w) { return w.phase == Phase::kWeightGrad; });
  const Phase final_phase = split ? Phase::kWeightGrad : Phase::kBackward;
  for (const auto& w : order)
    if (w.phase == final_phase)
      last_microbatch[w.chunk] = std::max(last_microbatch[w.chunk], w.microbatch);

  std::vector<uint32_t> grad_ops;
  std::vector<const GradSync*> deferred_grad_sync;  // without overlap: after the whole backward
  std::vector<bool> gathered(static_cast<std::size_t>(v), false);  // parameter gathers issued
  uint32_t previous = UINT32_MAX;  // last op of the previous item: items run in order
  for (const WorkItem& item : order) {
    if (item.chunk < 0 || item.chunk >= v)
      throw std::invalid_argument("work item chunk out of range");
    const ChunkWork& chunk = work.chunks[item.chunk];
    const int32_t piece = item.chunk * stages + stage;
    std::vector<uint32_t> first_deps;
    if (previous != UINT32_MAX) first_deps.push_back(previous);

    const PhaseOps* phase = nullptr;
    switch (item.phase) {
      case Phase::kForward:
        phase = &chunk.forward;
        if (piece > 0) {
          first_deps.push_back(program.add(
              p2p(OpKind::kRecv, Stream::kRecvPrev, prev, p2p_tag(item.microbatch, piece, false),
                  chunk.activation_bytes, item.microbatch, recv_label)));
        }
        break;
      case Phase::kBackward:
        phase = &chunk.backward;
        if (piece < pieces - 1) {
          first_deps.push_back(program.add(
              p2p(OpKind::kRecv, Stream::kRecvNext, next, p2p_tag(item.microbatch, piece, true),
                  chunk.activation_bytes, item.microbatch, recv_label)));
        }
        break;
      case Phase::kWeightGrad:
        phase = &chunk.weight_grad;
        break;
    }
    // The chunk's first forward waits, op by op, for the parameter buckets it uses.
    std::vector<std::pair<uint32_t, uint32_t>> gather_before;  // (phase op, gather op)
    if (item.phase == Phase::kForward && !gathered[item.chunk]) {
      gathered[item.chunk] = true;
      for (const ParamGather& g : chunk.param_gather) {
        if (g.before >= phase->ops.size())
          throw std::invalid_argument("parameter gather before a missing op");
        gather_before.emplace_back(g.before, program.add(g.op));
      }
    }
    std::vector<uint32_t> phase_ops;
    for (std::size_t i = 0; i < phase->ops.size(); ++i) {
      const PhaseOp& entry = phase->ops[i];
      Op op = entry.op;
      op.microbatch = item.microbatch;
      std::vector<uint32_t> deps;
      auto earlier = [&](int32_t index) {
        if (index < 0 || static_cast<std::size_t>(index) >= i)
          throw std::invalid_argument("phase op waits for an op that does not precede it");
        deps.push_back(phase_ops[static_cast<std::size_t>(index)]);
      };
      if (entry.after == PhaseOp::kItemStart || (entry.after == PhaseOp::kPrevious && i == 0)) {
        deps = first_deps;
      } else if (entry.after == PhaseOp::kPrevious) {
        deps.push_back(phase_ops.back());
      } else {
        earlier(entry.after);
      }
      if (entry.also_after != PhaseOp::kNone) earlier(entry.also_after);
      for (const auto& [before, gather] : gather_before)
        if (before == i) deps.push_back(gather);
      phase_ops.push_back(program.add(op, deps));
    }
    if (phase_ops.empty()) throw std::invalid_argument("a pipeline phase has no ops");
    // The next item follows this one's last compute-stream op: ops on other streams (prefetches)
    // may still be running.
    previous = phase_ops.back();
    for (std::size_t i = phase_ops.size(); i-- > 0;) {
      if (phase->ops[i].op.stream == Stream::kCompute) {
        previous = phase_ops[i];
        break;
      }
    }

    if (item.phase == Phase::kForward && piece < pieces - 1) {
      program.add(
          p2p(OpKind::kSend, Stream::kSendNext, next, p2p_tag(item.microbatch, piece + 1, false),
              chunk.activation_bytes, item.microbatch, send_label),
          {previous});
    }
    if (item.phase == Phase::kBackward && piece > 0) {
      program.add(
          p2p(OpKind::kSend, Stream::kSendPrev, prev, p2p_tag(item.microbatch, piece - 1, true),
              chunk.activation_bytes, item.microbatch, send_label),
          {previous});
    }
    if (item.phase == final_phase && item.microbatch == last_microbatch[item.chunk]) {
      for (const GradSync& g : chunk.grad_sync) {
        if (g.after >= phase_ops.size())
          throw std::invalid_argument("gradient sync after a missing op");
        if (work.grad_sync_after_backward)
          deferred_grad_sync.push_back(&g);
        else
          grad_ops.push_back(program.add(g.op, {phase_ops[g.after]}));
      }
    }
  }
  for (const GradSync* g : deferred_grad_sync) grad_ops.push_back(program.add(g->op, {previous}));

  std::vector<uint32_t> optimizer_deps = grad_ops;
  if (previous != UINT32_MAX) optimizer_deps.push_back(previous);
  for (const Op& op : work.optimizer) {
    optimizer_deps = {program.add(op, optimizer_deps)};
  }
  for (const Op& op : work.after_optimizer) program.add(op, optimizer_deps);
  return program;
}

}  // namespace cs::workload
