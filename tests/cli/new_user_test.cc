// What a new user expects of the CLI (issue 26 point 5): names in any case, a Hugging Face
// config.json that is named and redirected, and a run table that says where the step goes and
// why a bubble is larger than its formula.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "sim/report/json.h"
#include "tests/support/test_helpers.h"

namespace cs::cli {
namespace {

using testing_support::run_cli;
using testing_support::temp_path;

const std::vector<std::string> kSmall = {"--set", "model.num_layers=2",
                                         "--set", "parallel.dp=4",
                                         "--set", "parallel.global_batch_size=8"};

// `clustersim ARGS... --json -`, its report parsed; fails the test on a non-zero exit.
report::Json json_of(std::vector<std::string> args) {
  args.insert(args.end(), {"--json", "-"});
  const auto r = run_cli(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? report::Json::parse(r.out) : report::Json{};
}

std::vector<std::string> small_run(std::vector<std::string> extra) {
  std::vector<std::string> args = {"run", "--preset", "llama3-8b"};
  args.insert(args.end(), kSmall.begin(), kSmall.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(NewUser, GpuAndTopologyNamesAreCaseInsensitive) {
  const auto lower = json_of(small_run({"--set", "cluster.gpu=h100"}));
  const auto upper = json_of(small_run({"--set", "cluster.gpu=H100"}));
  EXPECT_EQ(upper.at("gpu"), "h100");
  EXPECT_EQ(upper.at("iteration_time_s"), lower.at("iteration_time_s"));
  const auto a100 =
      json_of(small_run({"--set", "cluster.gpu=A100", "--set", "cluster.topology=DGX-A100"}));
  EXPECT_EQ(a100.at("gpu"), "a100");
  EXPECT_EQ(a100.at("topology"), "dgx-a100");
  EXPECT_GT(a100.at("iteration_time_s").get<double>(), lower.at("iteration_time_s").get<double>());

  // NVLS is chosen by GPU type: the upper-case name must reach the same tables.
  const std::vector<std::string> coll = {"collective", "--gpus", "8", "--sizes", "1G"};
  auto upper_coll = coll, lower_coll = coll;
  upper_coll.insert(upper_coll.end(), {"--topology", "DGX-H100"});
  lower_coll.insert(lower_coll.end(), {"--topology", "dgx-h100"});
  EXPECT_EQ(json_of(upper_coll).at("results"), json_of(lower_coll).at("results"));

  const auto unknown = run_cli(small_run({"--set", "cluster.gpu=H999"}));
  EXPECT_NE(unknown.code, 0);
  EXPECT_NE(unknown.err.find("unknown GPU 'H999'"), std::string::npos) << unknown.err;
}

constexpr const char* kTinyLlama = R"({
  "architectures": ["LlamaForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
  "intermediate_size": 14336, "max_position_embeddings": 8192, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 2, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": false,
  "vocab_size": 128256)";

// A folder `name` holding config.json = kTinyLlama plus `extra` fields.
std::string hf_folder(const std::string& name, const std::string& extra = "") {
  const std::string dir = temp_path(name);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << kTinyLlama << extra << "}";
  return dir;
}

TEST(NewUser, HfConfigNamesTheModelAndRunsAloneOnTheDocumentedBase) {
  const std::string folder = hf_folder("Tiny-Llama-2L");
  const std::vector<std::string> set = {"--set", "parallel.dp=4", "--set",
                                        "parallel.global_batch_size=8"};
  std::vector<std::string> args = {"run", "--hf-config", folder};
  args.insert(args.end(), set.begin(), set.end());
  const auto r = run_cli(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("llama3-8b (model Tiny-Llama-2L): ", 0), 0u) << r.out;
  const auto j = json_of(args);
  EXPECT_EQ(j.at("model"), "Tiny-Llama-2L");
  EXPECT_EQ(j.at("name"), "llama3-8b");  // the base the help names
  // The same model through the preset gives the same step: the base is that preset.
  EXPECT_EQ(j.at("iteration_time_s"), json_of(small_run({})).at("iteration_time_s"));

  const std::string named = hf_folder("snapshot-abc", R"(, "_name_or_path": "org/tiny")");
  args = {"memory", "--hf-config", named + "/config.json"};
  EXPECT_EQ(run_cli(args).code, 0);
  args = {"run", "--preset", "llama3-8b", "--hf-config", named};
  args.insert(args.end(), set.begin(), set.end());
  EXPECT_EQ(json_of(args).at("model"), "org/tiny");
}

TEST(NewUser, AHfConfigJsonGivenAsTheRunConfigPointsToHfConfig) {
  const std::string file = hf_folder("given-as-config") + "/config.json";
  const auto r = run_cli({"run", file});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find(file + ": is a Hugging Face config.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--hf-config " + file), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cs::cli
