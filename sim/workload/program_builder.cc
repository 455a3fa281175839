#include "sim/workload/program_builder.h"

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "sim/workload/pair_turns.h"

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

// The streams of a transfer along the forward hop `from` -> `to` (its gradient goes back the
// other way): a hop to the next stage round the ring on the four original pipeline streams, a hop
// to the previous stage (ZB-V's second chunk, DualPipe's reverse direction) on the other four.
// Each stage runs a chunk's forwards, and its backwards, in microbatch order, so a stream that
// carries one kind of message between one pair of stages sees the same order at both ends; mixing
// kinds would not (ZB-V's stage 0 sends a later microbatch's activation before an earlier one's
// gradient that its neighbour waits for first), nor would mixing peers without blocking one
// transfer behind another that its receiver has not reached.
struct HopStreams {
  Stream send, recv;
};
HopStreams hop_streams(int32_t from, int32_t to, int32_t stages, bool backward) {
  const bool ascending = to == (from + 1) % stages;
  if (ascending) {
    return backward ? HopStreams{Stream::kSendPrev, Stream::kRecvNext}
                    : HopStreams{Stream::kSendNext, Stream::kRecvPrev};
  }
  return backward ? HopStreams{Stream::kSendNextGradient, Stream::kRecvPrevGradient}
                  : HopStreams{Stream::kSendPrevActivation, Stream::kRecvNextActivation};
}

// The state of one stage's program while its items are added in order.
class StageBuilder {
 public:
  StageBuilder(const StageWork& work, PipelineSchedule schedule, int32_t stage, int32_t stages)
      : work_(work),
        schedule_(schedule),
        stage_(stage),
        stages_(stages),
        v_(static_cast<int32_t>(work.chunks.size())) {
    for (const auto& l : work.labels) program_.label(l);
    program_.kernels = work.kernels;
    program_.rank_times = work.rank_times;
    program_.all_to_alls = work.all_to_alls;
    recv_label_ = program_.label("recv");
    send_label_ = program_.label("send");
    gathered_.assign(static_cast<std::size_t>(v_), false);
  }

  void add_items(const std::vector<WorkItem>& order);
  Program finish();

 private:
  // Adds order[i] (with the items an overlapped pair takes along); returns how many it added.
  std::size_t add_item(const std::vector<WorkItem>& order, std::size_t i);
  // The receive (or local hand-off) an item waits for, appended to `deps`.
  void input(const WorkItem& item, std::vector<uint32_t>& deps);
  void output(const WorkItem& item);
  struct PhaseCursor;
  PhaseCursor start_phase(const WorkItem& item, const std::vector<uint32_t>& first_deps);
  void add_next(PhaseCursor& cursor, bool overlapped);
  std::vector<uint32_t> phase_ops(const WorkItem& item, const std::vector<uint32_t>& first_deps);
  void add_overlapped_pair(const WorkItem& forward, const WorkItem& backward,
                           const WorkItem* weight, const std::vector<uint32_t>& first_deps);
  uint32_t last_compute_op(const std::vector<uint32_t>& ops) const;
  // Records an item's ops; the next item waits for its last compute op, or `also_after` if later.
  void finish_item(const WorkItem& item, const std::vector<uint32_t>& ops, bool flush_sends,
                   uint32_t also_after = 0);
  void grad_sync(const WorkItem& item, const std::vector<uint32_t>& ops);

  const StageWork& work_;
  PipelineSchedule schedule_;
  int32_t stage_, stages_, v_;
  Program program_;
  uint32_t recv_label_ = 0, send_label_ = 0;
  std::vector<int32_t> last_microbatch_;  // per chunk, of its final backward phase
  Phase final_phase_ = Phase::kBackward;
  std::vector<uint32_t> grad_ops_;
  std::vector<const GradSync*> deferred_grad_sync_;  // without overlap: after the whole backward
  std::vector<bool> gathered_;                       // parameter gathers issued, per chunk
  uint32_t previous_ = UINT32_MAX;  // last compute op of the previous item: items run in order
  std::map<std::tuple<Phase, int32_t, int32_t>, uint32_t> done_;  // (phase, mb, chunk) -> op
  std::vector<WorkItem> deferred_sends_;  // items whose output waits for a later one (Pairing)
  bool input_received_ = false;           // the item's input came with the overlapped forward
};

