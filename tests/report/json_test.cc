// Report JSON: the layout of write_document, its number forms, and that every value reads back.
#include "sim/report/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "sim/config/run_config.h"
#include "sim/report/step_report.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/dims.h"

namespace cs::report {
namespace {

std::string document(Json doc) {
  std::ostringstream out;
  write_document(out, std::move(doc));
  return out.str();
}

TEST(JsonDocument, TwoSpaceIndentKeysInInsertionOrderAndAFinalNewline) {
  const Json doc = {{"zeta", 1},
                    {"alpha", {{"list", {1, 2}}, {"empty_list", Json::array()}}},
                    {"empty", Json::object()}};
  EXPECT_EQ(document(doc),
            "{\n"
            "  \"zeta\": 1,\n"
            "  \"alpha\": {\n"
            "    \"list\": [\n"
            "      1,\n"
            "      2\n"
            "    ],\n"
            "    \"empty_list\": []\n"
            "  },\n"
            "  \"empty\": {}\n"
            "}\n");
}

TEST(JsonDocument, DoublesPrintInTheirShortestRoundTripForm) {
  // std::to_chars: the shortest text that reads back to the same double (the closest one of
  // those), in fixed or scientific notation, whichever is shorter.
  const Json doc = {4.0,  -3.0,  1e5,  123456.0, 0.1,  1.0 / 3,           2.5e-7,
                    1e-4, 1e300, -0.0, 0.3,      1e15, 9007199254740993.0};
  EXPECT_EQ(one_line(doc),
            "[4, -3, 1e+05, 123456, 0.1, 0.3333333333333333, 2.5e-07, 1e-04, 1e+300, -0, 0.3, "
            "1e+15, 9007199254740992]");
}

TEST(JsonDocument, IntegersPrintExactlyWhateverTheirType) {
  const Json doc = {int64_t{-7},
                    std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<uint64_t>::max(),
                    0,
                    true,
                    false,
                    nullptr};
  EXPECT_EQ(one_line(doc),
            "[-7, -9223372036854775808, 18446744073709551615, 0, true, false, null]");
}

TEST(JsonDocument, NonFiniteNumbersAreNullSoTheFileStaysJson) {
  const Json doc = {{"nan", std::nan("")},
                    {"inf", std::numeric_limits<double>::infinity()},
                    {"minus_inf", -std::numeric_limits<double>::infinity()}};
  const auto back = Json::parse(document(doc));
  EXPECT_TRUE(back.at("nan").is_null());
  EXPECT_TRUE(back.at("inf").is_null());
  EXPECT_TRUE(back.at("minus_inf").is_null());
}

TEST(JsonDocument, StringsAreEscapedAndInvalidUtf8IsReplaced) {
  const std::string tricky = "quote \" backslash \\ newline \n tab \t bell \x07 é";
  const Json doc = {{"s", tricky},
                    {"key \"quoted\"", 1},
                    {"bad", std::string("a\xff"
                                        "b")}};
  const std::string text = document(doc);
  EXPECT_NE(text.find(R"(quote \" backslash \\ newline \n tab \t bell \u0007 é)"),
            std::string::npos)
      << text;
  const auto back = Json::parse(text);
  EXPECT_EQ(back.at("s"), tricky);
  EXPECT_NE(text.find(R"("key \"quoted\"": 1)"), std::string::npos) << text;
  EXPECT_EQ(back.at("bad"),
            "a\xef\xbf\xbd"
            "b");  // U+FFFD
}

TEST(JsonDocument, EveryDoubleReadsBackBitForBitAndPrintsTheSameTwice) {
  std::mt19937_64 random(12);
  std::uniform_real_distribution<double> exponent(-30, 30);
  Json values = Json::array();
  std::vector<double> expected;
  for (int i = 0; i < 5000; ++i) {
    const double x = std::pow(10.0, exponent(random)) * (i % 2 ? -1 : 1);
    values.push_back(x);
    expected.push_back(x);
  }
  const std::string text = document(values);
  EXPECT_EQ(text, document(values));
  const auto back = Json::parse(text);
  ASSERT_EQ(back.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(back[i].get<double>(), expected[i]) << back[i].dump();
}

TEST(JsonDocument, OneLineHasNoNewlineAndReadsBack) {
  const Json event = {{"ph", "X"}, {"ts", 12.5}, {"args", {{"layer", 3}}}};
  const std::string line = one_line(event);
  EXPECT_EQ(line, R"({"ph": "X", "ts": 12.5, "args": {"layer": 3}})");
  EXPECT_EQ(Json::parse(line), event);
}

TEST(JsonDocument, AStepReportIsStableAndReadsBackFieldForField) {
  const auto config =
      load_run_config("", "llama3-8b",
                      {"model.num_layers=4", "model.seq_length=1024", "parallel.tp=2",
                       "parallel.pp=2", "parallel.dp=2", "parallel.global_batch_size=8"})
          .config;
  const StepReport r = run::simulate_step(config, "test");
  std::ostringstream a, b;
  write_json(a, r, /*include_host=*/false);
  write_json(b, r, /*include_host=*/false);
  EXPECT_EQ(a.str(), b.str());
  const auto doc = nlohmann::json::parse(a.str());
  EXPECT_EQ(doc.at("name"), r.name);
  EXPECT_EQ(doc.at("layout"), r.layout);
  EXPECT_EQ(doc.at("gpus"), r.gpus);
  // Shortest round-trip numbers: every double reads back bit for bit.
  EXPECT_EQ(doc.at("iteration_time_s").get<double>(), r.iteration_time_s);
  EXPECT_EQ(doc.at("mfu").get<double>(), r.mfu);
  EXPECT_EQ(doc.at("model_flops_per_step").get<double>(), r.model_flops_per_step);
  ASSERT_EQ(doc.at("stages").size(), r.stages.size());
  for (std::size_t s = 0; s < r.stages.size(); ++s) {
    EXPECT_EQ(doc.at("stages")[s].at("stage"), s);
    EXPECT_EQ(doc.at("stages")[s].at("compute_s").get<double>(), r.stages[s].compute_s);
  }
  for (const auto& d : workload::kDims)
    EXPECT_EQ(doc.at("comm_bytes").at("by_dim").at(std::string(d.key)).get<double>(),
              r.comm_bytes_by_dim[static_cast<std::size_t>(d.dim)]);
  EXPECT_EQ(doc.at("memory").at("peak_gb").get<double>(), r.memory.peak_gb);
  EXPECT_EQ(doc.at("cost").at("dollars").get<double>(), r.cost.dollars);
  EXPECT_FALSE(doc.contains("wall_time_s"));
  // The report's key order is the order it was written in.
  EXPECT_EQ(a.str().rfind("{\n  \"name\": ", 0), 0u);
}

}  // namespace
}  // namespace cs::report
