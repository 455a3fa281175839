// libFuzzer target: a run config in text format, with "--set path=value" lines as overrides,
// must parse, validate, price its failures and build its programs, or throw ConfigError.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/config/field_override.h"
#include "sim/config/text_proto.h"
#include "sim/cost/goodput.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/model_math.h"

namespace {

// Lines that start with "--set " are overrides, applied in order after the rest is parsed.
void load(std::string_view input, clustersim::RunConfig& config) {
  std::string text;
  std::vector<std::string> overrides;
  while (!input.empty()) {
    const std::size_t end = input.find('\n');
    const std::string_view line = input.substr(0, end);
    if (line.starts_with("--set "))
      overrides.emplace_back(line.substr(6));
    else
      text.append(line).push_back('\n');
    input.remove_prefix(end == std::string_view::npos ? input.size() : end + 1);
  }
  cs::parse_text_proto(text, "fuzz.textproto", &config);
  for (const auto& o : overrides) cs::apply_override(config, o);
}

// Programs grow with stages x microbatches x layers; bigger configs stop at validation so
// each input stays quick.
bool small_enough(const clustersim::RunConfig& c) {
  const auto& p = c.parallel();
  const double microbatches =
      p.global_batch_size() / std::max(1.0, static_cast<double>(p.microbatch_size()) * p.dp());
  return static_cast<double>(p.pp()) * microbatches * c.model().num_layers() <= 4096;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    clustersim::RunConfig config;
    load(std::string_view(reinterpret_cast<const char*>(data), size), config);
    if (!config.cluster().has_topology()) config.mutable_cluster()->set_topology("dgx-h100");
    if (!small_enough(config)) {
      cs::run::validate_plan_fields(config, "fuzz.textproto");
      cs::cost::validate_reliability(config.reliability(), "fuzz.textproto");
      return 0;
    }
    const auto prepared = cs::run::prepare_step(config, "fuzz.textproto");
    const int64_t gpus = cs::workload::layout_of(prepared.config.parallel()).world();
    const double params =
        static_cast<double>(cs::workload::count_params(prepared.config.model()).total());
    cs::cost::goodput_of(prepared.config.reliability(), cs::cost::checkpoint_bytes(params),
                         {gpus, (gpus + 7) / 8, gpus}, "fuzz.textproto");
  } catch (const cs::ConfigError&) {
  }
  return 0;
}
