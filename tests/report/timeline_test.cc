// Timelines: rank lists, default ranks, and traces whose events obey the streams' laws.
#include "sim/report/timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "sim/config/run_config.h"
#include "sim/run/step_simulation.h"
#include "sim/run/timeline_options.h"

namespace cs::report {
namespace {

using workload::OpKind;
using workload::Stream;

TEST(RankList, RangesAndSinglesSortedAndDistinct) {
  EXPECT_EQ(parse_rank_list("0-3,7,2", 16), (std::vector<int32_t>{0, 1, 2, 3, 7}));
  EXPECT_EQ(parse_rank_list("5", 16), (std::vector<int32_t>{5}));
  EXPECT_THROW(parse_rank_list("3-1", 16), std::invalid_argument);
  EXPECT_THROW(parse_rank_list("16", 16), std::invalid_argument);
  EXPECT_THROW(parse_rank_list("a", 16), std::invalid_argument);
  EXPECT_THROW(parse_rank_list("1,,2", 16), std::invalid_argument);
  EXPECT_THROW(parse_rank_list("-1", 16), std::invalid_argument);
}

TEST(RankList, DefaultIsTheFirstRankOfEachStage) {
  // Llama 3 405B's layout: 16,384 GPUs, 16 ranks in the default timeline.
  const workload::Layout layout(8, 1, 16, 128);
  const auto ranks = default_timeline_ranks(layout);
  ASSERT_EQ(ranks.size(), 16u);
  for (std::size_t s = 0; s < ranks.size(); ++s) {
    EXPECT_EQ(layout.coord(ranks[s], workload::Dim::kPp), static_cast<int32_t>(s));
    EXPECT_EQ(layout.coord(ranks[s], workload::Dim::kDp), 0);
    EXPECT_EQ(layout.coord(ranks[s], workload::Dim::kTp), 0);
  }
  EXPECT_EQ(ranks.front(), 0);
}

struct Recorded {
  int32_t rank;
  Stream stream;
  OpKind kind;
  Time start, end;
};

class TimelineRun : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = load_run_config("", "llama3-8b",
                              {"model.num_layers=4", "model.seq_length=1024", "parallel.tp=2",
                               "parallel.pp=2", "parallel.dp=2", "parallel.global_batch_size=8"})
                  .config;
  }
  clustersim::RunConfig config_;
};

TEST_F(TimelineRun, StreamsRunOneOpAtATimeAndComputeAddsUpToTheReport) {
  const workload::Layout layout(2, 1, 2, 2);
  Timeline timeline(layout, {0, 2, 4});
  std::vector<Recorded> seen;
  auto options = run::with_timeline(timeline);
  auto record = options.on_op;
  options.on_op = [&](int32_t rank, const workload::Program& program, uint32_t op, Time start,
                      Time end) {
    record(rank, program, op, start, end);
    const auto& o = program.ops[op];
    seen.push_back({rank, o.stream, o.kind, start, end});
  };
  const auto report = run::simulate_step(config_, "test", options);
  ASSERT_EQ(timeline.size(), seen.size());
  ASSERT_GT(seen.size(), 0u);

  std::map<std::pair<int32_t, Stream>, std::vector<Recorded>> by_stream;
  std::map<int32_t, double> compute_s;
  for (const auto& e : seen) {
    EXPECT_TRUE(e.rank == 0 || e.rank == 2 || e.rank == 4) << e.rank;
    EXPECT_LE(e.start, e.end);
    EXPECT_LE(e.end.as_seconds(), report.iteration_time_s * (1 + 1e-12));
    by_stream[{e.rank, e.stream}].push_back(e);
    if (e.kind == OpKind::kCompute) compute_s[e.rank] += (e.end - e.start).as_seconds();
  }
  // A stream is in order, like a CUDA stream: its ops never overlap.
  for (auto& [key, events] : by_stream) {
    std::sort(events.begin(), events.end(),
              [](const Recorded& a, const Recorded& b) { return a.start < b.start; });
    for (std::size_t i = 1; i < events.size(); ++i)
      EXPECT_LE(events[i - 1].end, events[i].start) << "rank " << key.first;
  }
  // Rank = tp + 2 pp + 4 dp: ranks 0 and 4 are stage 0 (DP peers run the same program), rank 2
  // is stage 1.
  EXPECT_NEAR(compute_s[0], compute_s[4], 1e-12);
  // Kernels on a timeline last what they ran: alone, plus what communication beside them cost.
  for (const auto& [rank, stage] : {std::pair{0, 0}, std::pair{2, 1}}) {
    const auto& f = report.stages[static_cast<std::size_t>(stage)];
    EXPECT_NEAR(compute_s[rank], f.compute_s + f.interference_s, 1e-6 * f.compute_s);
  }
}

