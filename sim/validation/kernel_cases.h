// Model values of the single-kernel cases (GEMM, attention, memory-bound): the kernel cost
// model's own answer.
#pragma once

#include <string>

#include "proto/validation.pb.h"
#include "sim/compute/kernel.h"
#include "sim/compute/kernel_cost.h"

namespace cs::validation {

compute::Precision to_precision(clustersim::ValidationPrecision p);

// The kernel a case describes, with FLOPs and bytes counted as the workload layer counts them.
compute::Kernel gemm_kernel(const clustersim::GemmCase& g);
compute::Kernel attention_kernel(const clustersim::AttentionCase& a);
// Cost-model options for an attention case: FP8 forward runs FP8 attention (FlashAttention-3).
compute::KernelCostOptions attention_options(const clustersim::AttentionCase& a);

// Achieved TFLOP/s = kernel FLOPs / KernelCostModel::time (launch overhead included, as the
// simulator charges it). Throws ConfigError for an unknown GPU profile.
double gemm_tflops(const clustersim::GemmCase& g);
double attention_tflops(const clustersim::AttentionCase& a);
// Achieved TB/s = bytes / KernelCostModel::time of a memory-bound kernel of those bytes.
double memory_tbps(const clustersim::MemoryBoundCase& m);

// Field checks, throwing ConfigError "<where>: <prefix><field> ...".
void check_gemm(const clustersim::GemmCase& g, const std::string& where, const std::string& prefix);
// A block-scaled precision (MXFP8, NVFP4) on a GPU without its tensor cores, with the reason.
void check_gemm_precision(const std::string& gpu, clustersim::ValidationPrecision p,
                          const std::string& where, const std::string& field);
void check_attention(const clustersim::AttentionCase& a, const std::string& where);
void check_memory(const clustersim::MemoryBoundCase& m, const std::string& where);

}  // namespace cs::validation
