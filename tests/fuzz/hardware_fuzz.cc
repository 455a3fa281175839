// libFuzzer target: a GPU profile or a topology in text format (what cluster.gpu and
// cluster.topology take as files) must load into figures a run can use, or throw ConfigError. A
// profile must give a positive HBM capacity and finite, positive kernel times; a topology must
// build and route between its first and last GPU over a positive bandwidth.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/compute/gpu_profile.h"
#include "sim/compute/kernel.h"
#include "sim/compute/kernel_cost.h"
#include "sim/config/config_error.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"

namespace {

constexpr const char* kSource = "fuzz.textproto";

// A figure a valid input must not give: libFuzzer reports the input.
void require(bool holds) {
  if (!holds) __builtin_trap();
}

void use_gpu_profile(std::string_view text) {
  const auto profile = cs::compute::load_gpu_profile_text(text, kSource);
  require(cs::compute::hbm_capacity_bytes(profile) > 0);
  const cs::compute::KernelCostModel model(profile);
  const cs::compute::Kernel kernels[] = {
      cs::compute::gemm("gemm", 4096, 4096, 4096, 2),
      cs::compute::gemm("skinny", 8, 16384, 128, 2),
      cs::compute::memory_bound("copy", 1e9),
  };
  for (const auto& kernel : kernels) {
    const cs::Time t = model.time(kernel, cs::compute::Precision::kBf16);
    require(t.count_ps() > 0);
  }
}

void use_topology(std::string_view text) {
  const auto desc = cs::net::load_topology_text(text, kSource);
  // A few servers keep each input quick; a fabric that cannot hold two GPUs routes nothing.
  const auto gpus =
      static_cast<int32_t>(std::min<int64_t>(cs::net::topology_capacity_gpus(desc), 64));
  const cs::net::Topology topology = cs::net::build_topology(desc, gpus, kSource);
  if (topology.num_gpus() < 2) return;
  cs::net::Routing routing(topology);
  const auto last = static_cast<int32_t>(topology.num_gpus() - 1);
  const cs::net::Route& route = routing.route(topology.gpu(0), topology.gpu(last));
  require(!route.links.empty() && route.bottleneck.in_bytes_per_s() > 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    use_gpu_profile(text);
  } catch (const cs::ConfigError&) {
  }
  try {
    use_topology(text);
  } catch (const cs::ConfigError&) {
  }
  return 0;
}
