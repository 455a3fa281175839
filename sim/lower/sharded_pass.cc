#include "sim/lower/sharded_pass.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "sim/workload/model_math.h"
#include "sim/workload/stack.h"

namespace cs::lower {

namespace {

using clustersim::StackKernel;
using workload::LayerOp;
using workload::Op;
using workload::OpClass;
using workload::Phase;
using workload::PhaseOp;
using workload::PhaseOps;
using workload::Stream;

struct UnitOp {
  LayerOp op;
  OpClass cls;
  int32_t layer;  // model order, -1 outside layers (labels)
};

// One sharded unit of a pass: the ops that use its weights, and what it gathers and reduces.
struct Unit {
  std::vector<UnitOp> ops{};
  int64_t params = 0;  // its weights, what an all-gather brings (bf16)
  bool gather = false;
  int64_t grads = 0;  // gradients it completes (backward), reduced after it
};

void add(Unit& u, const std::vector<LayerOp>& ops, OpClass cls, int32_t layer) {
  for (const auto& op : ops) u.ops.push_back({op, cls, layer});
}

// A GEMM that reads a layer's weight (forward, recomputed forward or input gradient).
bool is_weight_gemm(const LayerOp& op) {
  return !op.is_comm && op.kernel.kind == compute::KernelKind::kGemm &&
         op.kernel.group == compute::KernelGroup::kGemm && !op.kernel.name.ends_with("_wgrad");
}
// "q_fwd", "q_dgrad" -> "q": the weight a GEMM reads.
std::string_view weight_key(std::string_view name) {
  return name.substr(0, name.rfind('_'));
}

// MODULE granularity (DeepSpeed ZeRO-3's per-submodule fetch): each weight GEMM starts a unit of
// its own weight (n x k); the ops before a layer's first weight GEMM stay with the unit before it;
// a weight used again in the same layer's pass (its forward recomputed, then its input gradient)
// is gathered once. A unit without a weight GEMM (the embedding) stays whole. The layer's
// gradients are reduced after its last unit, which holds its weight-gradient GEMMs.
std::vector<Unit> split_modules(const std::vector<Unit>& units) {
  std::vector<Unit> out;
  for (const Unit& u : units) {
    bool has_gemm = false;
    for (const auto& uo : u.ops) has_gemm = has_gemm || is_weight_gemm(uo.op);
    if (!has_gemm) {
      out.push_back(u);
      continue;
    }
    std::set<std::string_view> seen;
    for (const auto& uo : u.ops) {
      if (is_weight_gemm(uo.op)) {
        Unit m;
        if (seen.insert(weight_key(uo.op.kernel.name)).second) {
          m.params = uo.op.kernel.n * uo.op.kernel.k;
          m.gather = u.gather;
        }
        out.push_back(std::move(m));
      } else if (out.empty()) {
        out.emplace_back();  // a pass's leading ops before any weight
      }
      out.back().ops.push_back(uo);
    }
    out.back().grads += u.grads;
  }
  return out;
}

// The stack's units of the forward and of the backward pass, in the order each pass runs them.
struct PassUnits {
  std::vector<Unit> forward, backward;
};

// Each unit's weights in forward order (embedding, layers, head), and the gather rules over them.
struct UnitSizes {
  UnitSizes(const clustersim::RunConfig& config, int32_t layers)
      : g(workload::stack_of(config).gather()),
        vocab(workload::padded_vocab(config.model(), 1) * int64_t{config.model().hidden_size()}),
        head(vocab + config.model().hidden_size()),
        per_layer(workload::count_params(config.model()).per_layer_on_tp_rank(1)),
        head_in_embedding(g.head_in_embedding_unit()) {
    params.push_back(vocab + (head_in_embedding ? head : 0));
    for (int32_t l = 0; l < layers; ++l) params.push_back(per_layer);
    params.push_back(head_in_embedding ? 0 : head);
  }

  // DeepSpeed's reuse rule: weights used again within max_reuse_params gathered in between (the
  // units after it, forward and then backward) stay.
  bool kept(std::size_t i) const {
    int64_t after = 0;
    for (std::size_t j = i + 1; j < params.size(); ++j) after += params[j];
    return g.max_reuse_params() > 0 && 2 * after < g.max_reuse_params();
  }

