#include "sim/workload/moe_ops.h"

#include <cmath>
#include <numeric>

#include "sim/compute/precision_formats.h"
#include "sim/workload/layout_config.h"

namespace cs::workload {
namespace {

constexpr double kBf16Bytes = 2.0;  // bf16 activations and gradients
using compute::KernelGroup;

// One GPU's share of a MoE block and the op list being built.
class MoeBuilder {
 public:
  MoeBuilder(const clustersim::RunConfig& config, const ExpertLoad& load)
      : config_(config), moe_(config.model().moe()), load_(load) {
    const auto& par = config.parallel();
    tp_ = par.tp();
    ep_ = par.ep();
    etp_ = expert_tp_of(par);
    h_ = config.model().hidden_size();
    const int64_t tokens = int64_t{par.microbatch_size()} * config.model().seq_length() / par.cp();
    sp_ = sequence_parallel_on(par);
    tokens_ = tokens;
    t_in_ = sp_ ? tokens / tp_ : tokens;
    gather_ = etp_ > 1 ? tp_ : 1;
    kept_ = 1.0 - load.dropped;
    swiglu_ = config.model().activation() == clustersim::ModelConfig::SWIGLU;
    ffn_shard_ = moe_.expert_ffn_hidden_size() / etp_;
    routing_kernels_ = config.effects().moe_routing_kernels();
    fp8_dispatch_ = moe_.fp8_dispatch() && config.precision() == clustersim::FP8;
    fp8_casts_ = config.effects().fp8_casts();
    grouped_gemm_ = config.effects().moe_grouped_gemm();
    deepep_ = moe_.dispatcher() == clustersim::MoeConfig::DEEPEP;
  }

  std::vector<LayerOp> take() { return std::move(ops_); }

  void forward() {
    router(false);
    token_counts();
    permute("moe_permute_fwd");
    quantize("moe_dispatch_quantize_fwd");
    dispatch("moe_dispatch_a2a", false, fp8_dispatch_);
    etp_comm(coll::Op::kAllGather, "moe_etp_ag");
    arrive(Phase::kForward);
    experts(Phase::kForward);
    leave(Phase::kForward);
    etp_comm(coll::Op::kReduceScatter, "moe_etp_rs");
    dispatch("moe_combine_a2a", true);
    unpermute("moe_unpermute_fwd");
    shared_experts(Phase::kForward);
  }

  void backward() {
    shared_experts(Phase::kBackward);
    unpermute("moe_unpermute_bwd");
    quantize("moe_combine_quantize_bwd");
    dispatch("moe_combine_a2a_bwd", false, fp8_dispatch_);
    etp_comm(coll::Op::kAllGather, "moe_etp_rs_bwd");
    leave(Phase::kBackward);
    experts(Phase::kBackward);
    arrive(Phase::kBackward);
    etp_comm(coll::Op::kReduceScatter, "moe_etp_ag_bwd");
    dispatch("moe_dispatch_a2a_bwd", true);
    permute("moe_permute_bwd");
    router(true);
  }

  void weight_grad() {
    shared_experts(Phase::kWeightGrad);
    experts(Phase::kWeightGrad);
    add(gemm_op("moe_router_wgrad", h_, moe_.num_experts(), t_in_, clustersim::BF16));
  }

  // MOE_ACT recomputation: the activation's forward again, before the backward.
  void activation_recompute() {
    grouped([&](int64_t m) { return activation("moe_act_recompute", m, false); });
  }

 private:
  void add(LayerOp op) { ops_.push_back(std::move(op)); }
  void add(compute::Kernel kernel) {
    LayerOp op;
    op.kernel = std::move(kernel);
    add(std::move(op));
  }
  void memory(std::string_view name, double bytes, double flops, KernelGroup group) {
    add(compute::memory_bound(name, bytes, flops, group));
  }
  // A token permutation: rows copied into or summed back from expert order, at the GPU's
  // measured permutation rate (compute::Kernel::token_permute).
  static compute::Kernel token_permutation(std::string_view name, double bytes, double flops) {
    compute::Kernel k = compute::memory_bound(name, bytes, flops, KernelGroup::kMoeRouting);
    k.token_permute = true;
    return k;
  }
  void comm(LayerComm kind, std::string_view name, double bytes) {
    LayerOp op;
    op.is_comm = true;
    op.comm = kind;
    op.comm_name = name;
    op.bytes = static_cast<Bytes>(std::llround(bytes));
    add(op);
  }
  // Token copies this GPU sends to experts: T_in x top_k x (1 - dropped).
  double copies() const { return static_cast<double>(t_in_) * moe_.top_k() * kept_; }

