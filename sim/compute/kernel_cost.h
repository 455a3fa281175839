// Times one GPU kernel on one GPU profile: a roofline with shape-dependent efficiency, or a
// measured time from the profile's table when one matches.
#pragma once

#include <span>
#include <vector>

#include "proto/config.pb.h"
#include "sim/compute/gpu_profile.h"
#include "sim/compute/kernel.h"
#include "sim/core/units.h"

namespace cs::compute {

struct KernelCostOptions {
  // Run attention forward in FP8 when the precision is FP8 and the profile has FP8 attention
  // figures (FlashAttention-3 FP8). Off by default because the common FP8 training recipe
  // (Transformer Engine) keeps attention in BF16 and quantizes only the GEMMs.
  bool fp8_attention = false;
  // Run GEMM and attention at the sustained clock under the power limit (gpu.proto ClockModel);
  // off: at the clock the datasheet peak is quoted at.
  bool sustained_clocks = true;
  // Shape terms of small kernels, each an EffectsConfig switch of the same name (config.proto):
  // a GEMM waits one HBM round trip before its first k-block;
  bool gemm_pipeline_fill = true;
  // attention CTAs read and write their resident tiles outside the pipelined loop, and do the
  // profile's fixed work per CTA (AttentionEfficiency.cta_fixed_blocks);
  bool attention_tile_io = true;
  // causal attention computes its diagonal blocks in full;
  bool attention_causal_diagonal = true;
  // a causal forward launched shortest first ends one longest CTA after the balanced waves;
  bool attention_causal_tail = true;
  // a causal backward CTA spends the profile's extra blocks on its masked diagonal;
  bool attention_causal_backward_mask = true;
  // attention backward runs its preprocess and postprocess kernels;
  bool attention_backward_helpers = true;
  // heads narrower than the profile's attention figures pay for more softmax exponentials per FLOP;
  bool attention_softmax_exp = true;
  // memory-bound kernels walk their unvectorized elements at the profile's element rate.
  bool unvectorized_elementwise = true;
  // multi-tensor-apply kernels stream at the profile's multi_tensor_hbm_efficiency.
  bool multi_tensor_apply = true;
  // MoE token permutation kernels run at the profile's token_permute_tbps.
  bool moe_token_permute_rate = true;
  // BF16 attention runs FlashAttention-2 (a software stack's SDPA, stack.proto): the profile's
  // attention_fa2_bf16 figures where it has them.
  bool fa2_attention = false;
};

// A GEMM's thread blocks: its output tiles (times batch) in the tile and orientation the shape
// efficiency keeps among `tiles` on `sms` SMs, for wave counting under interference
// (sim/exec/interference.h). 0 for other kinds.
int64_t gemm_ctas(const Kernel& gemm, std::span<const GemmTile> tiles, int64_t sms);

// The options a run's effect switches ask for.
KernelCostOptions cost_options(const clustersim::EffectsConfig& effects);
// ... and its software stack's attention kernel (config.resolved_stack).
KernelCostOptions cost_options(const clustersim::RunConfig& config);

// The model, per kernel kind (every time also pays the profile's kernel_launch_overhead_us):
//  GEMM       max(flops / (peak x shape_eff), bytes / achievable_bw) + pipeline fill
//             shape_eff = ceiling x tile use x wave use x k / (k + k_half):
//               ceiling    large-GEMM fraction of peak from library benchmarks (gemm.efficiency_*);
//               tile use   m x n over the padded tile grid (tile quantization);
//               wave use   tiles over whole waves of SMs: one tile per SM at a time, so a last
//                          partial wave leaves SMs idle (wave quantization);
//               k factor   per-tile fixed cost (pipeline fill, epilogue) amortized over k: skinny
//                          k loses efficiency.
//             pipeline fill = one HBM round trip (gpu.proto hbm_latency_ns) before the first
//             k-block, once per kernel: the SMs idle while the first operands arrive.
//             Every tile of the profile (tile_m x tile_n and gemm.more_tiles), in both
//             orientations, is tried and the one that wastes least kept, as library heuristics
//             pick among kernels. Both quantization effects are described in NVIDIA's "Matrix
//             Multiplication Background User's Guide".
//  Attention  max(loop + tile io bytes / achievable_bw, bytes / achievable_bw) + helpers, where
//             loop = flops x diagonal x mask / (peak x attention_eff x wave use); waves over blocks
//             of tile_m query rows per (batch x head), as FlashAttention parallelizes. Terms:
//               tile io    each CTA reads its resident tiles (forward Q, backward K and V) before
//                          its loop and writes its results (O; dK, dV) after it, so they do not
//                          overlap the tensor cores: they add. They cost about a block's work
//                          per CTA, which only short sequences notice. Bytes from the shape:
//                          forward rows_q x (head_dim + v_head_dim), backward 2 x rows_kv x
//                          (head_dim + v_head_dim) per query head, at 2 bytes (1 in FP8).
//               CTA fixed  a CTA's prologue, pipeline fill and epilogue beyond its tile I/O, as
//                          AttentionEfficiency.cta_fixed_blocks blocks of loop work: the loop
//                          takes (n + fixed) / n of its time for n blocks per CTA (switched with
//                          tile io).
//               diagonal   causal: n query blocks of tile_m against n key blocks compute the
//                          n(n+1)/2 blocks on and below the diagonal, not the n^2/2 counted in
//                          the FLOPs: a factor (n + 1) / n, 1 + 1 / n_kv in general.
//               mask       causal backward: each CTA spends the profile's
//                          causal_mask_blocks_backward (blocks at its head width, more of them
//                          for a narrower head) beyond its loop of (n + 1) / 2 query blocks.
//               helpers    backward only: preprocess (read O and dO, zero an fp32 dQ
//                          accumulator) and postprocess (accumulator to dQ) kernels, memory-bound,
//                          each with its own launch overhead.
//               softmax    one exponential per computed score, forward and backward, on the
//                          special-function units (gpu.proto sfu_ops_per_clock_per_sm). The
//                          efficiencies hold those of the head dim they were measured at
//                          (AttentionEfficiency.head_dim); a score costs 2 x (qk + v width)
//                          FLOPs forward, so a narrower head does more exponentials per FLOP and
//                          adds scores x (1 - width / measured width) / SFU rate, over the same
//                          wave use. Wider heads are left at the measured efficiency: FA3 runs
//                          them with other tiles, and its head dim 256 bars follow no one rule
//                          (non-causal 740 TFLOP/s, near the 775 fewer exponentials would give;
//                          causal 642, level with head dim 128), so no gain is claimed.
//  Memory     max(bytes / achievable_bw, flops / bf16 peak, unvectorized elements / the
//             profile's unvectorized_elementwise_gelems_per_s): PyTorch's strided and
//             dtype-converting element-wise loops load one element at a time and do not reach
//             the bandwidth its vectorized loop does. A multi-tensor-apply kernel (an
//             optimizer step, a foreach norm) takes its bytes at the profile's
//             multi_tensor_hbm_efficiency of peak: a chunk per CTA and a launch per few hundred
//             chunks stream below one long copy. A MoE token permutation takes its bytes at
//             the slower of that and the profile's token_permute_tbps.
// GEMM and attention efficiencies are per clock at the peak clock times the sustained clock ratio
// (gpu.proto ClockModel) when KernelCostOptions::sustained_clocks; figures measured at the
// sustained clock are divided by the ratio first, so the drop is counted once.
// Precisions: FP8 GEMMs use the FP8 peak and ceiling (BF16 on GPUs without FP8); attention runs in
// BF16 unless KernelCostOptions::fp8_attention; FP32 uses the TF32 tensor-core peak with the
// BF16 attention efficiency.
class KernelCostModel {
 public:
  explicit KernelCostModel(const GpuProfile& profile, KernelCostOptions options = {});

