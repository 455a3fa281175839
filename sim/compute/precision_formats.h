// The training precisions as data: how each stores the tensors its GEMMs read (element bytes,
// block scales), which tensor cores it runs on, and what a GPU needs to run it, in one table.
#pragma once

#include <string>
#include <string_view>

#include "proto/config.pb.h"
#include "sim/compute/gpu_profile.h"
#include "sim/compute/kernel.h"

namespace cs::compute {

struct PrecisionFormat {
  clustersim::Precision config;  // RunConfig.precision
  Precision gemm;                // what its transformer-layer GEMMs run as
  std::string_view name;
  double element_bytes;  // one element of a quantized GEMM input
  int32_t block;         // elements sharing one scale (0: one scale per tensor)
  double scale_bytes;    // one block scale
  // GEMM inputs are cast by Transformer Engine kernels before each GEMM (FP8, MXFP8, NVFP4).
  bool quantized;
  // Needs block-scaled tensor cores (Blackwell's tcgen05 block-scaled MMA).
  bool block_scaled;
};

// The row of `precision`.
const PrecisionFormat& format_of(clustersim::Precision precision);

// Bytes per element of a quantized GEMM input, its block scales included (BF16: 2).
double stored_bytes_per_element(clustersim::Precision precision);

// Whether the GPU has block-scaled tensor cores (MXFP8, NVFP4): Blackwell and later, read off
// the profile's architecture.
bool has_block_scaling(const GpuProfile& profile);

// Copies Transformer Engine writes of each quantized GEMM input: a rowwise one for the forward
// and dgrad GEMMs and a columnwise (transposed) one for wgrad. A per-tensor FP8 tensor's transpose
// is skipped on GPUs whose FP8 GEMMs take every layout (TE is_non_tn_fp8_gemm_supported:
// compute capability 10.x, Blackwell); block-scaled formats always need both, since the scales
// run along the other dimension. 0 for BF16.
int quantized_copies(const GpuProfile& gpu, clustersim::Precision precision);

// "" when `gpu` runs GEMMs in `precision`; else why not, naming the profile field that says so.
std::string unsupported_precision(const GpuProfile& gpu, clustersim::Precision precision);

// Throws ConfigError "<source>: precision: ..." when `gpu` cannot run `precision`.
void require_precision_supported(const GpuProfile& gpu, clustersim::Precision precision,
                                 const std::string& source);

}  // namespace cs::compute