TEST_F(TimelineRun, TraceJsonIsDeterministicAndNamesRanksAndStreams) {
  const workload::Layout layout(2, 1, 2, 2);
  auto trace = [&] {
    Timeline timeline(layout, default_timeline_ranks(layout));
    run::simulate_step(config_, "test", run::with_timeline(timeline));
    std::ostringstream out;
    timeline.write_json(out);
    return std::make_pair(out.str(), timeline.size());
  };
  const auto [a, events] = trace();
  const auto [b, events_b] = trace();
  EXPECT_EQ(a, b);
  EXPECT_EQ(events, events_b);
  const auto doc = nlohmann::json::parse(a);  // throws, failing the test, unless valid JSON
  EXPECT_EQ(doc.at("displayTimeUnit"), "ns");
  std::set<std::string> process_names, thread_names, groups;
  std::set<int> microbatches, layers;
  std::size_t complete = 0;
  for (const auto& e : doc.at("traceEvents")) {
    const std::string name = e.at("name");
    if (name == "process_name") process_names.insert(e.at("args").at("name").get<std::string>());
    if (name == "thread_name") thread_names.insert(e.at("args").at("name").get<std::string>());
    if (e.at("ph") != "X") continue;
    ++complete;
    EXPECT_GE(e.at("ts").get<double>(), 0) << e;
    EXPECT_GE(e.at("dur").get<double>(), 0) << e;
    const auto& args = e.at("args");
    if (args.contains("group")) groups.insert(args.at("group").get<std::string>());
    if (args.contains("microbatch")) microbatches.insert(args.at("microbatch").get<int>());
    if (args.contains("layer")) layers.insert(args.at("layer").get<int>());
    if (name == "qkv_fwd mb 0 layer 2") {
      EXPECT_EQ(args.at("layer"), 2);
    }
  }
  EXPECT_TRUE(process_names.count("rank 0 (stage 0)"));
  EXPECT_TRUE(process_names.count("rank 2 (stage 1)"));
  EXPECT_TRUE(thread_names.count("compute"));
  EXPECT_TRUE(thread_names.count("pp send next"));
  EXPECT_TRUE(groups.count("tp"));
  EXPECT_TRUE(microbatches.count(3));
  // 4 layers over 2 stages: stage 0 runs layers 0-1, stage 1 layers 2-3, and no other.
  EXPECT_EQ(layers, (std::set<int>{0, 1, 2, 3}));
  EXPECT_NE(a.find("qkv_fwd mb 0 layer 2"), std::string::npos);
  // One "X" event per recorded op.
  EXPECT_EQ(complete, events);
  // One event per line: every line but the two opening ones and the closing one is an object.
  std::istringstream lines(a);
  std::string line;
  std::size_t objects = 0;
  for (int i = 0; std::getline(lines, line); ++i) {
    if (i < 2 || line == "]}") continue;
    if (line.back() == ',') line.pop_back();
    EXPECT_TRUE(nlohmann::json::parse(line).is_object()) << line;
    ++objects;
  }
  EXPECT_EQ(objects, doc.at("traceEvents").size());
}

TEST_F(TimelineRun, TimesPrintAsExactDecimalMicroseconds) {
  const workload::Layout layout(2, 1, 2, 2);
  Timeline timeline(layout, default_timeline_ranks(layout));
  const auto report = run::simulate_step(config_, "test", run::with_timeline(timeline));
  std::ostringstream out;
  timeline.write_json(out);
  std::istringstream lines(out.str());
  std::string line;
  double last_end_us = 0;
  std::size_t complete = 0;
  while (std::getline(lines, line)) {
    if (line.find(R"("ph": "X")") == std::string::npos) continue;
    ++complete;
    // As printed, not as a re-print of the parsed double: integer picoseconds are at most six
    // decimals of a microsecond, never an exponent or a 17-digit neighbour.
    for (const std::string key : {R"("ts": )", R"("dur": )"}) {
      const std::size_t start = line.find(key) + key.size();
      const std::string text = line.substr(start, line.find(',', start) - start);
      const std::size_t dot = text.find('.');
      EXPECT_TRUE(dot == std::string::npos || text.size() - dot <= 7) << text;
      EXPECT_EQ(text.find_first_not_of("0123456789."), std::string::npos) << text;
    }
    if (line.back() == ',') line.pop_back();
    const auto e = nlohmann::json::parse(line);
    last_end_us = std::max(last_end_us, e.at("ts").get<double>() + e.at("dur").get<double>());
  }
  EXPECT_EQ(complete, timeline.size());
  // The recorded ranks include the last stage, whose optimizer step ends the step.
  EXPECT_GT(last_end_us, 0.5 * report.iteration_time_s * 1e6);
  EXPECT_LE(last_end_us, report.iteration_time_s * 1e6 * (1 + 1e-12));
}

}  // namespace
}  // namespace cs::report
