// Times the expert GEMMs of one EP rank as one grouped kernel, the way Megatron-Core's grouped
// GEMM (Transformer Engine's CUTLASS grouped GEMM) and DeepGEMM's contiguous layout run them, and
// as an ideal grouped GEMM would: what effects.moe_grouped_gemm's line is measured against.
#pragma once

#include <span>

#include "sim/compute/kernel.h"
#include "sim/compute/kernel_cost.h"
#include "sim/core/units.h"

namespace cs::compute {

// Bytes of one output element of a grouped GEMM: bf16, in BF16 and in FP8 (DeepGEMM and
// Transformer Engine write bf16 results from FP8 inputs).
inline constexpr double kGroupedGemmOutputBytes = 2.0;

// One kernel launch for every GEMM in `gemms` (each expert's, with its own m, n and k). Its
// output tiles (tile_m x tile_n, in the orientation that finishes first) from every GEMM share
// the SMs in whole waves of one tile per SM, so a few tokens per expert no longer leave most SMs
// idle as a GEMM per expert does; each expert's rows are still padded to whole tiles. A tile runs
// its mainloop over k, with the per-tile fixed cost k_half as the dense model counts it, then
// stores its output tile before its next mainloop starts (CUTLASS's cooperative grouped schedule
// and DeepGEMM keep the tensor cores idle while the epilogue stores; all SMs store at once, so the
// store takes tile bytes x SMs / HBM bandwidth). The HBM roofline, one pipeline fill (when
// KernelCostOptions::gemm_pipeline_fill) and one launch overhead complete it. Empty GEMMs (m, n
// or k 0) are skipped; with none left the kernel still launches. Precisions as the dense model:
// the peak and ceiling of `precision` at the clock GEMMs run at.
Time grouped_gemm_time(const KernelCostModel& cost, std::span<const Kernel> gemms,
                       Precision precision);

// The same GEMMs as an ideal grouped GEMM would run them: all of their FLOPs as one GEMM at the
// large-GEMM ceiling (the dense model's asymptote, KernelCostModel::gemm_ceiling), with no
// per-expert tile rounding, no partial last wave, no per-tile k_half and no tile stores; the HBM
// roofline over the same bytes, one pipeline fill (when KernelCostOptions::gemm_pipeline_fill)
// and one launch overhead as grouped_gemm_time. Never longer than grouped_gemm_time: each of its
// tile orientations computes at least these FLOPs at this rate, over whole waves.
Time ideal_grouped_gemm_time(const KernelCostModel& cost, std::span<const Kernel> gemms,
                             Precision precision);

// How an EP rank's expert GEMMs are timed (effects.moe_grouped_gemm on or off).
enum class GroupedGemmModel {
  kKernel,  // as the grouped GEMM kernel runs them: grouped_gemm_time
  kIdeal,   // as an ideal grouped GEMM: ideal_grouped_gemm_time
};

// A rank's memory-bound expert parts as the one kernel that runs them: their bytes and FLOPs
// summed, the first part's kind and flags.
Kernel merged_parts(std::span<const Kernel> parts);

// One EP rank's share of an expert op: its GEMMs as one grouped kernel timed by `model`, or
// anything else (the experts' activation) as one kernel over all of their bytes and FLOPs, as
// Megatron-Core applies the activation once to the whole permuted tensor.
Time expert_part_time(const KernelCostModel& cost, std::span<const Kernel> parts,
                      Precision precision, GroupedGemmModel model);

}  // namespace cs::compute
