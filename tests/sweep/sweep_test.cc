// Sweeps: the product of the axes, exact row round trips, order independent of threads and
// ranks, skipped invalid points, and the pipeline laws seen through sweep rows.
#include "sim/run/sweep.h"

#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <sstream>

#include "sim/config/config_error.h"
#include "sim/config/run_config.h"
#include "sim/run/sweep_output.h"
#include "tests/support/record_fields_check.h"

namespace cs::run {
namespace {

// Llama 3 8B's layer shapes on 4 pipeline stages, cut so a step takes milliseconds.
clustersim::RunConfig small() {
  return load_run_config(
             "", "llama3-8b",
             {"model.num_layers=8", "model.seq_length=1024", "model.vocab_size=1024",
              "parallel.tp=1", "parallel.pp=4", "parallel.dp=1", "parallel.global_batch_size=8"})
      .config;
}

std::string csv_of(const std::vector<SweepAxis>& axes, const std::vector<SweepRow>& rows) {
  std::ostringstream out;
  write_sweep_csv(out, axes, rows);
  return out.str();
}

std::string json_of(const std::vector<SweepAxis>& axes, const std::vector<SweepRow>& rows) {
  std::ostringstream out;
  write_sweep_json(out, "test", axes, rows);
  return out.str();
}

std::vector<std::size_t> all_points(const std::vector<SweepAxis>& axes) {
  std::vector<std::size_t> v(sweep_size(axes));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

TEST(SweepAxis, SplitsOnCommasOrOnSemicolonsWhenPresent) {
  const auto a = parse_sweep_axis("parallel.schedule=GPIPE,ONE_F_ONE_B");
  EXPECT_EQ(a.field, "parallel.schedule");
  EXPECT_EQ(a.values, (std::vector<std::string>{"GPIPE", "ONE_F_ONE_B"}));
  const auto b = parse_sweep_axis("parallel.layers_per_stage=4,4;2,6");
  EXPECT_EQ(b.values, (std::vector<std::string>{"4,4", "2,6"}));
  EXPECT_THROW(parse_sweep_axis("parallel.pp"), ConfigError);
  EXPECT_THROW(parse_sweep_axis("=1,2"), ConfigError);
  EXPECT_THROW(parse_sweep_axis("parallel.pp=1,,2"), ConfigError);
}

TEST(SweepAxis, MisspeltFieldsAndValuesFailBeforeAnySimulation) {
  EXPECT_THROW(check_sweep_axes(small(), {parse_sweep_axis("parallel.ppp=1,2")}), ConfigError);
  EXPECT_THROW(check_sweep_axes(small(), {parse_sweep_axis("parallel.schedule=GPIPE,FOO")}),
               ConfigError);
  EXPECT_NO_THROW(check_sweep_axes(small(), {parse_sweep_axis("parallel.schedule=GPIPE,ZB_H1")}));
}

// The refusal names the option the field came with: "--set" sent a user looking for a --set
// they never gave.
TEST(SweepAxis, AMisspeltFieldOrValueNamesVary) {
  const auto refusal = [](const std::string& axis) {
    try {
      check_sweep_axes(small(), {parse_sweep_axis(axis)});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(
      refusal("parallel.foo=1,2").rfind("--vary parallel.foo: no field 'foo' in ParallelConfig", 0),
      0u)
      << refusal("parallel.foo=1,2");
  EXPECT_EQ(refusal("parallel.tp=1,x"), "--vary parallel.tp: 'x' is not an integer");
}

// Eight axes of ten values: 10^8 points once started and ran for days; refused up front.
TEST(SweepAxis, AProductAboveTheLimitIsRefusedBeforeAnySimulation) {
  std::vector<SweepAxis> axes;
  for (const char* field :
       {"microbatch_size", "global_batch_size", "tp", "pp", "dp", "cp", "ep", "virtual_stages"})
    axes.push_back(parse_sweep_axis(std::string("parallel.") + field + "=1,2,3,4,5,6,7,8,9,10"));
  try {
    check_sweep_axes(small(), axes);
    ADD_FAILURE() << "10^8 points accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 100000 points"), std::string::npos) << e.what();
  }
  // Exactly at the limit is accepted (only checked, not run).
  axes.resize(5);
  EXPECT_NO_THROW(check_sweep_axes(small(), axes));
}

TEST(SweepPoints, TheProductHoldsEveryCombinationOnceLastAxisFastest) {
  const std::vector<SweepAxis> axes = {{"a", {"1", "2", "3"}}, {"b", {"x", "y"}}, {"c", {"p"}}};
  ASSERT_EQ(sweep_size(axes), 6u);
  std::set<std::vector<std::string>> seen;
  for (std::size_t i = 0; i < sweep_size(axes); ++i) seen.insert(sweep_point(axes, i));
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(sweep_point(axes, 0), (std::vector<std::string>{"1", "x", "p"}));
  EXPECT_EQ(sweep_point(axes, 1), (std::vector<std::string>{"1", "y", "p"}));
  EXPECT_EQ(sweep_point(axes, 2), (std::vector<std::string>{"2", "x", "p"}));
  EXPECT_EQ(sweep_size({}), 1u);
}

TEST(SweepRows, SerializeRoundTripsExactly) {
  SweepRow r;
  r.index = 41;
  r.values = {"a\tb", "back\\slash", "new\nline", ""};
  r.error = "";
  r.layout = "TP 8 x CP 1 x PP 16 x DP 128, SP, ZeRO-1";
  r.schedule = "ONE_F_ONE_B";
  r.gpus = 16384;
  r.microbatches = 16;
  r.iteration_time_s = 0.1 + 0.2;
  r.tokens_per_s = 1e300;
  r.mfu = std::numeric_limits<double>::denorm_min();
  r.bubble_fraction = 1.0 / 3.0;
  r.analytic_bubble_fraction = -0.0;
  r.exposed_s[static_cast<std::size_t>(workload::Dim::kDp)] = 123456.789e-9;
  r.peak_memory_gb = 79.99999999999999;
  r.in_flight_microbatches = 7;
  r.fits = true;
  const SweepRow back = parse_sweep_row(serialize_sweep_row(r));
  EXPECT_EQ(serialize_sweep_row(back), serialize_sweep_row(r));
  EXPECT_EQ(back.values, r.values);
  EXPECT_EQ(back.layout, r.layout);
  EXPECT_EQ(back.iteration_time_s, r.iteration_time_s);
  EXPECT_EQ(back.tokens_per_s, r.tokens_per_s);
  EXPECT_EQ(back.mfu, r.mfu);
  EXPECT_EQ(back.bubble_fraction, r.bubble_fraction);
  EXPECT_EQ(back.peak_memory_gb, r.peak_memory_gb);
  EXPECT_TRUE(back.fits);
  EXPECT_EQ(serialize_sweep_row(r).find('\n'), std::string::npos);

  SweepRow bad;
  bad.values = {"INTERLEAVED"};
  bad.error = "cfg: parallel.global_batch_size:\tnot a multiple";
  EXPECT_EQ(parse_sweep_row(serialize_sweep_row(bad)).error, bad.error);
  EXPECT_THROW(parse_sweep_row("1\t2\tonly"), std::invalid_argument);
}

TEST(SweepRows, EveryFigureOfTheTableCrossesTheWireExactly) {
  SweepRow r;
  r.index = 7;
  r.values = {"x"};
  testing_support::fill_every_field(sweep_fields(), r);
  SweepRow back = parse_sweep_row(serialize_sweep_row(r));
  EXPECT_EQ(testing_support::first_difference(sweep_fields(), r, back), "");
}

TEST(SweepOutput, TheCsvHeaderIsTheAxesThenTheTable) {
  const std::vector<SweepAxis> axes = {parse_sweep_axis("parallel.schedule=GPIPE")};
  std::string expected = "parallel.schedule";
  for (const auto& c : report::csv_columns(sweep_fields())) expected += ',' + c;
  const std::string csv = csv_of(axes, {});
  EXPECT_EQ(csv, expected + '\n');
  // The step is named as `run` names it.
  EXPECT_NE(csv.find(",iteration_time_s,"), std::string::npos);
  EXPECT_EQ(csv.find("step_time_s"), std::string::npos);
}

TEST(SweepRun, OutputIsTheSameForAnyThreadCountAndAnySplitOverRanks) {
  const std::vector<SweepAxis> axes = {
      parse_sweep_axis("parallel.schedule=GPIPE,ONE_F_ONE_B,INTERLEAVED,ZB_H1"),
      parse_sweep_axis("parallel.global_batch_size=4,6,8")};
  const auto base = small();
  const auto serial = run_sweep_points(base, "test", axes, all_points(axes), 1);
  const auto threaded = run_sweep_points(base, "test", axes, all_points(axes), 3);
  EXPECT_EQ(csv_of(axes, serial), csv_of(axes, threaded));
  EXPECT_EQ(json_of(axes, serial), json_of(axes, threaded));

  // What rank 0 does under mpirun: two ranks take alternate points, rows travel as text.
  std::vector<SweepRow> merged(sweep_size(axes));
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::size_t> mine;
    for (std::size_t i = static_cast<std::size_t>(rank); i < merged.size(); i += 2)
      mine.push_back(i);
    for (const auto& row : run_sweep_points(base, "test", axes, mine, 2)) {
      auto back = parse_sweep_row(serialize_sweep_row(row));
      merged[back.index] = std::move(back);
    }
  }
  EXPECT_EQ(csv_of(axes, serial), csv_of(axes, merged));
  EXPECT_EQ(json_of(axes, serial), json_of(axes, merged));
}

TEST(SweepRun, InvalidPointsAreSkippedWithTheirReason) {
  // Interleaving needs m % p == 0 (m = 6, p = 4 is not) and virtual stages; GPipe runs anyway.
  const std::vector<SweepAxis> axes = {parse_sweep_axis("parallel.schedule=GPIPE,INTERLEAVED"),
                                       parse_sweep_axis("parallel.global_batch_size=6,8"),
                                       parse_sweep_axis("parallel.virtual_stages=2")};
  const auto rows = run_sweep_points(small(), "base.textproto", axes, all_points(axes), 2);
  ASSERT_EQ(rows.size(), 4u);
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].index, i);
  // GPipe with 2 virtual stages is not a layout; interleaved with m = 6 on 4 stages is not either.
  EXPECT_FALSE(rows[0].ok());
  EXPECT_FALSE(rows[1].ok());
  EXPECT_FALSE(rows[2].ok());
  EXPECT_NE(rows[2].error.find("base.textproto"), std::string::npos) << rows[2].error;
  EXPECT_TRUE(rows[3].ok()) << rows[3].error;
  EXPECT_GT(rows[3].iteration_time_s, 0);