  Time time(const Kernel& kernel, Precision precision) const;

  // Seconds effects.moe_token_permute_rate adds to a MoE token permutation (0 for other kernels,
  // and when the profile's rate is not slower than streaming).
  double token_permute_extra_seconds(const Kernel& kernel, Precision precision) const;

  // Achieved fraction of the peak the kernel runs at, not counting launch overhead: FLOP/s over
  // peak FLOP/s for GEMM and attention (so memory-bound shapes score low), bytes/s over peak HBM
  // bandwidth for memory-bound kernels.
  double efficiency(const Kernel& kernel, Precision precision) const;

  // GEMM compute-side efficiency alone (ceiling x tile use x wave use x k factor), ignoring HBM.
  double gemm_shape_efficiency(const Kernel& gemm, Precision precision) const;
  // The large-GEMM ceiling for `precision` at the clock GEMMs run at: the asymptote of
  // gemm_shape_efficiency.
  double gemm_ceiling(Precision precision) const;
  // What the GEMM efficiency figures are multiplied by for the clock GEMMs run at:
  // (running clock / peak clock) / (measured clock / peak clock).
  double gemm_clock_factor() const { return gemm_clock_; }
  // Peak FLOP/s the kernel's math runs at (after the precision rules above).
  double compute_peak(const Kernel& kernel, Precision precision) const;
  // The profile's measured entry for this kernel, or nullptr if none matches (first match wins).
  const clustersim::MeasuredKernel* measured(const Kernel& kernel, Precision precision) const;

