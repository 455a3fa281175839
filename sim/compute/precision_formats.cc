#include "sim/compute/precision_formats.h"

#include <array>

#include "sim/coll/nccl_model.h"

namespace cs::compute {
namespace {

// Transformer Engine's recipes (transformer_engine/common/recipe/__init__.py): DelayedScaling
// (FP8 E4M3 / E5M2, one FP32 scale per tensor), MXFP8BlockScaling (FP8 E4M3, one E8M0 power-of-two
// scale per 32 consecutive elements, the OCP Microscaling format) and NVFP4BlockScaling (FP4
// E2M1, one FP8 E4M3 scale per 16 elements and one FP32 scale per tensor, whose few bytes are
// left out). MXFP8 and NVFP4 GEMMs run on Blackwell's block-scaled tcgen05 MMA only.
constexpr std::array<PrecisionFormat, 4> kFormats{{
    {clustersim::BF16, Precision::kBf16, "BF16", 2.0, 0, 0.0, false, false},
    {clustersim::FP8, Precision::kFp8, "FP8", 1.0, 0, 0.0, true, false},
    {clustersim::MXFP8, Precision::kMxfp8, "MXFP8", 1.0, 32, 1.0, true, true},
    {clustersim::NVFP4, Precision::kNvfp4, "NVFP4", 0.5, 16, 1.0, true, true},
}};

}  // namespace

const PrecisionFormat& format_of(clustersim::Precision precision) {
  for (const auto& f : kFormats)
    if (f.config == precision) return f;
  return kFormats.front();
}

double stored_bytes_per_element(clustersim::Precision precision) {
  const PrecisionFormat& f = format_of(precision);
  return f.element_bytes + (f.block > 0 ? f.scale_bytes / f.block : 0.0);
}

bool has_block_scaling(const GpuProfile& profile) {
  return coll::parse_gpu_arch(profile.architecture()) >= coll::GpuArch::kBlackwell;
}

int quantized_copies(const GpuProfile& gpu, clustersim::Precision precision) {
  const PrecisionFormat& f = format_of(precision);
  if (!f.quantized) return 0;
  return !f.block_scaled && has_block_scaling(gpu) ? 1 : 2;
}

std::string unsupported_precision(const GpuProfile& gpu, clustersim::Precision precision) {
  const PrecisionFormat& f = format_of(precision);
  const std::string on = "GPU '" + gpu.name() + "' (architecture: " + gpu.architecture() + ")";
  if (f.block_scaled && !has_block_scaling(gpu))
    return std::string(f.name) + " needs block-scaled tensor cores (Blackwell); " + on +
           " has none";
  if (f.gemm == Precision::kNvfp4 && !(gpu.peak_fp4_tflops() > 0))
    return "NVFP4 needs FP4 tensor cores; " + on + " has no peak_fp4_tflops";
  // Transformer Engine's check_fp8_support: "Device compute capability 8.9 or higher required
  // for FP8 execution" (transformer_engine/pytorch/fp8.py).
  if (f.gemm == Precision::kFp8 && !(gpu.peak_fp8_tflops() > 0))
    return "FP8 needs FP8 tensor cores (Transformer Engine: compute capability 8.9 or higher); " +
           on + " has no peak_fp8_tflops";
  return "";
}

void require_precision_supported(const GpuProfile& gpu, clustersim::Precision precision,
                                 const std::string& source) {
  const std::string why = unsupported_precision(gpu, precision);
  if (!why.empty()) throw ConfigError(source + ": precision: " + why);
}

}  // namespace cs::compute
