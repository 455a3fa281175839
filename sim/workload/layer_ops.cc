#include "sim/workload/layer_ops.h"

#include <algorithm>

#include "sim/workload/layer_builder.h"

namespace cs::workload {

using compute::KernelGroup;
using layer_detail::Builder;
using layer_detail::kActBytes;
using layer_detail::kAdamStateBytes;
using layer_detail::kFp32Bytes;
using layer_detail::kMaskBytes;
using layer_detail::Slot;

namespace {

// The MLP's first GEMM in `phase`: one of n = (2 for SwiGLU)·ffn/tp (Megatron's linear_fc1), or
// the gate and up GEMMs apart (StackProfile.fused_gate_up), whose input gradients autograd then
// sums (slot MLP_INPUT_GRAD).
void up_gemms(Builder& b, Phase phase) {
  const int64_t T = b.tokens_, h = b.h_, shard = b.ffn_ / b.t_;
  if (b.stack_.fused_gate_up() || !b.swiglu_) {
    b.gemm_phase(phase, "mlp_up_fwd", "mlp_up_dgrad", "mlp_up_wgrad", T,
                 (b.swiglu_ ? 2 : 1) * shard, h);
    return;
  }
  b.gemm_phase(phase, "mlp_gate_fwd", "mlp_gate_dgrad", "mlp_gate_wgrad", T, shard, h);
  b.gemm_phase(phase, "mlp_up_fwd", "mlp_up_dgrad", "mlp_up_wgrad", T, shard, h);
  if (phase == Phase::kBackward) b.stack_rows(clustersim::StackKernel::MLP_INPUT_GRAD);
}

}  // namespace

double main_grad_bytes(const clustersim::RunConfig& config) {
  switch (stack_of(config).reduce().dtype()) {
    case clustersim::GradReduce::FP32:
      return kFp32Bytes;
    case clustersim::GradReduce::BF16:
      return kActBytes;
    case clustersim::GradReduce::DTYPE_AS_CONFIGURED:
      break;
  }
  return config.parallel().grad_reduce_dtype() == clustersim::ParallelConfig::GRAD_FP32 ? kFp32Bytes
                                                                                        : kActBytes;
}

double gemm_input_bytes(clustersim::Precision precision) {
  return compute::stored_bytes_per_element(precision);
}

LayerOp gemm_op(std::string_view name, int64_t m, int64_t n, int64_t k,
                clustersim::Precision precision, int64_t batch) {
  const double e = gemm_input_bytes(precision);
  LayerOp op;
  op.kernel = compute::gemm(name, m, n, k, e, batch);
  op.kernel.group = KernelGroup::kGemm;
  if (e != kActBytes) {
    op.kernel.bytes =
        e * static_cast<double>(m * k + k * n) + kActBytes * static_cast<double>(m * n);
  }
  op.precision = compute::format_of(precision).gemm;
  return op;
}

std::vector<LayerOp> layer_ops(const clustersim::RunConfig& config, Phase phase,
                               const ExpertLoad* experts) {
  Builder b(config);
  const int64_t T = b.tokens_, h = b.h_, t = b.t_;
  const int64_t up_n = (b.swiglu_ ? 2 : 1) * b.ffn_ / t;
  const int64_t ffn_shard = b.ffn_ / t;
  const bool fp8 = b.fp8_casts_;
  switch (phase) {
    case Phase::kForward:
      // MLA's input norm is its own TENorm (two linears read it), so it writes bf16.
      b.norm("ln1_fwd", false, !config.model().has_mla());
      layer_detail::attention_block(b, phase);
      b.leave_tp_forward("attn_ar", "attn_sp_rs");
      b.residual_fwd("attn_residual_fwd");
      b.norm("ln2_fwd", false);
      if (experts) {
        b.append(moe_block_ops(config, phase, *experts));
      } else {
        b.enter_tp_forward("mlp_sp_ag");
        up_gemms(b, phase);
        b.activation("mlp_act_fwd", false);
        if (fp8) b.fp8_cast_transpose("mlp_down_input_fp8_cast", b.token_elements(ffn_shard));
        b.gemm_phase(phase, "mlp_down_fwd", "", "", T, h, ffn_shard);
        b.leave_tp_forward("mlp_ar", "mlp_sp_rs");
      }
      b.residual_fwd("mlp_residual_fwd");
      break;
    case Phase::kBackward:
      b.dropout_bwd("mlp_dropout_bwd", b.norm_elements());
      if (experts) {
        b.append(moe_block_ops(config, phase, *experts));
      } else {
        b.leave_tp_backward("mlp_sp_ag_bwd");
        if (fp8) b.fp8_cast_transpose("mlp_down_dgrad_fp8_cast", b.token_elements(h));
        b.gemm_phase(phase, "", "mlp_down_dgrad", "", T, h, ffn_shard);
        b.activation("mlp_act_bwd", true);
        if (fp8) b.fp8_cast_transpose("mlp_up_dgrad_fp8_cast", b.token_elements(up_n));
        up_gemms(b, phase);
        b.enter_tp_backward("mlp_ar_bwd", "mlp_sp_rs_bwd");
      }
      b.norm("ln2_bwd", true);
      b.residual_grad_sum("mlp_residual_grad_sum");
      b.dropout_bwd("attn_dropout_bwd", b.norm_elements());
      b.leave_tp_backward("attn_sp_ag_bwd");
      layer_detail::attention_block(b, phase);
      b.norm("ln1_bwd", true);
      b.residual_grad_sum("attn_residual_grad_sum");
      break;
    case Phase::kWeightGrad:
      if (experts) {
        b.append(moe_block_ops(config, phase, *experts));
      } else {
        b.bias_grad("mlp_down_bias_grad", h);
        b.gemm_phase(phase, "", "", "mlp_down_wgrad", T, h, ffn_shard);
        b.enter_tp_forward("mlp_sp_ag_wgrad");
        b.bias_grad("mlp_up_bias_grad", up_n);
        if (fp8) b.fp8_transpose("mlp_up_wgrad_fp8_transpose", b.token_elements(h));
        up_gemms(b, phase);
      }
      b.bias_grad("proj_bias_grad", h);
      layer_detail::attention_block(b, phase);
      break;
  }
  return b.take();
}

namespace {

// torchtitan's op-level SAC policy (torchtitan/distributed/activation_checkpoint.py,
// _apply_op_sac: _save_list of aten.mm, the SDPA kernels and reduce_scatter_tensor, "save every
// other mm"): the forward again without the fused attention and without the odd-numbered GEMMs
// (1st, 3rd, ...), whose outputs were kept.
std::vector<LayerOp> op_sac_recompute(const clustersim::RunConfig& config,
                                      const ExpertLoad* experts) {
  std::vector<LayerOp> ops;
  int32_t gemms = 0;
  for (LayerOp& op : layer_ops(config, Phase::kForward, experts)) {
    if (op.is_comm || op.kernel.kind == compute::KernelKind::kAttention) continue;
    if (op.kernel.kind == compute::KernelKind::kGemm && ++gemms % 2 == 1) continue;
    ops.push_back(std::move(op));
  }
  return ops;
}

}  // namespace

std::vector<LayerOp> layer_recompute_ops(const clustersim::RunConfig& config,
                                         const ExpertLoad* experts) {
  using clustersim::ParallelConfig;
  const auto& p = config.parallel();
  if (p.recompute() == ParallelConfig::FULL) return layer_ops(config, Phase::kForward, experts);
  if (p.recompute() == ParallelConfig::OP_SELECTIVE) return op_sac_recompute(config, experts);
  Builder b(config);
  if (p.recompute() == ParallelConfig::SELECTIVE) b.attention("attn_recompute", false);
  // Output-discarding recomputation (recompute_modules): the dropped outputs again.
  const bool mla = config.model().has_mla();
  if (recomputes(p, ParallelConfig::LAYERNORM)) {
    b.norm("ln1_recompute", false, !mla);
    b.norm("ln2_recompute", false);
  }
  if (mla && recomputes(p, ParallelConfig::MLA_UP_PROJ))
    layer_detail::recompute_mla_up_projections(b);
  if (experts && recomputes(p, ParallelConfig::MOE_ACT))
    b.append(moe_activation_recompute_ops(config, *experts));
  return b.take();
}

std::vector<LayerOp> embedding_ops(const clustersim::RunConfig& config, Phase phase) {
  Builder b(config);
  const double n = b.token_elements(b.h_);
  const bool learned = config.model().position_embedding() == clustersim::ModelConfig::LEARNED;
  switch (phase) {
    case Phase::kForward:
      // Each vocabulary shard reads its rows and writes a full (partly zero) output.
      b.memory("embedding_fwd", 2.0 * kActBytes * n, 0, KernelGroup::kLoss);
      b.leave_tp_forward("embedding_ar", "embedding_sp_rs");
      // Learned absolute positions: gather the position rows and add them (read both, write).
      if (learned) b.memory("position_embedding_fwd", 3.0 * kActBytes * n, n, KernelGroup::kLoss);
      // Megatron's embedding_dropout (hidden_dropout) on the sequence-parallel shard.
      if (b.hidden_dropout_) {
        b.memory("embedding_dropout_fwd", (2.0 * kActBytes + kMaskBytes) * b.norm_elements(),
                 b.norm_elements(), KernelGroup::kElementwise);
      }
      break;
    case Phase::kBackward:
      b.dropout_bwd("embedding_dropout_bwd", b.norm_elements());
      b.leave_tp_backward("embedding_sp_ag_bwd");
      break;
    case Phase::kWeightGrad: {
      // PyTorch's embedding backward returns a dense gradient of the whole vocabulary shard
      // (embedding_backward_cuda_kernel: at::zeros({num_weights, dim}) in the gradient's bf16,
      // then the tokens' rows); Megatron's DDP hook then adds it into the main_grad buffer
      // (param.main_grad.add_(param.grad.data)): every row, each microbatch.
      const double rows = static_cast<double>(b.vocab_shard_) * static_cast<double>(b.h_);
      b.memory("embedding_grad_zero", kActBytes * rows, 0, KernelGroup::kEmbeddingGrad);
      // Read the gradient rows, read-modify-write the embedding gradient rows.
      b.memory("embedding_wgrad", 3.0 * kActBytes * n, n, KernelGroup::kLoss);
      if (learned) b.memory("position_embedding_wgrad", 3.0 * kActBytes * n, n, KernelGroup::kLoss);
      const double main_grad = main_grad_bytes(config);
      if (b.stack_.ddp_grad_buffer()) {
        b.memory("embedding_main_grad_add", (kActBytes + 2.0 * main_grad) * rows, rows,
                 KernelGroup::kEmbeddingGrad);
      }
      break;
    }
  }
  return b.take();
}

std::vector<LayerOp> head_ops(const clustersim::RunConfig& config, Phase phase) {
  Builder b(config);
  const int64_t T = b.tokens_, h = b.h_, v = b.vocab_shard_;
  const double logits = static_cast<double>(T) * static_cast<double>(v);
  const KernelGroup loss = KernelGroup::kLoss;
  switch (phase) {
    case Phase::kForward:
      b.norm("final_norm_fwd", false, false);
      b.enter_tp_forward("head_sp_ag");
      b.gemm_phase(phase, "logits_fwd", "", "", T, v, h, false);
      if (b.replaces(clustersim::StackKernel::LOSS_FORWARD)) {
        b.stack_rows(clustersim::StackKernel::LOSS_FORWARD);
        break;  // the stacks with their own loss run without TP (no vocabulary-parallel loss)
      }
      // Megatron-Core's VocabParallelCrossEntropy (unfused, the default without
      // --cross-entropy-loss-fusion), one kernel per tensor op over this GPU's vocabulary shard:
      // cast the bf16 logits to fp32; max; subtract the (all-reduced) max in place; exp in place;
      // sum; divide by the (all-reduced) sum in place, which keeps the fp32 softmax for backward.
      b.memory("cross_entropy_cast_fwd", (kActBytes + kFp32Bytes) * logits, logits, loss);
      b.memory("cross_entropy_max_fwd", kFp32Bytes * logits, logits, loss);
      if (b.t_ > 1)
        b.comm(LayerComm{Dim::kTp, coll::Op::kAllReduce}, "loss_ar",
               3.0 * 4.0 * static_cast<double>(T));
      b.memory("cross_entropy_sub_fwd", 2.0 * kFp32Bytes * logits, logits, loss);
      b.memory("cross_entropy_exp_fwd", 2.0 * kFp32Bytes * logits, logits, loss);
      b.memory("cross_entropy_sum_fwd", kFp32Bytes * logits, logits, loss);
      b.memory("cross_entropy_div_fwd", 2.0 * kFp32Bytes * logits, logits, loss);
      break;
    case Phase::kBackward:
      // The gradient is the saved softmax minus the one-hot target, scaled in place by the loss
      // gradient (read and write fp32), then cast back to bf16 for the logits dgrad GEMM.
      if (b.replaces(clustersim::StackKernel::LOSS_BACKWARD)) {
        b.stack_rows(clustersim::StackKernel::LOSS_BACKWARD);
      } else {
        b.memory("cross_entropy_scale_bwd", 2.0 * kFp32Bytes * logits, logits, loss);
        b.memory("cross_entropy_cast_bwd", (kFp32Bytes + kActBytes) * logits, 0, loss);
      }
      b.gemm_phase(phase, "", "logits_dgrad", "", T, v, h, false);
      b.enter_tp_backward("head_ar_bwd", "head_sp_rs_bwd");
      b.norm("final_norm_bwd", true);
      break;
    case Phase::kWeightGrad:
      b.enter_tp_forward("head_sp_ag_wgrad");
      b.gemm_phase(phase, "", "", "logits_wgrad", T, v, h, false);
      break;
  }
  return b.take();
}

std::vector<LayerOp> mtp_entry_ops(const clustersim::RunConfig& config, Phase phase) {
  Builder b(config);
  const int64_t T = b.tokens_, h = b.h_;
  const double n = b.norm_elements();
  const double wide = 2.0 * b.hidden_bytes();  // the concatenation [norm(h); norm(emb)], 2h wide
  const LayerComm gather{Dim::kTp, coll::Op::kAllGather};
  switch (phase) {
    case Phase::kForward:
      b.append(embedding_ops(config, phase));
      b.norm("mtp_hnorm_fwd", false, false);
      b.norm("mtp_enorm_fwd", false, false);
      if (b.sp_) b.comm(gather, "mtp_proj_sp_ag", wide);
      b.gemm_phase(phase, "mtp_proj_fwd", "", "", T, h / b.t_, 2 * h);
      // Megatron-Core gathers the column-parallel output over TP, then keeps its sequence shard.
      b.tp_comm(gather, "mtp_proj_out_ag");
      break;
    case Phase::kBackward:
      // The sequence shard's gradient is gathered back (the TP gather's backward is a split).
      if (b.sp_) b.tp_comm(gather, "mtp_proj_out_sp_ag_bwd");
      b.gemm_phase(phase, "", "mtp_proj_dgrad", "", T, h / b.t_, 2 * h);
      if (b.t_ > 1) {
        b.comm(b.sp_ ? LayerComm{Dim::kTp, coll::Op::kReduceScatter}
                     : LayerComm{Dim::kTp, coll::Op::kAllReduce},
               b.sp_ ? "mtp_proj_sp_rs_bwd" : "mtp_proj_ar_bwd", wide);
      }
      b.norm("mtp_hnorm_bwd", true);
      b.norm("mtp_enorm_bwd", true);
      // The main model's last hidden state gets the module's gradient on top of the head's.
      b.memory("mtp_hidden_grad_sum", 3.0 * kActBytes * n, n, KernelGroup::kElementwise);
      b.append(embedding_ops(config, phase));
      break;
    case Phase::kWeightGrad:
      if (b.sp_) b.comm(gather, "mtp_proj_sp_ag_wgrad", wide);
      b.gemm_phase(phase, "", "", "mtp_proj_wgrad", T, h / b.t_, 2 * h);
      b.append(embedding_ops(config, phase));
      break;
  }
  return b.take();
}

std::vector<LayerOp> stack_kernel_ops(const clustersim::RunConfig& config, Slot slot,
                                      double unit_params, double shard_params) {
  Builder b(config);
  b.stack_rows(slot, unit_params, shard_params);
  return b.take();
}

std::vector<LayerOp> optimizer_ops(const clustersim::RunConfig& config, int64_t shard_params,
                                   int64_t fp8_weight_params, int64_t grad_buffer_params) {
  Builder b(config);
  const double n = static_cast<double>(shard_params);
  const double grad_bytes = main_grad_bytes(config);
  // Megatron DDP (megatron/core/distributed/param_and_grad_buffer.py): before the data-parallel
  // reduction each bucket's grad_data.norm(p=2) is checked for NaN (check_grads, under the
  // default --check-for-nan-in-loss-and-grad), and before the next step's first microbatch
  // zero_grad_buffer() zeroes the whole buffer (reset: grad_data.zero_()).
  const double buffer = static_cast<double>(grad_buffer_params);
  b.memory("grad_buffer_nan_check", grad_bytes * buffer, 2.0 * buffer, KernelGroup::kGradBuffer);
  b.memory("grad_buffer_zero", grad_bytes * buffer, 0, KernelGroup::kGradBuffer);
  // Megatron's clip_grad_norm_fp32: a multi-tensor L2 norm over this GPU's gradient shard
  // (multi_tensor_applier(multi_tensor_l2norm)). (The scalar's all-reduce over the model-parallel
  // and data-parallel groups is a few bytes and not simulated; the scaling by the clip
  // coefficient runs only on steps whose norm exceeds the threshold.) A stack's own norm kernels
  // instead where its profile lists them.
  if (b.replaces(clustersim::StackKernel::GRAD_NORM)) {
    b.stack_rows(clustersim::StackKernel::GRAD_NORM, 0, n);
  } else {
    b.memory("grad_norm", grad_bytes * n, 2.0 * n, KernelGroup::kGradNorm, /*multi_tensor=*/true);
  }
  // Reads states and gradient, writes the states and the bf16 weight: Transformer Engine's or
  // Apex's FusedAdam, a multi_tensor_adam launch per few hundred chunks. A stack's own optimizer
  // kernels instead where its profile lists them.
  if (b.replaces(clustersim::StackKernel::OPTIMIZER)) {
    b.stack_rows(clustersim::StackKernel::OPTIMIZER, 0, n);
  } else {
    b.memory("adam_step", (kAdamStateBytes + grad_bytes + kAdamStateBytes + kActBytes) * n,
             12.0 * n, KernelGroup::kOptimizer, /*multi_tensor=*/true);
  }
  if (b.fp8_casts_ && fp8_weight_params > 0) {
    // Transformer Engine casts each updated weight to FP8 (and its transpose for dgrad) once per
    // step, on the first microbatch, and reuses it for the others (is_first_microbatch); the
    // delayed-scaling recipe then rolls the amax history and recomputes every scale in one
    // fused kernel (amax_and_scale_update) over a few floats per FP8 tensor.
    b.fp8_cast_transpose("fp8_weight_cast", static_cast<double>(fp8_weight_params));
    b.memory("fp8_scale_update", 0, 0, KernelGroup::kFp8Cast);
  }
  return b.take();
}

}  // namespace cs::workload