  const clustersim::WeightGather& g;
  int64_t vocab;
  int64_t head;  // output layer and final norm
  int64_t per_layer;
  bool head_in_embedding;
  std::vector<int64_t> params;
};

std::vector<Unit> forward_units(const clustersim::RunConfig& config, const LayerPasses& layer,
                                int32_t layers, const UnitSizes& sizes) {
  std::vector<Unit> forward;
  Unit emb{.params = sizes.params[0], .gather = sizes.g.gather_embedding()};
  add(emb, workload::embedding_ops(config, Phase::kForward), OpClass::kForward, -1);
  forward.push_back(std::move(emb));
  for (int32_t l = 0; l < layers; ++l) {
    Unit u{.params = sizes.per_layer, .gather = true};
    add(u, layer.forward, OpClass::kForward, l);
    forward.push_back(std::move(u));
  }
  Unit hf{.params = sizes.head, .gather = sizes.g.gather_head() && !sizes.head_in_embedding};
  add(hf, workload::head_ops(config, Phase::kForward), OpClass::kForward, -1);
  forward.push_back(std::move(hf));
  return forward;
}

std::vector<Unit> backward_units(const clustersim::RunConfig& config, const LayerPasses& layer,
                                 int32_t layers, const UnitSizes& sizes) {
  const auto& g = sizes.g;
  std::vector<Unit> backward;
  Unit hb{.params = sizes.head,
          .gather = g.gather_head() && !sizes.head_in_embedding && g.reshard_head_after_forward() &&
                    !sizes.kept(sizes.params.size() - 1),
          .grads = sizes.head_in_embedding ? 0 : sizes.head};
  add(hb, workload::head_ops(config, Phase::kBackward), OpClass::kBackward, -1);
  add(hb, workload::head_ops(config, Phase::kWeightGrad), OpClass::kBackward, -1);
  backward.push_back(std::move(hb));
  for (int32_t l = layers - 1; l >= 0; --l) {
    const bool reshard =
        l == layers - 1 ? g.reshard_last_layer_after_forward() : g.reshard_after_forward();
    Unit u{.params = sizes.per_layer,
           .gather = reshard && !sizes.kept(static_cast<std::size_t>(l) + 1),
           .grads = sizes.per_layer};
    add(u, layer.recompute, OpClass::kRecompute, l);
    add(u, layer.backward, OpClass::kBackward, l);
    add(u, layer.weight_grad, OpClass::kBackward, l);
    backward.push_back(std::move(u));
  }
  Unit eb{.params = sizes.params[0],
          .gather = g.gather_embedding() && g.reshard_embedding_after_forward() &&
                    g.embedding_unshard_in_backward() && !sizes.kept(0),
          .grads = sizes.params[0]};
  add(eb, workload::embedding_ops(config, Phase::kBackward), OpClass::kBackward, -1);
  add(eb, workload::embedding_ops(config, Phase::kWeightGrad), OpClass::kBackward, -1);
  backward.push_back(std::move(eb));
  return backward;
}

PassUnits make_units(const clustersim::RunConfig& config, const LayerPasses& layer,
                     int32_t layers) {
  const UnitSizes sizes(config, layers);
  PassUnits p{forward_units(config, layer, layers, sizes),
              backward_units(config, layer, layers, sizes)};
  if (sizes.g.unit() == clustersim::WeightGather::MODULE) {
    p.forward = split_modules(p.forward);
    p.backward = split_modules(p.backward);
  }
  return p;
}

// Emits one pass's units into a phase: each gather where the stack issues it, its copies, the
// unit's compute, and the reductions after it.
class PassEmitter {
 public:
  PassEmitter(const clustersim::RunConfig& config, OpMaker& make, PhaseOps& phase, bool backward)
      : config_(config),
        stack_(workload::stack_of(config)),
        make_(make),
        phase_(phase),
        backward_(backward),
        dp_(config.parallel().dp()),
        grad_bytes_(static_cast<Bytes>(workload::main_grad_bytes(config))) {}

  void emit(const std::vector<Unit>& units) {
    units_ = &units;
    opens_ = open_points(units);
    reductions_.assign(units.size(), PhaseOp::kNone);
    issue_opening_at(-1, PhaseOp::kItemStart);
    for (std::size_t q = 0; q < units.size(); ++q) emit_unit(static_cast<int32_t>(q));
    if (bucket_ > 0) reduce(bucket_);
  }