  Time launch_overhead() const { return launch_; }
  const KernelCostOptions& options() const { return options_; }

  // Seconds an attention kernel spends on the exponentials of a head narrower than the profile's
  // attention figures (the softmax term above); 0 for other kernels, wider heads, a measured
  // kernel, or when the switch or the profile's figures are missing.
  double attention_softmax_seconds(const Kernel& kernel, Precision precision) const;

  // A GEMM's thread blocks on this profile (gemm_ctas below).
  int64_t gemm_ctas(const Kernel& gemm) const;
  const GpuProfile& profile() const { return profile_; }

 private:
  bool attention_in_fp8(const Kernel& kernel, Precision precision) const;
  // The efficiency figures the kernel runs by (BF16, or FP8 under fp8_attention).
  const clustersim::AttentionEfficiency& attention_figures(const Kernel& kernel,
                                                           Precision precision) const;
  // Blocks of tile_m rows in `length` query or key rows (at least one).
  int64_t attention_blocks(int64_t length) const;
  // CTAs of an attention kernel: a block of tile_m query rows per (batch x head).
  int64_t attention_ctas(const Kernel& kernel) const;
  // Busy share of SM slots over those CTAs.
  double attention_wave_use(const Kernel& kernel) const;
  double attention_efficiency(const Kernel& kernel, Precision precision) const;
  // Seconds of the attention kernel(s) (without the main kernel's launch overhead).
  double attention_seconds(const Kernel& kernel, Precision precision) const;
  // Computed over counted FLOPs of a causal kernel's query-block x key-block grid (1 if off).
  double causal_diagonal_factor(const Kernel& kernel) const;
  // Blocks of main-loop work one CTA runs (causal: with its diagonal's extra, as FLOPs count).
  double cta_loop_blocks(const Kernel& kernel) const;
  // A causal backward's loop with its CTAs' mask blocks over it without (1 if none or off).
  double causal_mask_factor(const Kernel& kernel, Precision precision) const;
  // The main loop's time with each CTA's fixed blocks over it without (1 if none or off).
  double cta_fixed_factor(const Kernel& kernel, Precision precision) const;
  // A causal forward launched shortest first: its loop time over the balanced waves'.
  double causal_tail_factor(const Kernel& kernel, Precision precision) const;
  // HBM bytes/s the kernel's bytes move at: streaming, multi-tensor-apply or token permutation.
  double memory_bandwidth(const Kernel& kernel) const;
  // Seconds of the roofline (without launch overhead).
  double model_seconds(const Kernel& kernel, Precision precision) const;

  GpuProfile profile_;
  KernelCostOptions options_;
  Time launch_;
  double bw_ = 0;                 // achievable HBM bytes/s
  double unvectorized_rate_ = 0;  // elements/s of the unvectorized loops; 0: no such term
  double multi_tensor_bw_ = 0;    // HBM bytes/s of multi-tensor-apply kernels
  double token_permute_bw_ = 0;   // HBM bytes/s of MoE token permutations
  double gemm_clock_ = 1;
  std::vector<GemmTile> gemm_tiles_;  // gemm_tiles(profile_)
};

}  // namespace cs::compute
