// libFuzzer target: the Chakra reader on arbitrary bytes (one rank's .et file, run as both ranks of
// a two-rank trace) must throw TraceError or build a workload that simulates to an end.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "sim/compute/gpu_profile.h"
#include "sim/trace/chakra.h"
#include "sim/trace/replay.h"
#include "sim/trace/trace_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const cs::compute::KernelCostModel cost(cs::compute::load_gpu_profile("h100"));
  try {
    const auto rank = cs::trace::parse_chakra_rank(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.et", 0);
    if (rank.nodes.size() > 256) return 0;  // keep each input quick to simulate
    const auto workload =
        cs::trace::chakra_to_workload({rank, rank}, {"fuzz.0.et", "fuzz.1.et"}, cost, {});
    cs::trace::ReplayTarget target{"dgx-h100", "", clustersim::ANALYTICAL};
    try {
      cs::trace::simulate_workload(workload, target, "fuzz", "fuzz");
    } catch (const std::runtime_error& stuck) {
      // A trace that cannot complete is reported, not a crash.
    }
  } catch (const cs::trace::TraceError&) {
  }
  return 0;
}
