// A new GPU is one text file: a profile that is not a preset, with its own NCCL, server and price
// figures, runs a training step and a collective with no code change.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/config/embedded_presets.h"
#include "tests/support/test_helpers.h"

namespace cs {
namespace {

using testing_support::read_file;
using testing_support::run_cli;
using testing_support::temp_file;
using testing_support::temp_path;

// H100 compute on an imagined server: Ampere's NCCL tables (no NVLink SHARP), 8 NVLinks, a
// 200 Gb/s NIC, a smaller host and its own price.
std::string custom_gpu() {
  return temp_file("h100-custom.textproto", R"pb(
    name: "h100-custom"
    based_on: "h100"
    architecture: "ampere"
    nvlinks: 8
    nic_bandwidth_gbits: 200
    host { gpus_per_node: 8 host_memory_gb: 800 }
    price_per_gpu_hour: 9.25
  )pb");
}

nlohmann::json json_of(const std::vector<std::string>& args, const std::string& json) {
  std::vector<std::string> with = args;
  with.insert(with.end(), {"--json", json});
  const auto r = run_cli(with);
  EXPECT_EQ(r.code, 0) << r.err;
  return nlohmann::json::parse(read_file(json));
}

TEST(GpuFromFile, RunsAStepWithItsOwnPriceAndServer) {
  const std::string gpu = custom_gpu(), json = temp_path("custom-run.json");
  const auto j = json_of({"run", "--preset", "llama3.2-1b", "--set", "cluster.gpu=" + gpu, "--set",
                          "offload.optimizer=CPU"},
                         json);
  EXPECT_EQ(j["cost"]["price_per_gpu_hour"].get<double>(), 9.25);
  // The host's 800 GB shared by 8 GPUs.
  EXPECT_DOUBLE_EQ(j["offload"]["host_dram_capacity_gb"].get<double>(), 100.0);
  EXPECT_GT(j["iteration_time_s"].get<double>(), 0.0);
}

TEST(GpuFromFile, RunsACollectiveWithItsOwnNcclFigures) {
  // dgx-h100 servers holding the custom GPU.
  const EmbeddedFile* preset = find_preset("topologies", "dgx-h100");
  ASSERT_NE(preset, nullptr);
  std::string topology(preset->text);
  const std::string preset_gpu = "gpu: \"h100\"";
  ASSERT_NE(topology.find(preset_gpu), std::string::npos);
  topology.replace(topology.find(preset_gpu), preset_gpu.size(), "gpu: \"" + custom_gpu() + "\"");
  const std::string custom = temp_file("dgx-custom.textproto", topology);
  const std::string json = temp_path("custom-coll.json");
  const auto busbw = [&](const std::string& topo) {
    return json_of({"collective", "--gpus", "8", "--topology", topo, "--sizes", "1G"},
                   json)["results"][0];
  };
  const auto h100 = busbw("dgx-h100"), mine = busbw(custom);
  // H100's NCCL picks NVLink SHARP; an Ampere-row GPU has none and runs a ring, at NCCL's
  // Ampere per-link NVLink figure (20.0 of 25 GB/s, not Hopper's 20.6).
  EXPECT_EQ(h100["algo"], "nvls");
  EXPECT_EQ(mine["algo"], "ring");
  EXPECT_LT(mine["busbw_gbytes_per_s"].get<double>(), h100["busbw_gbytes_per_s"].get<double>());
}

}  // namespace
}  // namespace cs