  const std::string csv = csv_of(axes, rows);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2);  // header + the one valid point
  const std::string json = json_of(axes, rows);
  EXPECT_NE(json.find("\"skipped\""), std::string::npos);
  EXPECT_NE(json.find("\"error\""), std::string::npos);
  std::ostringstream table;
  print_sweep_table(table, axes, rows);
  EXPECT_NE(table.str().find("skipped parallel.schedule=INTERLEAVED"), std::string::npos);
}

TEST(SweepRun, GpipeAnd1F1BShareTheBubbleButNotTheActivations) {
  // Free communication: both bubbles follow (p-1)/(m+p-1); GPipe holds all m microbatches'
  // activations at its peak, 1F1B at most p. (The formula leaves out the optimizer step, which
  // the measured step includes; with m >= 2p that costs less than the tolerance.)
  const std::vector<SweepAxis> axes = {parse_sweep_axis("parallel.schedule=GPIPE,ONE_F_ONE_B"),
                                       parse_sweep_axis("parallel.global_batch_size=8,16,32")};
  auto base = small();
  base.set_network(clustersim::IDEAL);
  const auto rows = run_sweep_points(base, "test", axes, all_points(axes), 2);
  for (std::size_t k = 0; k < 3; ++k) {
    const SweepRow& gpipe = rows[k];
    const SweepRow& one_f_one_b = rows[3 + k];
    ASSERT_TRUE(gpipe.ok() && one_f_one_b.ok());
    const int m = gpipe.microbatches;
    EXPECT_DOUBLE_EQ(gpipe.analytic_bubble_fraction, 3.0 / (m + 3));
    EXPECT_NEAR(gpipe.bubble_fraction, gpipe.analytic_bubble_fraction, 0.03) << m;
    EXPECT_NEAR(one_f_one_b.bubble_fraction, one_f_one_b.analytic_bubble_fraction, 0.03) << m;
    EXPECT_EQ(gpipe.in_flight_microbatches, m);
    EXPECT_EQ(one_f_one_b.in_flight_microbatches, std::min(m, 4));
    EXPECT_LE(one_f_one_b.activations_gb, gpipe.activations_gb);
    EXPECT_EQ(gpipe.exposed_s[static_cast<std::size_t>(workload::Dim::kPp)], 0);
  }
  // More microbatches, smaller bubble.
  EXPECT_GT(rows[0].bubble_fraction, rows[1].bubble_fraction);
  EXPECT_GT(rows[1].bubble_fraction, rows[2].bubble_fraction);
}

}  // namespace
}  // namespace cs::run
