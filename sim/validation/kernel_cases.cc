#include "sim/validation/kernel_cases.h"

#include "sim/compute/gpu_profile.h"
#include "sim/compute/precision_formats.h"
#include "sim/config/field_checks.h"

namespace cs::validation {

namespace {

// Activations and outputs stay 16-bit; FP8 shrinks only GEMM inputs (Transformer Engine), as in
// the workload layer's GEMMs.
constexpr double kActivationBytes = 2.0;

// The run precision whose format a block-scaled case stores its GEMM inputs in.
clustersim::Precision block_scaled_format(clustersim::ValidationPrecision p) {
  return p == clustersim::VALIDATION_NVFP4 ? clustersim::NVFP4 : clustersim::MXFP8;
}

bool block_scaled(clustersim::ValidationPrecision p) {
  return p == clustersim::VALIDATION_MXFP8 || p == clustersim::VALIDATION_NVFP4;
}

// Bytes per GEMM input element, block scales included.
double input_bytes(clustersim::ValidationPrecision p) {
  if (block_scaled(p)) return compute::stored_bytes_per_element(block_scaled_format(p));
  if (p == clustersim::VALIDATION_FP8) return 1.0;
  return p == clustersim::VALIDATION_FP32 ? 4.0 : 2.0;
}

void require_at_least_one(int64_t v, const std::string& where, const std::string& field) {
  if (v < 1) config_fail(where, field + " must be >= 1 (is " + std::to_string(v) + ")");
}

void require_set(const std::string& v, const std::string& where, const std::string& field,
                 const std::string& example) {
  if (v.empty()) config_fail(where, field + " must be set, e.g. " + example);
}

double tflops(const compute::Kernel& kernel, compute::Precision precision, const std::string& gpu,
              compute::KernelCostOptions options = {}) {
  const compute::KernelCostModel model(compute::load_gpu_profile(gpu), options);
  return kernel.flops / model.time(kernel, precision).as_seconds() * 1e-12;
}

}  // namespace

compute::Precision to_precision(clustersim::ValidationPrecision p) {
  if (block_scaled(p)) return compute::format_of(block_scaled_format(p)).gemm;
  if (p == clustersim::VALIDATION_FP8) return compute::Precision::kFp8;
  return p == clustersim::VALIDATION_FP32 ? compute::Precision::kFp32 : compute::Precision::kBf16;
}

compute::Kernel gemm_kernel(const clustersim::GemmCase& g) {
  const double e = input_bytes(g.precision());
  compute::Kernel k = compute::gemm("validate_gemm", g.m(), g.n(), g.k(), e, g.batch());
  if (e < kActivationBytes) {  // quantized inputs, a 16-bit output
    k.bytes =
        static_cast<double>(g.batch()) * (e * static_cast<double>(g.m() * g.k() + g.k() * g.n()) +
                                          kActivationBytes * static_cast<double>(g.m() * g.n()));
  }
  return k;
}

compute::Kernel attention_kernel(const clustersim::AttentionCase& a) {
  const bool fp8 = a.precision() == clustersim::VALIDATION_FP8 && !a.backward();
  const int64_t ratio = a.kv_heads() > 0 ? a.heads() / a.kv_heads() : 1;
  return compute::attention("validate_attention", a.batch() * a.heads(), a.seq_len(), a.seq_len(),
                            a.head_dim(), a.causal(), a.backward(), fp8 ? 1.0 : kActivationBytes,
                            ratio, a.v_head_dim());
}

compute::KernelCostOptions attention_options(const clustersim::AttentionCase& a) {
  compute::KernelCostOptions options;
  options.fp8_attention = a.precision() == clustersim::VALIDATION_FP8;
  options.fa2_attention = a.flash_attention_2();
  options.sustained_clocks = !a.at_boost_clock();
  return options;
}

double gemm_tflops(const clustersim::GemmCase& g) {
  const compute::KernelCostModel model(compute::load_gpu_profile(g.gpu()));
  double flops = 0, seconds = 0;
  clustersim::GemmCase one = g;
  one.clear_with();
  for (int i = -1; i < g.with_size(); ++i) {
    if (i >= 0) {
      one.set_m(g.with(i).m());
      one.set_n(g.with(i).n());
      one.set_k(g.with(i).k());
    }
    const compute::Kernel k = gemm_kernel(one);
    flops += k.flops;
    seconds += model.time(k, to_precision(g.precision())).as_seconds();
  }
  return flops / seconds * 1e-12;
}

double attention_tflops(const clustersim::AttentionCase& a) {
  return tflops(attention_kernel(a), to_precision(a.precision()), a.gpu(), attention_options(a));
}

double memory_tbps(const clustersim::MemoryBoundCase& m) {
  const compute::KernelCostModel model(compute::load_gpu_profile(m.gpu()));
  compute::Kernel k = compute::memory_bound("validate_memory", m.bytes());
  k.multi_tensor = m.multi_tensor();
  k.token_permute = m.token_permute();
  return m.bytes() / model.time(k, compute::Precision::kBf16).as_seconds() * 1e-12;
}

void check_gemm(const clustersim::GemmCase& g, const std::string& where,
                const std::string& prefix) {
  require_set(g.gpu(), where, prefix + "gpu", "gpu: \"h100\"");
  require_at_least_one(g.m(), where, prefix + "m");
  require_at_least_one(g.n(), where, prefix + "n");
  require_at_least_one(g.k(), where, prefix + "k");
  require_at_least_one(g.batch(), where, prefix + "batch");
  for (int i = 0; i < g.with_size(); ++i) {
    const std::string at = prefix + "with[" + std::to_string(i) + "].";
    require_at_least_one(g.with(i).m(), where, at + "m");
    require_at_least_one(g.with(i).n(), where, at + "n");
    require_at_least_one(g.with(i).k(), where, at + "k");
  }
  check_gemm_precision(g.gpu(), g.precision(), where, prefix + "precision");
}

void check_gemm_precision(const std::string& gpu, clustersim::ValidationPrecision p,
                          const std::string& where, const std::string& field) {
  if (!block_scaled(p)) return;
  const std::string why =
      compute::unsupported_precision(compute::load_gpu_profile(gpu), block_scaled_format(p));
  if (!why.empty()) config_fail(where, field + ": " + why);
}

void check_attention(const clustersim::AttentionCase& a, const std::string& where) {
  require_set(a.gpu(), where, "attention.gpu", "gpu: \"h100\"");
  require_at_least_one(a.batch(), where, "attention.batch");
  require_at_least_one(a.heads(), where, "attention.heads");
  require_at_least_one(a.seq_len(), where, "attention.seq_len");
  require_at_least_one(a.head_dim(), where, "attention.head_dim");
  if (a.precision() != clustersim::VALIDATION_BF16 && a.precision() != clustersim::VALIDATION_FP8) {
    config_fail(where, "attention.precision must be VALIDATION_BF16 or VALIDATION_FP8");
  }
  if (a.flash_attention_2() && a.precision() != clustersim::VALIDATION_BF16)
    config_fail(where, "attention.flash_attention_2 runs BF16 only (FlashAttention-2 has no FP8)");
  if (a.v_head_dim() < 0)
    config_fail(where, "attention.v_head_dim must be >= 0 (0: head_dim; is " +
                           std::to_string(a.v_head_dim()) + ")");
  if (a.kv_heads() < 0 || (a.kv_heads() > 0 && a.heads() % a.kv_heads() != 0))
    config_fail(where, "attention.kv_heads must divide attention.heads (0: heads; is " +
                           std::to_string(a.kv_heads()) + " of " + std::to_string(a.heads()) + ")");
}

void check_memory(const clustersim::MemoryBoundCase& m, const std::string& where) {
  require_set(m.gpu(), where, "memory.gpu", "gpu: \"h100\"");
  if (!(m.bytes() > 0)) {
    config_fail(where, "memory.bytes must be > 0 (is " + std::to_string(m.bytes()) + ")");
  }
}

}  // namespace cs::validation