 private:
  int32_t last() const { return static_cast<int32_t>(phase_.ops.size()) - 1; }
  OpClass phase_class() const { return backward_ ? OpClass::kBackward : OpClass::kForward; }

  // LAYER: for each unit, the unit at whose start its gather is issued (-1: the pass's start;
  // itself: when that unit is reached), prefetch_units earlier. (MODULE units are issued by
  // prefetch_modules as they are reached.)
  std::vector<int32_t> open_points(const std::vector<Unit>& units) const {
    const auto& g = stack_.gather();
    const int32_t k = backward_ ? g.backward_prefetch_units() : g.forward_prefetch_units();
    std::vector<int32_t> open(units.size());
    for (std::size_t u = 0; u < units.size(); ++u) {
      const auto i = static_cast<int32_t>(u);
      open[u] =
          g.unit() == clustersim::WeightGather::MODULE ? i : (i - k < 0 && k > 0 ? -1 : i - k);
    }
    return open;
  }

  bool gathers(int32_t u) const {
    const Unit& unit = (*units_)[static_cast<std::size_t>(u)];
    return unit.gather && unit.params > 0;
  }

  // DeepSpeed's fetch_sub_module prefetch as unit q is reached: the next units of the trace not
  // yet gathered, in one coalesced all-gather, until they hold prefetch_params (within what
  // max_live_params leaves); units it passes over that need no gather are popped uncounted.
  void prefetch_modules(int32_t q, int32_t anchor) {
    const auto& g = stack_.gather();
    frontier_ = std::max(frontier_, q + 1);
    int64_t live = 0;  // gathered and not yet used: issued units from q on
    for (const auto& [u, op] : gathers_)
      if (u >= q) live += (*units_)[static_cast<std::size_t>(u)].params;
    int64_t budget = g.prefetch_params();
    if (g.max_live_params() > 0) budget = std::min(budget, g.max_live_params() - live);
    std::vector<int32_t> group;
    int64_t taken = 0;
    const auto n = static_cast<int32_t>(units_->size());
    while (frontier_ < n && taken < budget) {
      const int32_t u = frontier_++;
      if (!gathers(u) || gathers_.count(u)) continue;
      group.push_back(u);
      taken += (*units_)[static_cast<std::size_t>(u)].params;
    }
    if (!group.empty()) issue(group, anchor);
  }

  // The rows of `slot` over `params` (a unit's or bucket's), as program ops after `after`.
  void rows(StackKernel::Slot slot, int64_t params, int32_t after, int32_t also = PhaseOp::kNone) {
    const auto p = static_cast<double>(params);
    for (const LayerOp& lop : workload::stack_kernel_ops(config_, slot, p, p / dp_)) {
      Op op;
      make_.to_op(lop, lop.dp_stream ? OpClass::kComm : phase_class(), op);
      phase_.add(op, after, also);
      after = PhaseOp::kPrevious;
      also = PhaseOp::kNone;
      if (op.stream == Stream::kCompute) last_compute_ = last();
    }
  }

  // One all-gather of the units `group` (coalesced when several), its copy-in first, after
  // `anchor`.
  void issue(const std::vector<int32_t>& group, int32_t anchor) {
    int64_t params = 0;
    for (const int32_t u : group) params += (*units_)[static_cast<std::size_t>(u)].params;
    make_.layer = -1;
    const std::size_t before = phase_.ops.size();
    rows(StackKernel::GATHER_PROLOGUE, params, anchor);
    const int32_t after = phase_.ops.size() > before ? PhaseOp::kPrevious : anchor;
    phase_.add(make_.collective(coll::Op::kAllGather, workload::Dim::kDp, 2 * params,
                                "zero3_weight_gather"),
               after);
    for (const int32_t u : group) gathers_[u] = last();
  }

  void issue_opening_at(int32_t q, int32_t anchor) {
    for (std::size_t u = 0; u < units_->size(); ++u) {
      const auto i = static_cast<int32_t>(u);
      if (gathers(i) && opens_[u] == q && i != q && !gathers_.count(i)) issue({i}, anchor);
    }
  }