  // Gate GEMM T_in x h -> E (kept in bf16, as Megatron-Core's router), then the score function
  // and top-k over the logits: read them, write fp32 scores and the top_k (index, weight) pairs.
  void router(bool backward) {
    const int64_t e = moe_.num_experts();
    const double logits = static_cast<double>(t_in_) * static_cast<double>(e);
    const double picks = static_cast<double>(t_in_) * moe_.top_k();
    if (!backward) add(gemm_op("moe_router_fwd", t_in_, e, h_, clustersim::BF16));
    if (routing_kernels_)
      memory(backward ? "moe_router_scores_bwd" : "moe_router_scores_fwd",
             logits * (kBf16Bytes + 4.0) + picks * 8.0, 5.0 * logits, KernelGroup::kMoeRouting);
    if (backward) add(gemm_op("moe_router_dgrad", t_in_, h_, e, clustersim::BF16));
  }
  // Gathering each token's copies in expert order: read T_in rows of h, write the copies. The
  // all-to-all dispatcher's, before the dispatch (DeepEP's permutes on arrival: arrive()).
  void permute(std::string_view name) {
    if (!routing_kernels_ || deepep_) return;
    const double rows = static_cast<double>(t_in_) + copies();
    add(token_permutation(name, rows * static_cast<double>(h_) * kBf16Bytes, 0));
  }
  // The weighted sum of a token's copies back into its row, after the combine (DeepEP's combine
  // sums them itself).
  void unpermute(std::string_view name) {
    if (!routing_kernels_ || deepep_) return;
    const double rows = static_cast<double>(t_in_) + copies();
    add(token_permutation(name, rows * static_cast<double>(h_) * kBf16Bytes, 2.0 * copies() * h_));
  }
  // FP8 tokens with a 4-byte scale per 128 elements (DeepSeek-V3's 1x128 activation tiles).
  static constexpr double kFp8TokenBytes = 1.0 + 4.0 / 128.0;
  // Bytes per element of the tokens a dispatch (or a combine's backward) carries.
  double dispatched_bytes() const { return fp8_dispatch_ ? kFp8TokenBytes : kBf16Bytes; }
  // What the dispatch delivered, made into each local expert's rows before the grouped GEMMs
  // (forward; the backward runs the reverse copy after them), and the experts' rows made back
  // into what the combine sends (leave). The all-to-all dispatcher receives the copies in
  // source-rank order and sorts them by local expert ("Permutation 2": token_dispatcher.py
  // dispatch_postprocess, sort_chunks_by_idxs), restoring rank order before the combine
  // (combine_preprocess); a rank of one expert needs neither. The flex dispatcher with DeepEP
  // receives the tokens as they lie and permutes them into the experts' copies (_DeepepManager
  // get_permuted_hidden_states_by_experts), summing them back before the combine
  // (get_restored_hidden_states_by_experts). Either way a copy of every token the rank's experts
  // take, read and written; DeepEP delivers a token once to a rank that holds several of its
  // experts (all_to_all_v.h), whose single read is counted once per expert here (DeepSeek-V3:
  // 7.6 of a token's 8 copies arrive, so the reads are 5% high).
  void arrive(Phase phase) {
    const bool forward = phase == Phase::kForward;
    const double bytes = forward ? dispatched_bytes() : kBf16Bytes;
    if (deepep_)
      regroup(forward ? "moe_permute_recv_fwd" : "moe_permute_recv_bwd", bytes);
    else if (moe_.num_experts() / ep_ > 1)
      regroup(forward ? "moe_sort_chunks_fwd" : "moe_sort_chunks_bwd", bytes);
  }
  void leave(Phase phase) {
    const bool forward = phase == Phase::kForward;
    const double bytes = forward ? kBf16Bytes : dispatched_bytes();
    if (deepep_)
      regroup(forward ? "moe_unpermute_recv_fwd" : "moe_unpermute_recv_bwd", bytes);
    else if (moe_.num_experts() / ep_ > 1)
      regroup(forward ? "moe_restore_chunks_fwd" : "moe_restore_chunks_bwd", bytes);
  }
  // Each EP rank copies (reads and writes) every token its experts take.
  void regroup(std::string_view name, double bytes_per_element) {
    if (!routing_kernels_) return;
    grouped([&](int64_t m) {
      return token_permutation(name, 2.0 * static_cast<double>(m) * h_ * bytes_per_element, 0);
    });
  }
  // The all-to-all dispatcher quantizes the permuted copies; DeepEP the tokens as they lie.
  void quantize(std::string_view name) {
    if (!fp8_dispatch_ || !fp8_casts_ || ep_ == 1) return;
    const double rows = deepep_ ? static_cast<double>(t_in_) : copies();
    memory(name, rows * h_ * (kBf16Bytes + kFp8TokenBytes), rows * h_, KernelGroup::kFp8Cast);
  }
  // Before its all-to-alls, Megatron-Core's dispatcher all-gathers every rank's token count per
  // expert over the EP group (token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess,
  // gather_from_sequence_parallel_region of num_local_tokens_per_expert, int64): the splits.
  // DeepEP exchanges the same counts in its dispatch's notify step; the all-gather stands in.
  void token_counts() {
    if (ep_ == 1) return;
    comm(LayerComm{Dim::kEp, coll::Op::kAllGather}, "moe_token_counts_ag",
         static_cast<double>(ep_) * static_cast<double>(moe_.num_experts()) * 8.0);
  }
  void dispatch(std::string_view name, bool reverse, bool fp8 = false) {
    if (ep_ == 1) return;
    comm(LayerComm{Dim::kEp, coll::Op::kAllToAll}, name,
         copies() * h_ * (fp8 ? kFp8TokenBytes : kBf16Bytes));
    AllToAllV& v = ops_.back().all_to_all;
    v.share = load_.rank_share;
    const double kept = std::accumulate(v.share.begin(), v.share.end(), 0.0);
    for (double& s : v.share) s = kept > 0 ? s / kept : 0;
    v.reverse = reverse;
    v.copies_per_token = moe_.top_k() * kept_;
    v.top_k = moe_.top_k();
    v.max_nodes = moe_.max_nodes_per_token();
    v.deduplicated = deepep_;
    v.tokens = t_in_;
  }
  // Expert tensor parallelism over the TP group: what arrived is all-gathered before the experts
  // and their output reduce-scattered (sizes: their mean over EP ranks).
  void etp_comm(coll::Op op, std::string_view name) {
    if (gather_ == 1) return;
    comm(LayerComm{Dim::kTp, op}, name, static_cast<double>(gather_) * copies() * h_ * kBf16Bytes);
  }

