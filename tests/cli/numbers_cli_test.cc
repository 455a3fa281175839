// Inputs of issue 26 (points 3 and 4) through the command line: each refused with a message that
// names the option or field and the reason, or, where it is valid, run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/test_helpers.h"

namespace cs {
namespace {

using testing_support::run_cli;

// The run fails (exit 1 or 2) and stderr holds `needle`.
void expect_refused(const std::vector<std::string>& args, const std::string& needle) {
  const auto r = run_cli(args);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr: " << r.err;
}

const std::vector<std::string> kSmall = {"--preset",           "llama3-8b", "--set",
                                         "model.num_layers=2", "--set",     "network=IDEAL"};

std::vector<std::string> small_run(std::vector<std::string> more) {
  std::vector<std::string> a = {"run"};
  a.insert(a.end(), kSmall.begin(), kSmall.end());
  for (auto& m : more) {
    a.push_back("--set");
    a.push_back(m);
  }
  return a;
}

TEST(NumbersCli, NvlsIsRefusedWhereNcclCannotRunIt) {
  expect_refused(
      {"collective", "--gpus", "8", "--algo", "nvls", "--topology", "dgx-a100", "--sizes", "1G"},
      "has no NVLink SHARP");
  expect_refused({"collective", "--gpus", "8", "--algo", "nvls", "--nvls", "off", "--topology",
                  "dgx-h100", "--sizes", "1G"},
                 "NVLS switched off");
  // NCCL has no LL or LL128 kernel for NVLS, NVLS-tree or PAT: forced together, nothing runs.
  expect_refused({"collective", "--gpus", "16", "--algo", "nvls_tree", "--protocol", "ll",
                  "--topology", "dgx-h100", "--sizes", "1M"},
                 "nvls_tree runs with NCCL's simple protocol only, not ll");
  expect_refused({"collective", "--gpus", "16", "--gpus-per-node", "1", "--op", "all_gather",
                  "--algo", "pat", "--protocol", "ll128", "--sizes", "1M"},
                 "pat runs with NCCL's simple protocol only, not ll128");
  // Where it exists it runs.
  EXPECT_EQ(run_cli({"collective", "--gpus", "8", "--algo", "nvls", "--topology", "dgx-h100",
                     "--sizes", "1G"})
                .code,
            0);
  EXPECT_EQ(run_cli({"collective", "--gpus", "8", "--algo", "nvls", "--protocol", "simple",
                     "--sizes", "1G"})
                .code,
            0);
}

TEST(NumbersCli, AFieldVariedTwiceIsRefused) {
  expect_refused(
      {"sweep", "--preset", "llama3-8b", "--vary", "parallel.tp=1,2", "--vary", "parallel.tp=4,8"},
      "--vary parallel.tp is given twice");
}

TEST(NumbersCli, PlanFlagsOutOfRangeAreRefused) {
  expect_refused({"plan", "--preset", "llama3-8b", "--gpus", "8", "--price-per-gpu-hour", "-3"},
                 "--price-per-gpu-hour must be in (0, 1e6]");
  expect_refused({"plan", "--preset", "llama3-8b", "--gpus", "8", "--train-tokens", "-1e12"},
                 "--train-tokens must be in (0, 1e18]");
  expect_refused({"plan", "--preset", "llama3-8b", "--min-gpus", "--max-gpus", "-1"},
                 "--max-gpus must be positive");
  expect_refused({"plan", "--preset", "llama3-8b", "--gpus", "8", "--simulate", "-1"},
                 "--simulate must not be negative");
}

TEST(NumbersCli, OverflowingProductsNameTheFieldThatOverflows) {
  expect_refused(small_run({"parallel.gradient_accumulation_steps=2147483647"}),
                 "parallel.gradient_accumulation_steps must be in [0, 65536]");
  expect_refused(small_run({"nccl.channels=2147483647"}), "nccl.channels must be in [0, 64]");
}

TEST(NumbersCli, CostAndReliabilityOutOfRangeAreRefused) {
  expect_refused(small_run({"cost.train_tokens=-1"}), "cost.train_tokens must be > 0");
  expect_refused(small_run({"cost.price_per_gpu_hour=nan"}), "cost.price_per_gpu_hour must be in");
  // 1e308 shows as 1e+308, not as 309 digits.
  const auto r = run_cli(small_run({"reliability.restart_s=1e308"}));
  EXPECT_NE(r.err.find("the run never finishes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reliability.restart_s = 1e+308 s"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("00000000000"), std::string::npos) << r.err;
}

TEST(NumbersCli, SilentReplacementsAreRefused) {
  for (const char* v : {"-1", "nan", "1", "1e308"})
    expect_refused(small_run({std::string("model.hidden_dropout=") + v}),
                   "model.hidden_dropout must be in [0, 1)");
  for (const char* v : {"0", "-1", "nan"})
    expect_refused(
        small_run({"offload.optimizer=CPU", std::string("offload.pcie_bandwidth_gbytes=") + v}),
        "offload.pcie_bandwidth_gbytes must be > 0");
}

TEST(NumbersCli, ASlowGpuCannotBeFasterThanAFastOne) {
  for (const char* speed : {"1e-12", "1e-300", "0"})
    expect_refused(small_run({"parallel.dp=2", "parallel.global_batch_size=2",
                              "variability.gpu_speed.slow_ranks=1",
                              std::string("variability.gpu_speed.slow_speeds=") + speed}),
                   "variability.gpu_speed.slow_speeds[0] = ");
}

TEST(NumbersCli, TheWholeUnsignedRangeOfASeedIsAccepted) {
  EXPECT_EQ(run_cli(small_run({"variability.seed=18446744073709551615"})).code, 0);
  expect_refused(small_run({"variability.seed=18446744073709551616"}), "out of range");
  expect_refused(small_run({"variability.seed=-1"}), "is negative; this field is unsigned");
}

TEST(NumbersCli, ADirectoryAsConfigIsNamedAsSuch) {
  const std::string dir = testing_support::temp_path("");
  expect_refused({"run", dir}, "is a directory, not a regular file");
}

}  // namespace
}  // namespace cs