  void emit_unit(int32_t q) {
    const Unit& unit = (*units_)[static_cast<std::size_t>(q)];
    const bool gathered = gathers(q);
    const int32_t before = last_compute_;  // the unit before finished
    if (gathered && !gathers_.count(q)) issue({q}, before);
    // FSDP2: the compute stream waits for the reduction two units back (reduce_backpressure).
    int32_t wait = PhaseOp::kNone;
    if (stack_.gather().reduce_backpressure() && q >= 2)
      wait = reductions_[static_cast<std::size_t>(q - 2)];
    int32_t first_after = before;  // what the unit's first compute op waits for
    int32_t begun = before;        // the unit has begun: its copy-out done, or the one before it
    if (gathered) {
      const std::size_t n = phase_.ops.size();
      rows(StackKernel::GATHER_EPILOGUE, unit.params, gathers_[q], wait);
      if (phase_.ops.size() > n) {
        wait = PhaseOp::kNone;
        first_after = begun = last_compute_;
      } else {
        first_after = gathers_[q];
      }
    }
    if (stack_.gather().unit() == clustersim::WeightGather::MODULE) {
      prefetch_modules(q, begun);
    } else {
      issue_opening_at(q, begun);
    }
    compute(unit, first_after, wait);
    if (!backward_ || unit.grads == 0) return;
    if (stack_.reduce().when() == clustersim::GradReduce::PER_UNIT) {
      reductions_[static_cast<std::size_t>(q)] = reduce(unit.grads);
      return;
    }
    bucket_ += unit.grads;
    if (bucket_ >= bucket_params()) reductions_[static_cast<std::size_t>(q)] = reduce(bucket_);
  }

  void compute(const Unit& unit, int32_t first_after, int32_t wait) {
    bool first = true;
    for (const UnitOp& uo : unit.ops) {
      make_.layer = uo.layer;
      Op op;
      if (!make_.to_op(uo.op, uo.cls, op)) continue;
      phase_.add(op, first ? first_after : PhaseOp::kPrevious, first ? wait : PhaseOp::kNone);
      first = false;
      if (op.stream == Stream::kCompute) last_compute_ = last();
    }
    make_.layer = -1;
  }

  int64_t bucket_params() const {
    const auto& r = stack_.reduce();
    return r.has_bucket_params() ? r.bucket_params() : config_.parallel().dp_bucket_params();
  }

  // The reduction of `params` gradients after the ops so far, with the stack's copies around it;
  // returns its op index.
  int32_t reduce(int64_t params) {
    bucket_ = 0;
    rows(StackKernel::REDUCE_PROLOGUE, params, PhaseOp::kPrevious);
    phase_.add(make_.collective(coll::Op::kReduceScatter, workload::Dim::kDp, grad_bytes_ * params,
                                "dp_grad_reduce_scatter"));
    phase_.ops.back().grad_reduction = true;
    const int32_t at = last();
    rows(StackKernel::REDUCE_EPILOGUE, params, PhaseOp::kPrevious);
    return at;
  }

  const clustersim::RunConfig& config_;
  const clustersim::StackProfile& stack_;
  OpMaker& make_;
  PhaseOps& phase_;
  bool backward_;
  int32_t dp_;
  Bytes grad_bytes_;
  const std::vector<Unit>* units_ = nullptr;
  std::vector<int32_t> opens_, reductions_;
  std::unordered_map<int32_t, int32_t> gathers_;  // unit -> its gather's op
  int32_t last_compute_ = PhaseOp::kItemStart;
  int32_t frontier_ = 0;  // MODULE: the next unit of the trace queue not yet looked at
  int64_t bucket_ = 0;
};

}  // namespace

void build_sharded_chunk(const clustersim::RunConfig& config, OpMaker& make,
                         const LayerPasses& layer, int32_t layers, workload::ChunkWork& chunk) {
  const auto& par = config.parallel();
  if (par.pp() != 1 || par.virtual_stages() != 1 || config.model().has_moe() ||
      config.model().mtp_layers() > 0 || par.checkpoint_every_k_layers() > 0)
    throw std::logic_error("a stack's sharded pass needs pp 1, dense layers and no segments");
  const PassUnits units = make_units(config, layer, layers);
  PassEmitter(config, make, chunk.forward, false).emit(units.forward);
  PassEmitter(config, make, chunk.backward, true).emit(units.backward);
}

}  // namespace cs::lower
