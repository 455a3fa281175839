#include "sim/validation/case_kinds.h"

#include <array>

#include "sim/compute/gpu_profile.h"
#include "sim/config/field_checks.h"
#include "sim/exec/interference.h"
#include "sim/validation/collective_case.h"
#include "sim/validation/kernel_cases.h"
#include "sim/validation/moe_cases.h"
#include "sim/validation/stack_case.h"
#include "sim/world/world.h"

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

void check_memory_case(const ValidationCase& c, const std::string& where) {
  check_memory(c.memory(), where);
}
ModelValue model_memory(const ValidationCase& c) {
  return {true, memory_tbps(c.memory()), ""};
}

void check_stack_kernels_case(const ValidationCase& c, const std::string& where) {
  check_stack_kernels(c.stack_kernels(), where);
}
ModelValue model_stack_kernels(const ValidationCase& c) {
  return {true, stack_kernels_us(c.stack_kernels(), c.name()), ""};
}

void check_collective_case(const ValidationCase& c, const std::string& where) {
  check_collective(c.collective(), where, "collective.");
}
ModelValue model_collective(const ValidationCase& c) {
  const CollectiveTiming t = time_collective(c.collective());
  return {true, t.busbw_gbytes_per_s, "ran " + std::string(coll::to_string(t.algo))};
}

void check_collective_latency_case(const ValidationCase& c, const std::string& where) {
  check_collective(c.collective_latency(), where, "collective_latency.");
}
ModelValue model_collective_latency(const ValidationCase& c) {
  const CollectiveTiming t = time_collective(c.collective_latency());
  return {true, t.time.as_us(), "ran " + std::string(coll::to_string(t.algo))};
}

void check_interference_case(const ValidationCase& c, const std::string& where) {
  const auto& i = c.interference();
  if (!i.has_gemm()) config_fail(where, "interference.gemm { ... } must be set");
  if (!i.has_collective()) config_fail(where, "interference.collective { ... } must be set");
  check_gemm(i.gemm(), where, "interference.gemm.");
  if (i.gemm().with_size() > 0)
    config_fail(where, "interference.gemm.with: an interference case times one GEMM");
  check_collective(i.collective(), where, "interference.collective.");
  if (i.comm_ctas() < 0) {
    config_fail(where,
                "interference.comm_ctas must be >= 0 (is " + std::to_string(i.comm_ctas()) + ")");
  }
  if (i.gemm_ctas() < 0) {
    config_fail(where,
                "interference.gemm_ctas must be >= 0 (is " + std::to_string(i.gemm_ctas()) + ")");
  }
}
// The GEMM's time beside the collective over its time alone, by the executor's interference law:
// the collective's load is what the simulator charges for its path (NVLink when every member
// shares a server), with the SM count the source reports when it reports one; the GEMM's waves
// are counted over its CTAs as the source reports them, else over the cost model's tile grid.
ModelValue model_interference(const ValidationCase& c) {
  const auto& i = c.interference();
  // The collective's world with the GEMM's GPU, so that the model is the one a run's executor
  // gets from the same settings.
  clustersim::RunConfig config = collective_case_config(i.collective());
  config.mutable_cluster()->set_gpu(i.gemm().gpu());
  const world::ResolvedCluster cluster(config, "interference case", "collective.topology");
  world::World world(cluster, i.collective().gpus());
  const net::Topology& topo = world.topology();
  const bool one_server =
      topo.vertex(topo.gpu(0)).node == topo.vertex(topo.gpu(i.collective().gpus() - 1)).node;
  const compute::GpuProfile& gpu = world.gpu();
  const exec::InterferenceModel model =
      *world.executor_options({.reuse_isolated = false}).interference;
  exec::CommLoad load = model.load_of(one_server ? exec::CommPath::kNvlinkCollective
                                                 : exec::CommPath::kNetworkCollective);
  if (i.comm_ctas() > 0) load.sms = i.comm_ctas();
  const compute::Kernel gemm = gemm_kernel(i.gemm());
  const compute::KernelCostModel cost(gpu);
  const double alone = cost.time(gemm, to_precision(i.gemm().precision())).as_seconds();
  const int64_t ctas = i.gemm_ctas() > 0 ? i.gemm_ctas() : cost.gemm_ctas(gemm);
  const double factor = exec::kernel_slowdown(model, gemm.kind, alone, gemm.bytes, load, ctas);
  return {true, factor,
          std::to_string(load.sms) + " SMs held by NCCL, " + std::to_string(ctas) + " GEMM CTAs"};
}

void check_grouped_gemm_case(const ValidationCase& c, const std::string& where) {
  check_grouped_gemm(c.grouped_gemm(), where);
}
ModelValue model_grouped_gemm(const ValidationCase& c) {
  return {true, grouped_gemm_tflops(c.grouped_gemm()), ""};
}

void check_all_to_all_case(const ValidationCase& c, const std::string& where) {
  check_all_to_all(c.all_to_all(), where);
}
ModelValue model_all_to_all(const ValidationCase& c) {
  return {true, all_to_all_gbps(c.all_to_all()), ""};
}

constexpr std::array kKinds = {
    CaseKind{ValidationCase::kGemm, "gemm", "TFLOP/s", &check_gemm_case, &model_gemm},
    CaseKind{ValidationCase::kAttention, "attention", "TFLOP/s", &check_attention_case,
             &model_attention},
    CaseKind{ValidationCase::kCollective, "collective", "GB/s", &check_collective_case,
             &model_collective},
    CaseKind{ValidationCase::kCollectiveLatency, "collective_latency", "us",
             &check_collective_latency_case, &model_collective_latency},
    CaseKind{ValidationCase::kInterference, "interference", "x", &check_interference_case,
             &model_interference},
    CaseKind{ValidationCase::kGroupedGemm, "grouped_gemm", "TFLOP/s", &check_grouped_gemm_case,
             &model_grouped_gemm},
    CaseKind{ValidationCase::kAllToAll, "all_to_all", "GB/s", &check_all_to_all_case,
             &model_all_to_all},
    CaseKind{ValidationCase::kMemory, "memory", "TB/s", &check_memory_case, &model_memory},
    CaseKind{ValidationCase::kStackKernels, "stack_kernels", "us", &check_stack_kernels_case,
             &model_stack_kernels},
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