void StageBuilder::add_items(const std::vector<WorkItem>& order) {
  last_microbatch_.assign(static_cast<std::size_t>(v_), -1);
  const bool split = std::any_of(order.begin(), order.end(),
                                 [](const WorkItem& w) { return w.phase == Phase::kWeightGrad; });
  final_phase_ = split ? Phase::kWeightGrad : Phase::kBackward;
  for (const auto& w : order) {
    if (w.chunk < 0 || w.chunk >= v_) throw std::invalid_argument("work item chunk out of range");
    if (w.phase == final_phase_)
      last_microbatch_[w.chunk] = std::max(last_microbatch_[w.chunk], w.microbatch);
  }
  for (std::size_t i = 0; i < order.size();) i += add_item(order, i);
}

void StageBuilder::input(const WorkItem& item, std::vector<uint32_t>& deps) {
  const bool forward = item.phase == Phase::kForward;
  const ChunkRef from = forward ? forward_source(schedule_, stage_, item.chunk, stages_, v_)
                                : forward_target(schedule_, stage_, item.chunk, stages_, v_);
  if (!from.exists()) return;  // the path's first piece (forward) or last (backward)
  if (from.stage == stage_) {
    const auto it = done_.find({item.phase, item.microbatch, from.chunk});
    if (it == done_.end()) {
      throw std::invalid_argument("stage " + std::to_string(stage_) + " runs chunk " +
                                  std::to_string(item.chunk) + " of microbatch " +
                                  std::to_string(item.microbatch) +
                                  " before the chunk on the same stage that feeds it");
    }
    deps.push_back(it->second);
    return;
  }
  const int32_t piece = model_piece(schedule_, stage_, item.chunk, stages_);
  const HopStreams streams = forward ? hop_streams(from.stage, stage_, stages_, false)
                                     : hop_streams(stage_, from.stage, stages_, true);
  const ChunkWork& chunk = work_.chunks[static_cast<std::size_t>(item.chunk)];
  deps.push_back(program_.add(p2p(OpKind::kRecv, streams.recv, from.stage,
                                  p2p_tag(item.microbatch, piece, !forward), chunk.activation_bytes,
                                  item.microbatch, recv_label_)));
}

void StageBuilder::output(const WorkItem& item) {
  const bool forward = item.phase == Phase::kForward;
  const ChunkRef to = forward ? forward_target(schedule_, stage_, item.chunk, stages_, v_)
                              : forward_source(schedule_, stage_, item.chunk, stages_, v_);
  if (!to.exists() || to.stage == stage_) return;  // nothing to send, or a local hand-off
  const int32_t piece = model_piece(schedule_, to.stage, to.chunk, stages_);
  const HopStreams streams = forward ? hop_streams(stage_, to.stage, stages_, false)
                                     : hop_streams(to.stage, stage_, stages_, true);
  const ChunkWork& chunk = work_.chunks[static_cast<std::size_t>(item.chunk)];
  program_.add(p2p(OpKind::kSend, streams.send, to.stage, p2p_tag(item.microbatch, piece, !forward),
                   chunk.activation_bytes, item.microbatch, send_label_),
               {previous_});
}

// One phase's ops while they are added, one at a time, so that a pair can interleave two.
struct StageBuilder::PhaseCursor {
  const PhaseOps* phase = nullptr;
  int32_t microbatch = 0;
  std::vector<uint32_t> first_deps;
  std::vector<std::pair<uint32_t, uint32_t>> gather_before;  // (phase op, gather op)
  std::vector<uint32_t> ops;
  bool done() const { return ops.size() == phase->ops.size(); }
};

StageBuilder::PhaseCursor StageBuilder::start_phase(const WorkItem& item,
                                                    const std::vector<uint32_t>& first_deps) {
  const ChunkWork& chunk = work_.chunks[static_cast<std::size_t>(item.chunk)];
  PhaseCursor c;
  c.phase = item.phase == Phase::kForward    ? &chunk.forward
            : item.phase == Phase::kBackward ? &chunk.backward
                                             : &chunk.weight_grad;
  if (c.phase->ops.empty()) throw std::invalid_argument("a pipeline phase has no ops");
  c.microbatch = item.microbatch;
  c.first_deps = first_deps;
  // The chunk's first forward waits, op by op, for the parameter buckets it uses.
  if (item.phase == Phase::kForward && !gathered_[item.chunk]) {
    gathered_[item.chunk] = true;
    for (const ParamGather& g : chunk.param_gather) {
      if (g.before >= c.phase->ops.size())
        throw std::invalid_argument("parameter gather before a missing op");
      c.gather_before.emplace_back(g.before, program_.add(g.op));
    }
  }
  return c;
}

