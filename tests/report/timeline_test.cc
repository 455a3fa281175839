// Timelines: rank lists, default ranks, and traces whose events obey the streams' laws.
#include "sim/report/timeline.h"

#include <gtest/gtest.h>

#include <map>
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
  EXPECT_EQ(a.rfind("{\"displayTimeUnit\"", 0), 0u);
  EXPECT_NE(a.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(a.find("\"rank 0 (stage 0)\""), std::string::npos);
  EXPECT_NE(a.find("\"rank 2 (stage 1)\""), std::string::npos);
  EXPECT_NE(a.find("\"name\": \"compute\""), std::string::npos);
  EXPECT_NE(a.find("\"name\": \"pp send next\""), std::string::npos);
  EXPECT_NE(a.find("\"group\": \"tp\""), std::string::npos);
  EXPECT_NE(a.find("\"microbatch\": 3"), std::string::npos);
  // 4 layers over 2 stages: stage 0 runs layers 0-1, stage 1 layers 2-3, and no other.
  EXPECT_NE(a.find("\"layer\": 0"), std::string::npos);
  EXPECT_NE(a.find("\"layer\": 3"), std::string::npos);
  EXPECT_EQ(a.find("\"layer\": 4"), std::string::npos);
  EXPECT_NE(a.find("qkv_fwd mb 0 layer 2"), std::string::npos);
  // One "X" event per recorded op, one line each.
  std::size_t complete = 0;
  for (std::size_t pos = 0; (pos = a.find("\"ph\": \"X\"", pos)) != std::string::npos; ++pos)
    ++complete;
  EXPECT_EQ(complete, events);
  // Balanced braces and brackets: the file is one JSON value.
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const char c = a[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    ASSERT_GE(depth, 0);
  }
  EXPECT_EQ(depth, 0);
}

}  // namespace
}  // namespace cs::report
