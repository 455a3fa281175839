// libFuzzer target: the Chakra reader on arbitrary bytes must throw TraceError or build a
// workload that simulates to an end. Text that opens like JSON ('{' or '[') goes through the
// comm-groups JSON parser and, as the inputs.values of a process_group:init metadata node, the
// pg_config reader; anything else is a rank's .et file, run as both ranks of a two-rank trace with
// import options picked by the input's length (strict or dropped dangling deps, CPU ops on a host
// thread or skipped), so that real .et seeds stay valid inputs.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "sim/compute/gpu_profile.h"
#include "sim/trace/chakra.h"
#include "sim/trace/replay.h"
#include "sim/trace/trace_format.h"

namespace {

void import_and_replay(std::string_view bytes, uint8_t mode) {
  static const cs::compute::KernelCostModel cost(cs::compute::load_gpu_profile("h100"));
  const auto rank = cs::trace::parse_chakra_rank(bytes, "fuzz.et", 0);
  if (rank.nodes.size() > 256) return;  // keep each input quick to simulate
  cs::trace::ChakraImportOptions options;
  options.strict_deps = (mode & 4) != 0;
  options.cpu_ops = (mode & 8) != 0 ? cs::trace::CpuOps::kSkip : cs::trace::CpuOps::kHostThread;
  cs::trace::ChakraSummary summary;
  const auto workload = cs::trace::chakra_to_workload({rank, rank}, {"fuzz.0.et", "fuzz.1.et"},
                                                      cost, {}, options, &summary);
  cs::trace::ReplayTarget target{"dgx-h100", "", clustersim::ANALYTICAL};
  try {
    cs::trace::simulate_workload(workload, target, "fuzz", "fuzz");
  } catch (const std::runtime_error& stuck) {
    // A trace that cannot complete is reported, not a crash.
  }
}

void groups_json(std::string_view text) {
  const auto groups = cs::trace::parse_comm_groups(text, "fuzz.json");
  // Resolving them against a small trace checks the member ranks.
  static const cs::compute::KernelCostModel cost(cs::compute::load_gpu_profile("h100"));
  cs::trace::ChakraRank empty;
  cs::trace::chakra_to_workload({empty, empty}, {"fuzz.0.et", "fuzz.1.et"}, cost, groups);
}

void metadata_values(std::string_view text) {
  ChakraProtoMsg::Node node;
  node.set_id(1);
  node.set_name("## process_group:init ##");
  node.set_type(ChakraProtoMsg::METADATA_NODE);
  node.mutable_inputs()->set_values(std::string(text));
  cs::trace::metadata_comm_groups({node}, "fuzz.et", 0);
}

bool looks_like_json(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && (s[first] == '{' || s[first] == '[');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (looks_like_json(bytes)) {
    for (const auto path : {groups_json, metadata_values}) {
      try {
        path(bytes);
      } catch (const cs::trace::TraceError&) {
      }
    }
    return 0;
  }
  try {
    import_and_replay(bytes, static_cast<uint8_t>((size & 3) << 2));
  } catch (const cs::trace::TraceError&) {
  }
  return 0;
}