void StageBuilder::add_next(PhaseCursor& c, bool overlapped) {
  const std::size_t i = c.ops.size();
  const PhaseOp& entry = c.phase->ops[i];
  Op op = entry.op;
  op.microbatch = c.microbatch;
  // In an overlapped pair the all-to-alls leave the compute stream, so that the other half's
  // compute runs while they are in flight.
  if (overlapped && is_expert_all_to_all(op)) op.stream = Stream::kEp;
  std::vector<uint32_t> deps;
  auto earlier = [&](int32_t index) {
    if (index < 0 || static_cast<std::size_t>(index) >= i)
      throw std::invalid_argument("phase op waits for an op that does not precede it");
    deps.push_back(c.ops[static_cast<std::size_t>(index)]);
  };
  if (entry.after == PhaseOp::kItemStart || (entry.after == PhaseOp::kPrevious && i == 0)) {
    deps = c.first_deps;
  } else if (entry.after == PhaseOp::kPrevious) {
    deps.push_back(c.ops.back());
  } else {
    earlier(entry.after);
  }
  if (entry.also_after != PhaseOp::kNone) earlier(entry.also_after);
  for (const auto& [before, gather] : c.gather_before)
    if (before == i) deps.push_back(gather);
  c.ops.push_back(program_.add(op, deps));
}

std::vector<uint32_t> StageBuilder::phase_ops(const WorkItem& item,
                                              const std::vector<uint32_t>& first_deps) {
  PhaseCursor c = start_phase(item, first_deps);
  while (!c.done()) add_next(c, false);
  return std::move(c.ops);
}

void StageBuilder::grad_sync(const WorkItem& item, const std::vector<uint32_t>& ops) {
  if (item.phase != final_phase_) return;
  const ChunkWork& chunk = work_.chunks[static_cast<std::size_t>(item.chunk)];
  const PhaseOps& phase = item.phase == Phase::kBackward ? chunk.backward : chunk.weight_grad;
  for (std::size_t i = 0; i < phase.ops.size() && i < ops.size(); ++i)
    if (phase.ops[i].grad_reduction) grad_ops_.push_back(ops[i]);
  const bool last = item.microbatch == last_microbatch_[item.chunk];
  if (!last && !work_.grad_sync_every_microbatch) return;
  for (const GradSync& g : work_.chunks[static_cast<std::size_t>(item.chunk)].grad_sync) {
    if (g.after >= ops.size()) throw std::invalid_argument("gradient sync after a missing op");
    if (work_.grad_sync_after_backward && !work_.grad_sync_every_microbatch) {
      deferred_grad_sync_.push_back(&g);
      continue;
    }
    Op op = g.op;
    if (work_.grad_sync_every_microbatch) op.microbatch = item.microbatch;
    // Without overlap, a microbatch's buckets are reduced once its whole pass has run.
    const uint32_t after = work_.grad_sync_after_backward ? ops.back() : ops[g.after];
    grad_ops_.push_back(program_.add(op, {after}));
  }
}

std::size_t StageBuilder::add_item(const std::vector<WorkItem>& order, std::size_t i) {
  const WorkItem& item = order[i];
  const WorkItem* next_item = i + 1 < order.size() ? &order[i + 1] : nullptr;
  std::vector<uint32_t> first_deps;
  if (previous_ != UINT32_MAX) first_deps.push_back(previous_);
  // An overlapped pair starts once both halves have their inputs: the forward receives the
  // backward's gradient too (Pairing::kOverlapped), and the backward then needs nothing more.
  if (item.phase != Phase::kWeightGrad && !input_received_) input(item, first_deps);
  input_received_ = false;
  const bool paired = item.pair == Pairing::kOverlapped && next_item != nullptr &&
                      next_item->phase != Phase::kWeightGrad;
  if (paired) {
    input(*next_item, first_deps);
    input_received_ = true;
    if (work_.overlap_pairs && next_item->phase == Phase::kBackward) {
      // A full backward (B, then its W at once) overlaps as one half.
      const WorkItem* weight = i + 2 < order.size() ? &order[i + 2] : nullptr;
      if (weight != nullptr &&
          (next_item->pair != Pairing::kSequential || weight->phase != Phase::kWeightGrad ||
           weight->microbatch != next_item->microbatch || weight->chunk != next_item->chunk))
        weight = nullptr;
      add_overlapped_pair(item, *next_item, weight, first_deps);
      input_received_ = false;
      return weight != nullptr ? 3 : 2;
    }
  }
  finish_item(item, phase_ops(item, first_deps),
              item.pair == Pairing::kNone || next_item == nullptr);
  return 1;
}

