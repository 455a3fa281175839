// What a new user expects of the CLI (issue 26 point 5): names in any case, a Hugging Face
// config.json that is named and redirected, and a run table that says where the step goes and
// why a bubble is larger than its formula.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "sim/compute/gpu_profile.h"
#include "sim/config/field_checks.h"
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

// An unknown GPU or stack profile names the config and the field that gave it, as an unknown
// topology does; they named the value alone ("unknown GPU 'h1000': ...").
TEST(NewUser, AnUnknownGpuOrStackNamesTheConfigAndTheField) {
  const std::string config = "workloads/llama3-8b.textproto: ";
  for (const std::string command : {"run", "memory"}) {
    for (const auto& [set, says] :
         {std::pair{"cluster.gpu=h1000", "cluster.gpu: unknown GPU 'h1000': neither a profile ("},
          {"stack_variant=nonexistent", "stack_variant: unknown stack profile 'nonexistent': "}}) {
      const auto r = run_cli({command, "--preset", "llama3-8b", "--set", set});
      EXPECT_EQ(r.code, 1);
      EXPECT_EQ(r.err.rfind("clustersim " + command + ": error: " + config + says, 0), 0u) << r.err;
    }
  }
}

// A config that cannot be opened says why: "cannot be read" alone left a missing file and a
// forbidden one alike.
TEST(NewUser, AMissingConfigSaysWhyItCannotBeRead) {
  const std::string missing = temp_path("missing.textproto");
  std::filesystem::remove(missing);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run"}, {"memory"}, {"sweep", "--vary", "parallel.dp=1"}}) {
    const std::string& command = args.front();
    std::vector<std::string> with_config = args;
    with_config.insert(with_config.begin() + 1, missing);
    const auto r = run_cli(with_config);
    EXPECT_NE(r.code, 0) << command;
    EXPECT_NE(r.err.find(missing + ": cannot open (No such file or directory)"), std::string::npos)
        << command << ": " << r.err;
  }
  // The same for a trace to replay, a Hugging Face config and a --comm-groups file.
  const std::string trace = temp_path("missing.pb");
  std::filesystem::remove(trace);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"replay", trace},
        {"run", "--preset", "llama3-8b", "--hf-config", trace},
        {"replay", "--chakra", trace, "--comm-groups", trace}}) {
    const auto r = run_cli(args);
    EXPECT_NE(r.code, 0) << args[0];
    EXPECT_NE(r.err.find(trace + ": cannot open (No such file or directory)"), std::string::npos)
        << args[0] << ": " << r.err;
  }
}

// A config need not name itself or its model: the heading began ": TP 1 x ...".
TEST(NewUser, AnUnnamedConfigsHeadingNamesItsModelOrSaysUnnamed) {
  const std::string model =
      "num_layers: 2 hidden_size: 256 num_heads: 4 ffn_hidden_size: 512 vocab_size: 1000 "
      "seq_length: 128";
  const std::string rest =
      "parallel { tp: 1 pp: 1 dp: 2 global_batch_size: 4 }\ncluster { topology: \"dgx-h100\" }\n";
  const std::string unnamed =
      testing_support::temp_file("unnamed.textproto", "model { " + model + " }\n" + rest);
  const auto r = run_cli({"run", unnamed});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("(unnamed): TP 1 x CP 1 x PP 1 x DP 2, ", 0), 0u) << r.out;
  const std::string model_named = testing_support::temp_file(
      "model_named.textproto", "model { name: \"tiny\" " + model + " }\n" + rest);
  const auto m = run_cli({"run", model_named});
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(m.out.rfind("tiny: TP 1 x CP 1 x PP 1 x DP 2, ", 0), 0u) << m.out;
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

// The numbers of "12.5%" items in `line`.
std::vector<double> percentages(const std::string& line) {
  std::vector<double> v;
  const std::regex pct(R"((-?[0-9.]+)%)");
  for (std::sregex_iterator it(line.begin(), line.end(), pct), end; it != end; ++it)
    v.push_back(std::stod((*it)[1]));
  return v;
}