  // Tokens expert x gets: every EP rank's (and, under ETP, every TP rank's) copies routed to it.
  int64_t expert_tokens(std::size_t x) const {
    return std::llround(static_cast<double>(ep_) * gather_ * t_in_ * moe_.top_k() * load_.kept[x]);
  }

  // The experts' activation on m tokens (SwiGLU: gate, up -> y; backward also dy -> dgate, dup).
  compute::Kernel activation(std::string_view name, int64_t m, bool backward) const {
    const double n = static_cast<double>(m) * static_cast<double>(ffn_shard_);
    const double tensors = swiglu_ ? (backward ? 5.0 : 3.0) : (backward ? 3.0 : 2.0);
    return compute::memory_bound(name, tensors * kBf16Bytes * n, (backward ? 12.0 : 8.0) * n,
                                 KernelGroup::kElementwise);
  }

  // One op of every local expert's kernel `make(tokens)`, each EP rank's experts its parts, run
  // as one grouped kernel per rank: as the grouped GEMM kernel runs it under
  // effects.moe_grouped_gemm, an ideal grouped GEMM when it is off.
  template <typename Make>
  void grouped(Make make) {
    LayerOp op;
    op.grouped =
        grouped_gemm_ ? compute::GroupedGemmModel::kKernel : compute::GroupedGemmModel::kIdeal;
    const std::size_t per_rank = load_.kept.size() / static_cast<std::size_t>(ep_);
    op.rank_parts.resize(static_cast<std::size_t>(ep_));
    for (auto& parts : op.rank_parts) parts.reserve(per_rank);
    int64_t tokens = 0;
    // Experts of equal loads (every one under BALANCED routing) share one kernel: made once.
    int64_t made_for = -1;
    compute::Kernel made;
    for (std::size_t x = 0; x < load_.kept.size(); ++x) {
      const int64_t m = expert_tokens(x);
      tokens += m;
      if (m <= 0) continue;
      if (m != made_for) {
        made = make(m);
        made_for = m;
      }
      op.rank_parts[x / per_rank].push_back(made);
    }
    op.kernel = make(std::max<int64_t>(tokens / ep_, 1));  // the mean rank's whole load
    op.precision = op.kernel.kind == compute::KernelKind::kGemm
                       ? compute::format_of(config_.precision()).gemm
                       : compute::Precision::kBf16;
    add(std::move(op));
  }