// The two halves' ops are added in turn, each up to and including its next expert all-to-all:
// the compute stream runs one half's computation while the other's all-to-all is in flight
// (DeepSeek-V3, section 3.2.1, figure 4: attention and MLP of one chunk under the dispatch and
// combine of the other). The backward half runs on into its weight gradients (`weight`, when
// the pair's backward is a full one), whose compute fills the forward's gaps too, as the
// figure's ATTN(W) and MLP(W) do.
void StageBuilder::add_overlapped_pair(const WorkItem& forward, const WorkItem& backward,
                                       const WorkItem* weight,
                                       const std::vector<uint32_t>& first_deps) {
  PhaseCursor f = start_phase(forward, first_deps), b = start_phase(backward, first_deps);
  std::optional<PhaseCursor> w;
  PhaseOps second = *b.phase;  // the backward half's ops in order, for its turns
  if (weight != nullptr) {
    const ChunkWork& chunk = work_.chunks[static_cast<std::size_t>(weight->chunk)];
    second.ops.insert(second.ops.end(), chunk.weight_grad.ops.begin(), chunk.weight_grad.ops.end());
  }
  auto add_second = [&] {
    if (!b.done()) return add_next(b, true);
    // The weight gradients follow the backward's last compute op, as they do unpaired.
    if (!w) w = start_phase(*weight, {last_compute_op(b.ops)});
    add_next(*w, true);
  };
  const auto turns = pair_turns({f.phase, &second});
  std::size_t second_added = 0;
  for (std::size_t t = 0; t < turns[0].size(); ++t) {
    while (f.ops.size() < turns[0][t]) add_next(f, true);
    for (; second_added < turns[1][t]; ++second_added) add_second();
  }
  // The next item waits for the latest of the halves' last compute ops.
  const uint32_t forward_last = last_compute_op(f.ops);
  finish_item(forward, f.ops, false);
  finish_item(backward, b.ops, weight == nullptr && backward.pair == Pairing::kNone, forward_last);
  if (weight != nullptr && !w) throw std::logic_error("an overlapped pair's W was not added");
  if (weight != nullptr)
    finish_item(*weight, w->ops, weight->pair == Pairing::kNone,
                std::max(forward_last, last_compute_op(b.ops)));
}

// The next item follows an item's last compute-stream op: ops on other streams (prefetches,
// all-to-alls) may still be running.
uint32_t StageBuilder::last_compute_op(const std::vector<uint32_t>& ops) const {
  for (std::size_t i = ops.size(); i-- > 0;)
    if (program_.ops[ops[i]].stream == Stream::kCompute) return ops[i];
  return ops.back();
}

void StageBuilder::finish_item(const WorkItem& item, const std::vector<uint32_t>& ops,
                               bool flush_sends, uint32_t also_after) {
  const uint32_t last = last_compute_op(ops);
  done_[{item.phase, item.microbatch, item.chunk}] = last;
  previous_ = std::max(last, also_after);  // compute-stream ops run in the order they are added
  // A paired item's output leaves with that of the next unpaired item (Pairing).
  if (item.phase != Phase::kWeightGrad) deferred_sends_.push_back(item);
  if (flush_sends) {
    for (const WorkItem& w : deferred_sends_) output(w);
    deferred_sends_.clear();
  }
  grad_sync(item, ops);
}

Program StageBuilder::finish() {
  for (const GradSync* g : deferred_grad_sync_)
    grad_ops_.push_back(program_.add(g->op, {previous_}));
  std::vector<uint32_t> optimizer_deps = grad_ops_;
  if (previous_ != UINT32_MAX) optimizer_deps.push_back(previous_);
  for (const Op& op : work_.optimizer) optimizer_deps = {program_.add(op, optimizer_deps)};
  for (const Op& op : work_.after_optimizer) program_.add(op, optimizer_deps);
  return std::move(program_);
}

}  // namespace

Program build_stage_program(const StageWork& work, const std::vector<WorkItem>& order,
                            PipelineSchedule schedule, int32_t stage, int32_t stages) {
  StageBuilder builder(work, schedule, stage, stages);
  builder.add_items(order);
  return builder.finish();
}

}  // namespace cs::workload
