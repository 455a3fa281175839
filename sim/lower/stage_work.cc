#include "sim/lower/stage_work.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>

#include "sim/cost/host.h"
#include "sim/lower/op_maker.h"
#include "sim/lower/sharded_pass.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/memory.h"
#include "sim/workload/model_math.h"
#include "sim/workload/pipeline_schedule.h"
#include "sim/workload/stack.h"

namespace cs::lower {

namespace {

using workload::Dim;
using workload::LayerOp;
using workload::Op;
using workload::OpClass;
using workload::OpKind;
using workload::Phase;
using workload::PhaseOp;
using workload::PhaseOps;
using workload::Stream;

// A copy between GPU and host (or the host's optimizer step) of `seconds`: a compute-kind op, so
// that the executor times it without the network, on `stream`; labelled so timelines show it.
Op offload_op(OpMaker& make, Stream stream, double seconds, std::string_view name, Bytes bytes) {
  Op op;
  op.kind = OpKind::kCompute;
  op.stream = stream;
  op.op_class = stream == Stream::kCompute ? OpClass::kOptimizer : OpClass::kComm;
  op.duration = Time::from_seconds(seconds);
  op.bytes = bytes;
  op.label = make.label(name);
  return op;
}

// Parameters per all-gather bucket of the distributed optimizer's overlapped gather on model
// chunk `chunk` of pipeline stage `stage`. Megatron-Core buckets by bucket_size on the first
// stage's first chunk only: DistributedDataParallel.__init__ (megatron/core/distributed/
// distributed_data_parallel.py) sets bucket_size = None, one bucket, "if disable_bucketing or
// pp_rank > 0" ("data-parallel communication on these stages is not on the critical path"), and
// megatron/training/training.py wraps chunks after the first with disable_bucketing=
// (model_chunk_idx > 0); NeMo's "the granularity of DP communication becomes the Transformer
// layers per virtual pipeline stage" describes those others. The gathers are queued back to back
// on the DP stream at the step's start: the forward pre-hook's finish_param_sync
// (param_and_grad_buffer.py) waits for its bucket and dispatches next_param_gather_bucket_group,
// and that wait (torch.distributed Work.wait() on NCCL) holds the compute stream, not the CPU,
// which runs ahead through the next pre-hooks. So stage 0's first forward waits for its first
// bucket alone, and a later stage's single gather runs while the pipeline fills.
int64_t param_gather_bucket(const clustersim::ParallelConfig& par, int32_t stage, int32_t chunk) {
  return stage == 0 && chunk == 0 ? par.dp_bucket_params() : std::numeric_limits<int64_t>::max();
}

// How the run's stack reduces gradients in buckets (the GradSync path below; a stack's own ZeRO-3
// rules are sharded_pass.h's).
struct GradRule {
  int64_t bucket_params = 0;       // parameters per bucket
  bool all_reduce = false;         // all-reduced although ZeRO shards them (DeepSpeed stages 1-2)
  bool on_compute_stream = false;  // not overlapped: each bucket blocks the compute stream
};
GradRule grad_rule_of(const clustersim::RunConfig& config) {
  const auto& r = workload::stack_of(config).reduce();
  const bool below_zero3 = config.parallel().zero_stage() < 3;
  return {
      .bucket_params =
          r.has_bucket_params() ? r.bucket_params() : config.parallel().dp_bucket_params(),
      .all_reduce = r.collective() == clustersim::GradReduce::ALL_REDUCE_BELOW_ZERO3 && below_zero3,
      .on_compute_stream = r.overlap() == clustersim::GradReduce::OVERLAP_AT_ZERO3 && below_zero3};
}

}  // namespace

workload::StageWork build_stage_work(const clustersim::RunConfig& config, int32_t stage,
                                     const compute::KernelCostModel& cost, bool split_backward) {
  const auto& par = config.parallel();
  const int32_t p = par.pp(), v = par.virtual_stages();
  const workload::PipelineSchedule schedule = workload::pipeline_schedule_of(par);
  const int32_t dp = par.dp(), zero = par.zero_stage();
  const std::vector<int32_t> pieces = workload::layers_per_piece(config);
  const int64_t vocab_params = workload::padded_vocab(config.model(), par.tp()) *
                               int64_t{config.model().hidden_size()} / par.tp();
  // One dense layer on one tensor-parallel rank (ZeRO-3 gathers it; MoE layers are refused there).
  const int64_t per_layer = workload::count_params(config.model()).per_layer_on_tp_rank(par.tp());
  const bool gather_weights = zero == 3 && dp > 1;
  // A stack with its own ZeRO-3 units, prefetch and reductions builds its passes unit by unit.
  const bool sharded = gather_weights && workload::custom_sharding(workload::stack_of(config));
  using clustersim::OffloadConfig;
  const auto& offload = config.offload();
  const bool offload_optimizer = offload.optimizer() != OffloadConfig::NONE;
  const bool offload_params = offload.parameters() != OffloadConfig::NONE && zero == 3;
  const cost::HostFigures host = cost::host_figures(cost.profile(), offload);
  // ZeRO shards optimizer states (and, at stage 3, weights) over the DP group.
  const int64_t shard_div = zero >= 1 ? dp : 1;

  workload::StageWork work;
  OpMaker make(config, cost, work);
  // checkpoint_every_k_layers: before the backward of a run of k layers, the whole run's forward
  // is recomputed from its kept input (the attention core included, so it replaces SELECTIVE's).
  const int32_t every_k = par.checkpoint_every_k_layers();
  const bool segmented = every_k > 0 && par.recompute() != clustersim::ParallelConfig::FULL;
  clustersim::RunConfig full = config;
  full.mutable_parallel()->set_recompute(clustersim::ParallelConfig::FULL);
  // The ops of a layer: one list for every dense layer, one per MoE layer (its own routing).
  struct LayerWork {
    std::vector<LayerOp> fwd, bwd, wgrad, recompute, segment_recompute;
  };
  // The first and last layers Megatron-Core keeps in BF16 under a quantized precision.
  clustersim::RunConfig bf16 = config, bf16_full = full;
  bf16.set_precision(clustersim::BF16);
  bf16_full.set_precision(clustersim::BF16);
  const int32_t layers = config.model().num_layers();
  auto in_bf16 = [&](int32_t layer) {
    return config.precision() != clustersim::BF16 && layer < layers &&
           (layer < config.num_layers_at_start_in_bf16() ||
            layer >= layers - config.num_layers_at_end_in_bf16());
  };
  auto layer_work = [&](const workload::ExpertLoad* experts, bool high_precision) {
    const clustersim::RunConfig& c = high_precision ? bf16 : config;
    LayerWork w;
    w.fwd = workload::layer_ops(c, Phase::kForward, experts);
    w.bwd = workload::layer_ops(c, Phase::kBackward, experts);
    w.wgrad = workload::layer_ops(c, Phase::kWeightGrad, experts);
    w.recompute = workload::layer_recompute_ops(c, experts);
    if (segmented)
      w.segment_recompute =
          workload::layer_recompute_ops(high_precision ? bf16_full : full, experts);
    return w;
  };
  const LayerWork dense_layer = layer_work(nullptr, false);
  std::unordered_map<int32_t, LayerWork> own_layers;  // MoE layers and BF16 dense ones
  const workload::RoutingTable* routing_ptr = nullptr;
  std::optional<workload::RoutingTable> routing;
  if (config.model().has_moe()) routing.emplace(config);
  routing_ptr = routing ? &*routing : nullptr;
  for (const int32_t l : workload::stage_layers(config, stage)) {
    if (routing_ptr && workload::is_moe_layer(config.model(), l)) {
      const workload::ExpertLoad load = routing_ptr->load(l);
      own_layers.emplace(l, layer_work(&load, in_bf16(l)));
    } else if (in_bf16(l)) {
      own_layers.emplace(l, layer_work(nullptr, true));
    }
  }
  std::vector<int32_t> mtp_layers;  // the multi-token prediction blocks, after the head
  for (int32_t k = 0; k < config.model().mtp_layers(); ++k)
    mtp_layers.push_back(config.model().num_layers() + k);
  auto work_of = [&](int32_t layer) -> const LayerWork& {
    const auto it = own_layers.find(layer);
    return it == own_layers.end() ? dense_layer : it->second;
  };
  // Routed experts' gradients are reduced over their expert-data-parallel group (EP > 1).
  const bool expert_groups = par.ep() > 1;
  auto dense_params = [&](int32_t layer) {
    return expert_groups ? workload::layer_dense_params(config, layer)
                         : workload::layer_dense_params(config, layer) +
                               workload::layer_expert_params(config, layer);
  };
  const Bytes layer_weight_bytes = 2 * per_layer;  // bf16
  // Gradients are reduced in the type of their buffers: Megatron's fp32 main_grad
  // (--accumulate-allreduce-grads-in-fp32, grad_reduce_in_fp32=True in NeMo's recipes) or bf16,
  // or the software stack's reduce dtype (workload::main_grad_bytes).
  const Bytes grad_bytes = static_cast<Bytes>(workload::main_grad_bytes(config));
  const GradRule grad_rule = grad_rule_of(config);
  work.grad_sync_after_backward = !par.overlap_grad_reduce() || grad_rule.on_compute_stream;
  work.grad_sync_every_microbatch = workload::reduces_grads_every_microbatch(par);
  work.overlap_pairs = config.parallel().dualpipe_overlap();
  // Distributed optimizer: updated bf16 parameters are all-gathered in buckets (see
  // param_gather_bucket), each before the first forward op that uses them, as Megatron's
  // overlap_param_gather does under the next step's forward (unless the stack never overlaps it).
  const bool overlap_param_gather = (zero == 1 || zero == 2) && dp > 1 &&
                                    par.overlap_param_gather() &&
                                    workload::stack_of(config).param_sync().overlap_allowed();

  // ZeRO-3 / FSDP: a layer's weights are all-gathered on the DP stream before the layer runs.
  // The gather may start once the layer two places back has finished, so at most two layers'
  // gathered weights exist at once and the next layer's gather overlaps the current layer.
  // ZeRO-Infinity parameter offload: the layer's shard first comes over PCIe (NVMe reads go
  // through host DRAM at the node's NVMe bandwidth shared by its GPUs), on the same DP stream.
  auto gathered_layer = [&](PhaseOps& phase, const std::vector<LayerOp>& ops, OpClass cls,
                            std::vector<int32_t>& layer_ends) {
    int32_t also = PhaseOp::kNone;
    if (gather_weights || offload_params) {
      const int32_t after =
          layer_ends.size() >= 2 ? layer_ends[layer_ends.size() - 2] : PhaseOp::kItemStart;
      if (offload_params) {
        const Bytes shard = layer_weight_bytes / dp;
        double seconds = static_cast<double>(shard) / host.pcie_bytes_per_s;
        if (offload.parameters() == OffloadConfig::NVME)
          seconds += static_cast<double>(shard) / (host.nvme_bytes_per_s / host.gpus_per_node);
        phase.add(offload_op(make, Stream::kDp, seconds, "offload_param_h2d", shard), after);
        also = static_cast<int32_t>(phase.ops.size()) - 1;
      }
    }
    if (gather_weights) {
      const int32_t after = offload_params           ? PhaseOp::kPrevious
                            : layer_ends.size() >= 2 ? layer_ends[layer_ends.size() - 2]
                                                     : PhaseOp::kItemStart;
      phase.add(make.collective(coll::Op::kAllGather, Dim::kDp, layer_weight_bytes,
                                "zero3_weight_gather"),
                after);
      also = static_cast<int32_t>(phase.ops.size()) - 1;
    }
    make.append(phase, ops, cls, also);
    layer_ends.push_back(static_cast<int32_t>(phase.ops.size()) - 1);
  };

  for (int32_t c = 0; c < v; ++c) {
    const int32_t piece = workload::model_piece(schedule, stage, c, p);
    const bool first = piece == 0, last = piece == workload::model_pieces(schedule, p, v) - 1;
    const int32_t layers = pieces[static_cast<std::size_t>(piece)];
    int32_t first_layer = 0;  // of this piece, in model order
    for (int32_t q = 0; q < piece; ++q) first_layer += pieces[static_cast<std::size_t>(q)];
    workload::ChunkWork chunk;
    // Activations between stages: microbatch x tokens x hidden in bf16, per TP rank (sharded
    // by sequence parallelism or, without it, replicated on every TP rank).
    const int64_t tokens = int64_t{par.microbatch_size()} * config.model().seq_length() / par.cp();
    chunk.activation_bytes =
        2 * tokens * config.model().hidden_size() / (par.sequence_parallel() ? par.tp() : 1);
    if (sharded) {
      build_sharded_chunk(
          config, make,
          {dense_layer.fwd, dense_layer.bwd, dense_layer.wgrad, dense_layer.recompute}, layers,
          chunk);
      work.chunks.push_back(std::move(chunk));
      continue;
    }

    std::vector<int32_t> ends;
    const int64_t gather_bucket_params = param_gather_bucket(par, stage, c);
    int64_t gather_params = 0;
    uint32_t gather_before = 0;
    // `params` are used from forward op `first_op` on; a full bucket (or the last) is gathered.
    auto params_used = [&](int64_t params, std::size_t first_op, bool flush = false) {
      if (!overlap_param_gather) return;
      if (gather_params == 0) gather_before = static_cast<uint32_t>(first_op);
      gather_params += params;
      if (gather_params == 0 || (!flush && gather_params < gather_bucket_params)) return;
      chunk.param_gather.push_back(
          {std::min(gather_before, static_cast<uint32_t>(chunk.forward.ops.size() - 1)),
           make.collective(coll::Op::kAllGather, Dim::kDp, 2 * gather_params,
                           "zero_param_all_gather")});
      gather_params = 0;
    };
    if (first) {
      const std::size_t at = chunk.forward.ops.size();
      make.append(chunk.forward, workload::embedding_ops(config, Phase::kForward),
                  OpClass::kForward);
      params_used(vocab_params, at);
    }
    for (int32_t l = 0; l < layers; ++l) {
      make.layer = first_layer + l;
      const std::size_t at = chunk.forward.ops.size();
      gathered_layer(chunk.forward, work_of(make.layer).fwd, OpClass::kForward, ends);
      params_used(dense_params(make.layer), at);
    }
    make.layer = -1;
    if (last) {
      const std::size_t at = chunk.forward.ops.size();
      make.append(chunk.forward, workload::head_ops(config, Phase::kForward), OpClass::kForward);
      params_used(vocab_params + config.model().hidden_size(), at);
      // Multi-token prediction: each module's entry, block and the shared head again.
      for (const int32_t l : mtp_layers) {
        const std::size_t mtp_at = chunk.forward.ops.size();
        make.layer = l;
        make.append(chunk.forward, workload::mtp_entry_ops(config, Phase::kForward),
                    OpClass::kForward);
        make.append(chunk.forward, work_of(l).fwd, OpClass::kForward);
        make.layer = -1;
        make.append(chunk.forward, workload::head_ops(config, Phase::kForward), OpClass::kForward);
        params_used(dense_params(l), mtp_at);
      }
    }
    params_used(0, chunk.forward.ops.size(), true);

    // Backward, layers in reverse. Gradients become ready layer by layer; buckets of at least
    // dp_bucket_params parameters are reduced as soon as they fill (Megatron's overlap).
    PhaseOps& grads_phase = split_backward ? chunk.weight_grad : chunk.backward;
    int64_t bucket = 0;
    auto grads_ready = [&](int64_t params, bool flush = false) {
      bucket += params;
      if (bucket == 0 || (!flush && bucket < grad_rule.bucket_params)) return;
      const auto after = static_cast<uint32_t>(grads_phase.ops.size() - 1);
      const Bytes bytes = grad_bytes * bucket;
      auto stack_rows = [&](clustersim::StackKernel::Slot slot) {
        const auto n = static_cast<double>(bucket);
        for (const LayerOp& lop : workload::stack_kernel_ops(config, slot, n, n / dp)) {
          Op op;
          make.to_op(lop, lop.dp_stream ? OpClass::kComm : OpClass::kBackward, op);
          chunk.grad_sync.push_back({after, op});
        }
      };
      if (dp == 1 && par.cp() == 1) {
        if (offload_optimizer) {
          chunk.grad_sync.push_back(
              {after,
               offload_op(make, Stream::kDp, static_cast<double>(bytes) / host.pcie_bytes_per_s,
                          "offload_grad_d2h", bytes)});
        }
        bucket = 0;
        return;
      }
      if (dp > 1) {
        stack_rows(clustersim::StackKernel::REDUCE_PROLOGUE);
        const bool all_reduce = zero == 0 || grad_rule.all_reduce;
        Op reduce =
            make.collective(all_reduce ? coll::Op::kAllReduce : coll::Op::kReduceScatter, Dim::kDp,
                            bytes, all_reduce ? "dp_grad_all_reduce" : "dp_grad_reduce_scatter");
        if (grad_rule.on_compute_stream) reduce.stream = Stream::kCompute;
        chunk.grad_sync.push_back({after, reduce});
        stack_rows(clustersim::StackKernel::REDUCE_EPILOGUE);
      }
      if (par.cp() > 1) {
        // Context-parallel ranks hold the same weights but saw different tokens: their
        // gradients are summed too. Megatron reduces over one DP x CP group; here the DP
        // reduction is followed, on the same stream, by an all-reduce over CP of what it left
        // on this rank (the whole bucket, or its shard under ZeRO), which sums the same terms.
        Op cp_sum =
            make.collective(coll::Op::kAllReduce, Dim::kCp,
                            zero == 0 || dp == 1 ? bytes : bytes / dp, "cp_grad_all_reduce");
        cp_sum.stream = Stream::kDp;
        chunk.grad_sync.push_back({after, cp_sum});
      }
      bucket = 0;
      if (offload_optimizer) {
        // ZeRO-Offload: the reduced bucket (this rank's shard of it) goes to the host as soon as
        // it is ready, overlapping the rest of the backward (Ren et al. 2021, section 4.1).
        const Bytes shard = bytes / shard_div;
        chunk.grad_sync.push_back(
            {static_cast<uint32_t>(grads_phase.ops.size() - 1),
             offload_op(make, Stream::kDp, static_cast<double>(shard) / host.pcie_bytes_per_s,
                        "offload_grad_d2h", shard)});
      }
    };
    // Expert gradients: buckets of their own, reduced over EDP as they fill.
    int64_t expert_bucket = 0;
    auto expert_grads_ready = [&](int64_t params, bool flush = false) {
      expert_bucket += params;
      if (expert_bucket == 0 || (!flush && expert_bucket < par.dp_bucket_params())) return;
      const auto after = static_cast<uint32_t>(grads_phase.ops.size() - 1);
      const coll::Op kind = zero == 0 ? coll::Op::kAllReduce : coll::Op::kReduceScatter;
      chunk.grad_sync.push_back(
          {after, make.collective(kind, Dim::kEdp, grad_bytes * expert_bucket,
                                  zero == 0 ? "edp_grad_all_reduce" : "edp_grad_reduce_scatter")});
      expert_bucket = 0;
    };
    if (last) {
      // The modules' backward, last first, before the main head's: their losses reach the main
      // model's last hidden state through their entries.
      for (auto it = mtp_layers.rbegin(); it != mtp_layers.rend(); ++it) {
        const int32_t l = *it;
        const LayerWork& lw = work_of(l);
        const OpClass w_class = split_backward ? OpClass::kWeightGrad : OpClass::kBackward;
        make.append(chunk.backward, workload::head_ops(config, Phase::kBackward),
                    OpClass::kBackward);
        make.append(grads_phase, workload::head_ops(config, Phase::kWeightGrad), w_class);
        make.layer = l;
        if (!lw.recompute.empty()) make.append(chunk.backward, lw.recompute, OpClass::kRecompute);
        make.append(chunk.backward, lw.bwd, OpClass::kBackward);
        make.append(grads_phase, lw.wgrad, w_class);
        make.append(chunk.backward, workload::mtp_entry_ops(config, Phase::kBackward),
                    OpClass::kBackward);
        make.append(grads_phase, workload::mtp_entry_ops(config, Phase::kWeightGrad), w_class);
        make.layer = -1;
        grads_ready(dense_params(l));
        if (expert_groups) expert_grads_ready(workload::layer_expert_params(config, l));
      }
      make.append(chunk.backward, workload::head_ops(config, Phase::kBackward), OpClass::kBackward);
      make.append(grads_phase, workload::head_ops(config, Phase::kWeightGrad),
                  split_backward ? OpClass::kWeightGrad : OpClass::kBackward);
      grads_ready(vocab_params + config.model().hidden_size());
    }
    std::vector<int32_t> bwd_ends;
    for (int32_t l = 0; l < layers; ++l) {
      // Backward runs layers in reverse: layer `layers-1-l` in forward order. A run of k starts
      // its backward at its last layer, where the run is recomputed.
      const int32_t fwd_index = layers - 1 - l;
      make.layer = first_layer + fwd_index;
      const LayerWork& lw = work_of(make.layer);
      if (segmented) {
        if (fwd_index == layers - 1 || (fwd_index + 1) % every_k == 0) {
          const int32_t run_len = fwd_index % every_k + 1;
          for (int32_t r = 0; r < run_len; ++r)
            make.append(chunk.backward, work_of(make.layer - r).segment_recompute,
                        OpClass::kRecompute);
        }
      } else if (!lw.recompute.empty()) {
        make.append(chunk.backward, lw.recompute, OpClass::kRecompute);
      }
      gathered_layer(chunk.backward, lw.bwd, OpClass::kBackward, bwd_ends);
      make.append(grads_phase, lw.wgrad,
                  split_backward ? OpClass::kWeightGrad : OpClass::kBackward);
      const int32_t layer = make.layer;
      make.layer = -1;  // gradient buckets span layers
      grads_ready(dense_params(layer));
      if (expert_groups) expert_grads_ready(workload::layer_expert_params(config, layer));
    }
    if (first) {
      make.append(chunk.backward, workload::embedding_ops(config, Phase::kBackward),
                  OpClass::kBackward);
      make.append(grads_phase, workload::embedding_ops(config, Phase::kWeightGrad),
                  split_backward ? OpClass::kWeightGrad : OpClass::kBackward);
      grads_ready(vocab_params);
    }
    grads_ready(0, true);  // the last, partly filled bucket
    if (expert_groups) expert_grads_ready(0, true);
    work.chunks.push_back(std::move(chunk));
  }

  // The optimizer updates this GPU's shard; ZeRO 1 and 2 then all-gather the updated weights.
  const int64_t params = workload::stage_params(config, stage);
  // Routed experts shard over EDP (Megatron-Core's expert distributed optimizer).
  const int64_t expert_params = expert_groups ? workload::stage_expert_params(config, stage) : 0;
  const int64_t edp = workload::dim_sizes(par)[static_cast<std::size_t>(Dim::kEdp)];
  const int64_t shard = zero >= 1 ? (params - expert_params) / dp + expert_params / edp : params;
  if (offload_optimizer) {
    // CPU Adam on the host's copy, then the updated bf16 shard back over PCIe.
    const double cpu_s = cost::cpu_adam_seconds(host, static_cast<double>(shard),
                                                offload.optimizer() == OffloadConfig::NVME);
    work.optimizer.push_back(offload_op(make, Stream::kCompute, cpu_s, "cpu_adam", 0));
    if (!offload_params) {
      const Bytes back = 2 * shard;
      work.after_optimizer.push_back(offload_op(make, Stream::kDp,
                                                static_cast<double>(back) / host.pcie_bytes_per_s,
                                                "offload_param_h2d", back));
    }
  } else {
    int64_t layer_weights = 0;  // FP8 runs cast this stage's layer weights once per step
    for (const int32_t l : workload::stage_layers(config, stage))
      if (!in_bf16(l))
        layer_weights +=
            workload::layer_dense_params(config, l) + workload::layer_expert_params(config, l);
    // Gradient buffers are whole on each GPU unless ZeRO 2 or 3 reduce-scatters every
    // microbatch into a shard (reducing once per step accumulates them whole first).
    const int64_t grad_buffer = work.grad_sync_every_microbatch ? shard : params;
    for (const LayerOp& lop : workload::optimizer_ops(config, shard, layer_weights, grad_buffer))
      work.optimizer.push_back(make.kernel(lop, OpClass::kOptimizer));
    if ((zero == 1 || zero == 2) && dp > 1) {
      const auto n = static_cast<double>(shard);
      for (const LayerOp& lop :
           workload::stack_kernel_ops(config, clustersim::StackKernel::PARAM_SYNC_PROLOGUE, n, n))
        work.optimizer.push_back(make.kernel(lop, OpClass::kOptimizer));
    }
  }
  if ((zero == 1 || zero == 2) && dp > 1 && !overlap_param_gather) {
    work.after_optimizer.push_back(make.collective(
        coll::Op::kAllGather, Dim::kDp, 2 * (params - expert_params), "zero_param_all_gather"));
  }
  if ((zero == 1 || zero == 2) && expert_params > 0 && edp > 1) {
    work.after_optimizer.push_back(make.collective(coll::Op::kAllGather, Dim::kEdp,
                                                   2 * expert_params, "edp_param_all_gather"));
  }
  return work;
}

StageCosts phase_costs(const workload::StageWork& work) {
  StageCosts c;
  auto sum = [](const PhaseOps& phase) {
    double s = 0;
    for (const auto& e : phase.ops)
      if (e.op.kind == OpKind::kCompute) s += e.op.duration.as_seconds();
    return s;
  };
  const auto& chunk = work.chunks.front();
  c.t_f = sum(chunk.forward);
  c.t_b = sum(chunk.backward);
  c.t_w = sum(chunk.weight_grad);
  return c;
}

}  // namespace cs::lower