  // One op per GEMM or activation of the experts, with each EP rank's parts.
  void experts(Phase phase) {
    const int64_t up_n = (swiglu_ ? 2 : 1) * ffn_shard_;
    struct Shape {
      std::string_view name;
      int64_t n, k;
    };
    const Shape fc1{"", up_n, h_}, fc2{"", h_, ffn_shard_};
    auto gemm_of = [&](std::string_view name, const Shape& s, int64_t m) {
      switch (phase) {
        case Phase::kForward:
          return gemm_op(name, m, s.n, s.k, config_.precision()).kernel;
        case Phase::kBackward:
          return gemm_op(name, m, s.k, s.n, config_.precision()).kernel;
        default:
          return gemm_op(name, s.k, s.n, m, config_.precision()).kernel;
      }
    };
    auto act_of = [&](std::string_view name, int64_t m) {
      return activation(name, m, phase == Phase::kBackward);
    };
    switch (phase) {
      case Phase::kForward:
        grouped([&](int64_t m) { return gemm_of("moe_fc1_fwd", fc1, m); });
        grouped([&](int64_t m) { return act_of("moe_act_fwd", m); });
        grouped([&](int64_t m) { return gemm_of("moe_fc2_fwd", fc2, m); });
        break;
      case Phase::kBackward:
        grouped([&](int64_t m) { return gemm_of("moe_fc2_dgrad", fc2, m); });
        grouped([&](int64_t m) { return act_of("moe_act_bwd", m); });
        grouped([&](int64_t m) { return gemm_of("moe_fc1_dgrad", fc1, m); });
        break;
      case Phase::kWeightGrad:
        grouped([&](int64_t m) { return gemm_of("moe_fc2_wgrad", fc2, m); });
        grouped([&](int64_t m) { return gemm_of("moe_fc1_wgrad", fc1, m); });
        break;
    }
  }

  // Shared experts: a dense MLP split over TP like the model's own (under SP: all-gather in,
  // reduce-scatter out), over every token.
  void shared_experts(Phase phase) {
    const int64_t ffn = moe_.shared_expert_ffn_hidden_size() / tp_;
    if (ffn == 0) return;
    const int64_t up_n = (swiglu_ ? 2 : 1) * ffn;
    const double hidden = static_cast<double>(tokens_) * h_ * kBf16Bytes;
    auto tp = [&](coll::Op op, std::string_view name) {
      if (tp_ > 1) comm(LayerComm{Dim::kTp, sp_ ? op : coll::Op::kAllReduce}, name, hidden);
    };
    const double act = static_cast<double>(tokens_) * static_cast<double>(ffn);
    const auto p = config_.precision();
    switch (phase) {
      case Phase::kForward:
        if (sp_) tp(coll::Op::kAllGather, "shared_sp_ag");
        add(gemm_op("shared_up_fwd", tokens_, up_n, h_, p));
        memory("shared_act_fwd", (swiglu_ ? 3.0 : 2.0) * kBf16Bytes * act, 8.0 * act,
               KernelGroup::kElementwise);
        add(gemm_op("shared_down_fwd", tokens_, h_, ffn, p));
        tp(coll::Op::kReduceScatter, "shared_sp_rs");
        // The routed and shared outputs are summed.
        memory("shared_add_fwd", 3.0 * kBf16Bytes * static_cast<double>(t_in_) * h_, 0,
               KernelGroup::kElementwise);
        break;
      case Phase::kBackward:
        if (sp_) tp(coll::Op::kAllGather, "shared_sp_ag_bwd");
        add(gemm_op("shared_down_dgrad", tokens_, ffn, h_, p));
        memory("shared_act_bwd", (swiglu_ ? 5.0 : 3.0) * kBf16Bytes * act, 12.0 * act,
               KernelGroup::kElementwise);
        add(gemm_op("shared_up_dgrad", tokens_, h_, up_n, p));
        tp(coll::Op::kReduceScatter, "shared_sp_rs_bwd");
        break;
      case Phase::kWeightGrad:
        add(gemm_op("shared_down_wgrad", ffn, h_, tokens_, p));
        if (sp_) tp(coll::Op::kAllGather, "shared_sp_ag_wgrad");
        add(gemm_op("shared_up_wgrad", h_, up_n, tokens_, p));
        break;
    }
  }

  const clustersim::RunConfig& config_;
  const clustersim::MoeConfig& moe_;
  const ExpertLoad& load_;
  int64_t tp_ = 1, ep_ = 1, etp_ = 1, h_ = 0, tokens_ = 0, t_in_ = 0, gather_ = 1, ffn_shard_ = 0;
  double kept_ = 1;
  bool sp_ = false, swiglu_ = false, routing_kernels_ = true;
  bool fp8_dispatch_ = false, fp8_casts_ = true, grouped_gemm_ = true, deepep_ = false;
  std::vector<LayerOp> ops_;
};

}  // namespace

std::vector<LayerOp> moe_activation_recompute_ops(const clustersim::RunConfig& config,
                                                  const ExpertLoad& load) {
  MoeBuilder b(config, load);
  b.activation_recompute();
  return b.take();
}

std::vector<LayerOp> moe_block_ops(const clustersim::RunConfig& config, Phase phase,
                                   const ExpertLoad& load) {
  MoeBuilder b(config, load);
  switch (phase) {
    case Phase::kForward:
      b.forward();
      break;
    case Phase::kBackward:
      b.backward();
      break;
    case Phase::kWeightGrad:
      b.weight_grad();
      break;
  }
  return b.take();
}

}  // namespace cs::workload