std::string line_with(const std::string& text, const std::string& label) {
  const auto at = text.find(label);
  if (at == std::string::npos) return "";
  return text.substr(at, text.find('\n', at) - at);
}

TEST(NewUser, TheRunTableSaysWhereTheStepGoesAndWhyTheBubbleIsLarge) {
  const std::vector<std::string> pipeline = {
      "run",           "--preset", "llama3-8b",     "--set", "model.num_layers=8",          "--set",
      "parallel.pp=4", "--set",    "parallel.dp=1", "--set", "parallel.global_batch_size=8"};
  auto lopsided = pipeline;
  lopsided.insert(lopsided.end(), {"--set", "parallel.layers_per_stage=5,1,1,1"});
  const auto r = run_cli(lopsided);
  ASSERT_EQ(r.code, 0) << r.err;

  // The shares cover the step: compute, exposed comm, bubble and the rest add up to 100%.
  const std::string shares = line_with(r.out, "where the step goes");
  ASSERT_NE(shares, "") << r.out;
  EXPECT_NE(shares.find("compute "), std::string::npos);
  EXPECT_NE(shares.find("bubble "), std::string::npos);
  double sum = 0;
  for (double p : percentages(shares)) sum += p;
  EXPECT_NEAR(sum, 100, 0.6) << shares;

  // Stage 0 holds 5 of 8 layers: it is the slowest, and the suggested split must shorten the step.
  const std::string why = line_with(r.out, "bubble above formula");
  ASSERT_NE(why, "") << r.out;
  EXPECT_NE(why.find("stage 0 (5 layers)"), std::string::npos) << why;
  const std::smatch m = [&] {
    std::smatch found;
    std::regex_search(why, found, std::regex(R"(parallel\.layers_per_stage=([0-9,]+))"));
    return found;
  }();
  ASSERT_EQ(m.size(), 2u) << why;
  auto balanced = pipeline;
  balanced.insert(balanced.end(), {"--set", "parallel.layers_per_stage=" + m[1].str()});
  const auto before = json_of(lopsided), after = json_of(balanced), even = json_of(pipeline);
  EXPECT_LT(after.at("iteration_time_s").get<double>(),
            0.9 * before.at("iteration_time_s").get<double>());
  // The last stage's LM head makes the default even split slow too: the split beats it as well.
  EXPECT_LT(after.at("iteration_time_s").get<double>(),
            0.9 * even.at("iteration_time_s").get<double>());
  EXPECT_LT(after.at("bubble_fraction").get<double>(), before.at("bubble_fraction").get<double>());
}

TEST(NewUser, SideStreamKernelsAreShownBesideTheComputeShareNotInsideIt) {
  // FSDP2 copies gradients into its reduce-scatter buffer on a side stream, beside the backward's
  // kernels: counted inside the compute share, the shares would pass 100% ("other -4.6%").
  const auto args =
      small_run({"--set", "software_stack=PYTORCH_FSDP", "--set", "parallel.tp=1", "--set",
                 "parallel.sequence_parallel=false", "--set", "parallel.zero_stage=3"});
  const auto r = run_cli(args);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string shares = line_with(r.out, "where the step goes");
  const auto open = shares.find(" (side streams ");
  ASSERT_NE(open, std::string::npos) << shares;
  shares.erase(open, shares.find(')', open) + 1 - open);
  EXPECT_EQ(shares.find("other"), std::string::npos) << shares;
  double sum = 0;
  for (double p : percentages(shares)) sum += p;
  EXPECT_NEAR(sum, 100, 0.6) << shares;
  const auto stage = json_of(args).at("stages").at(0);
  EXPECT_GT(stage.at("side_stream_compute_s").get<double>(), 0);
  EXPECT_LT(stage.at("side_stream_compute_s").get<double>(), stage.at("compute_s").get<double>());
}

// The words of `line` after its "#N" label (run lines are printed without quotes here).
std::vector<std::string> words_after_label(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words.size() > 2 ? std::vector<std::string>(words.begin() + 2, words.end())
                          : std::vector<std::string>{};
}

