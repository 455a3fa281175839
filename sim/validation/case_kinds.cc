#include "sim/validation/case_kinds.h"

#include <array>

#include "sim/compute/gpu_profile.h"
#include "sim/config/field_checks.h"
#include "sim/net/topology_builder.h"
#include "sim/validation/collective_case.h"
#include "sim/validation/kernel_cases.h"

namespace cs::validation {

namespace {

using clustersim::ValidationCase;

void check_gemm_case(const ValidationCase& c, const std::string& where) {
  check_gemm(c.gemm(), where, "gemm.");
}
ModelValue model_gemm(const ValidationCase& c) {
  return {true, gemm_tflops(c.gemm()), ""};
}

void check_attention_case(const ValidationCase& c, const std::string& where) {
  check_attention(c.attention(), where);
}
ModelValue model_attention(const ValidationCase& c) {
  return {true, attention_tflops(c.attention()), ""};
}

void check_collective_case(const ValidationCase& c, const std::string& where) {
  check_collective(c.collective(), where, "collective.");
}
ModelValue model_collective(const ValidationCase& c) {
  const CollectiveTiming t = time_collective(c.collective());
  return {true, t.busbw_gbps, "ran " + std::string(coll::to_string(t.algo))};
}

void check_interference_case(const ValidationCase& c, const std::string& where) {
  const auto& i = c.interference();
  if (!i.has_gemm()) config_fail(where, "interference.gemm { ... } must be set");
  if (!i.has_collective()) config_fail(where, "interference.collective { ... } must be set");
  check_gemm(i.gemm(), where, "interference.gemm.");
  check_collective(i.collective(), where, "interference.collective.");
  if (i.comm_ctas() < 0) {
    config_fail(where,
                "interference.comm_ctas must be >= 0 (is " + std::to_string(i.comm_ctas()) + ")");
  }
}
// No contention model between compute and NCCL kernels exists in this build: kernel times do not
// depend on what runs beside them. The inputs are still resolved, so that a case naming an
// unknown GPU or topology fails now rather than when the model arrives.
ModelValue model_interference(const ValidationCase& c) {
  compute::load_gpu_profile(c.interference().gemm().gpu());
  net::resolve_topology(c.interference().collective().topology());
  return {false, 0,
          "not modelled yet: kernel times do not depend on concurrent NCCL kernels (no "
          "compute/communication contention model, issue 9 item 4)"};
}

constexpr std::array kKinds = {
    CaseKind{ValidationCase::kGemm, "gemm", "TFLOP/s", &check_gemm_case, &model_gemm},
    CaseKind{ValidationCase::kAttention, "attention", "TFLOP/s", &check_attention_case,
             &model_attention},
    CaseKind{ValidationCase::kCollective, "collective", "GB/s", &check_collective_case,
             &model_collective},
    CaseKind{ValidationCase::kInterference, "interference", "x", &check_interference_case,
             &model_interference},
};

}  // namespace

std::span<const CaseKind> case_kinds() {
  return kKinds;
}

const CaseKind* find_kind(std::string_view name) {
  for (const auto& k : kKinds)
    if (k.name == name) return &k;
  return nullptr;
}

const CaseKind* kind_of(const clustersim::ValidationCase& c) {
  for (const auto& k : kKinds)
    if (k.proto_case == c.kind_case()) return &k;
  return nullptr;
}

std::string kind_names() {
  std::string names;
  for (const auto& k : kKinds) names += (names.empty() ? "" : ", ") + std::string(k.name);
  return names;
}

}  // namespace cs::validation