TEST(NewUser, EachRankedLayoutComesWithARunLineThatReproducesIt) {
  const std::vector<std::string> plan = {
      "plan",   "--preset", "llama3-8b",  "--set",  "model.num_layers=4",
      "--gpus", "16",       "--simulate", "3",      "--refine",
      "2",      "--top",    "2",          "--jobs", "1",
      "--json", "-"};
  const auto r = run_cli(plan);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ranked = report::Json::parse(r.out).at("ranked");
  const auto at = r.err.find("to run them:\n");
  ASSERT_NE(at, std::string::npos) << r.err;
  std::istringstream lines(r.err.substr(at));
  std::string line;
  std::getline(lines, line);
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(std::getline(lines, line));
    EXPECT_EQ(line.rfind("  #" + std::to_string(i + 1) +
                             "  clustersim run --preset llama3-8b --set model.num_layers=4 --set ",
                         0),
              0u)
        << line;
    // The refined leaders were simulated congestion-aware, as `run` does: the same step.
    const auto words = words_after_label(line);
    ASSERT_EQ(words.front(), "run") << line;
    const auto ran = json_of(words);
    EXPECT_EQ(ran.at("iteration_time_s"), ranked.at(i).at("iteration_time_s")) << line;
    EXPECT_EQ(ran.at("gpus"), 16);
  }
}

TEST(NewUser, PlanReserveGbKeepsHbmFreeInTheFitsTest) {
  const auto fewest = [](const std::string& reserve) {
    return json_of({"plan", "--preset", "llama3-8b", "--min-gpus", "--reserve-gb", reserve});
  };
  const auto none = fewest("0"), half = fewest("40");
  ASSERT_GT(none.at("gpus").get<int>(), 0);
  EXPECT_GT(half.at("gpus").get<int>(), none.at("gpus").get<int>());
  EXPECT_LE(half.at("peak_memory_gb").get<double>(), none.at("capacity_gb").get<double>() - 40);
  // The step is named as everywhere else: iteration_time_s, here on the analytical network.
  EXPECT_GT(none.at("analytical_iteration_time_s").get<double>(), 0);
  EXPECT_FALSE(none.contains("analytical_step_s"));

  const auto negative =
      run_cli({"plan", "--preset", "llama3-8b", "--gpus", "8", "--reserve-gb", "-1"});
  EXPECT_EQ(negative.code, 2);
  EXPECT_NE(negative.err.find("--reserve-gb must not be negative"), std::string::npos)
      << negative.err;
}

// A reserve of all the HBM or more once refused every layout ("more than the -14.5 GB of HBM
// per GPU") and sent --min-gpus through every count up to 16,384 GPUs: refused up front instead,
// with the GPU's capacity.
TEST(NewUser, PlanRefusesAReserveOfTheWholeHbm) {
  const double hbm_gb =
      static_cast<double>(compute::hbm_capacity_bytes(compute::load_gpu_profile("h100"))) / 1e9;
  for (const auto& search : {std::vector<std::string>{"--gpus", "64"}, {"--min-gpus"}}) {
    // The whole HBM rounded up to a whole GB, and more (planner_test checks exactly all of it).
    for (const std::string& reserve : {number_text(std::ceil(hbm_gb)), std::string("100")}) {
      std::vector<std::string> args = {"plan", "--preset", "llama3-8b", "--reserve-gb", reserve};
      args.insert(args.end(), search.begin(), search.end());
      const auto r = run_cli(args);
      EXPECT_EQ(r.code, 2) << reserve << ": " << r.out << r.err;
      EXPECT_NE(
          r.err.find("--reserve-gb " + reserve + " GB leaves no HBM for any layout: one h100 has " +
                     number_text(hbm_gb) + " GB"),
          std::string::npos)
          << r.err;
      EXPECT_EQ(r.out, "");
    }
  }
}

}  // namespace
}  // namespace cs::cli
