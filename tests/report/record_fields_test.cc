// Field tables: every output of a record follows its table (CSV columns, JSON keys and shapes,
// terminal cells), and the MPI wire form gives back every figure exactly.
#include "sim/report/record_fields.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "sim/cost/failure_causes.h"
#include "sim/workload/dims.h"
#include "tests/support/record_fields_check.h"

namespace cs::report {
namespace {

struct Toy {
  std::string name;
  int32_t count = 0;
  bool ok = false;
  double seconds = 0, bytes = 0;
  workload::DimSeconds exposed{};
  std::array<double, cost::kNumFailureCauses> causes{};
};

using Ref = FieldRef;
const Field<Toy> kToy[] = {
    {.key = "name", .at = [](Toy& t) -> Ref { return &t.name; }},
    {.key = "count", .at = [](Toy& t) -> Ref { return &t.count; }, .label = "n"},
    {.key = "ok", .at = [](Toy& t) -> Ref { return &t.ok; }, .label = "ok"},
    {.key = "seconds",
     .at = [](Toy& t) -> Ref { return &t.seconds; },
     .label = "share",
     .digits = 1,
     .percent = true},
    {.key = "gb", .at = [](Toy& t) -> Ref { return &t.bytes; }, .shown = kCsv | kJson, .unit = 1e9},
    {.key = "exposed",
     .at = [](Toy& t) -> Ref { return t.exposed.data(); },
     .parts = Parts::kDims,
     .column = "exposed_{}_s",
     .label = "exp {}",
     .digits = 2},
    {.key = "causes",
     .at = [](Toy& t) -> Ref { return t.causes.data(); },
     .shown = kWire | kJson | kFlatJson,
     .parts = Parts::kCauses,
     .column = "cause_{}"},
};
const std::span<const Field<Toy>> kTable = kToy;

TEST(RecordFields, TheWireGivesBackEveryFigureExactly) {
  Toy t;
  testing_support::fill_every_field(kTable, t);
  WireWriter w;
  write_wire(w, kTable, t);
  const std::string line = w.take();
  EXPECT_EQ(line.find('\n'), std::string::npos);
  Toy back;
  WireReader in(line);
  read_wire(in, kTable, back);
  // `bytes` is not on the wire: every other figure comes back, bit for bit.
  back.bytes = t.bytes;
  EXPECT_EQ(testing_support::first_difference(kTable, t, back), "");
  EXPECT_THROW(
      {
        WireReader short_line("name\t1");
        read_wire(short_line, kTable, back);
      },
      std::invalid_argument);
}

TEST(RecordFields, CsvColumnsFollowTheTableAndDimensionsExpand) {
  std::vector<std::string> expected = {"name", "count", "ok", "seconds", "gb"};
  for (const auto& d : workload::kDims) expected.push_back("exposed_" + std::string(d.key) + "_s");
  EXPECT_EQ(csv_columns(kTable), expected);
  Toy t;
  t.name = "a,b";
  t.count = 3;
  t.ok = true;
  t.seconds = 0.1 + 0.2;
  t.bytes = 2.5e9;
  t.exposed[static_cast<std::size_t>(workload::Dim::kDp)] = 0.5;
  std::string line;
  append_csv(line, kTable, t);
  std::string dims;
  for (const auto& d : workload::kDims) dims += d.dim == workload::Dim::kDp ? ",0.5" : ",0";
  EXPECT_EQ(line, ",\"a,b\",3,true,0.30000000000000004,2.5" + dims);
}

TEST(RecordFields, JsonNestsPartsUnlessFlat) {
  Toy t;
  t.bytes = 3e9;
  t.causes[0] = 2;
  Json j = Json::object();
  add_json(j, kTable, t);
  EXPECT_EQ(j["gb"], 3.0);
  EXPECT_TRUE(j["ok"].is_boolean());
  EXPECT_TRUE(j["count"].is_number_integer());
  ASSERT_TRUE(j["exposed"].is_object());
  EXPECT_EQ(j["exposed"].size(), workload::kDims.size());
  EXPECT_FALSE(j.contains("causes"));
  EXPECT_EQ(j["cause_" + std::string(cost::kFailureCauses[0].name)], 2.0);
  // Keys in table order, as the documents print them.
  EXPECT_EQ(j.begin().key(), "name");
}

TEST(RecordFields, TerminalCellsFollowTheLabels) {
  Toy t;
  t.count = 12;
  t.seconds = 0.25;
  t.exposed[static_cast<std::size_t>(workload::kDims[0].dim)] = 1.0 / 3.0;
  const auto headings = text_headings(kTable);
  ASSERT_EQ(headings.size(), 3 + workload::kDims.size());
  EXPECT_EQ(headings[3], "exp " + std::string(workload::kDims[0].label));
  std::vector<std::string> cells;
  append_text(cells, kTable, t);
  ASSERT_EQ(cells.size(), headings.size());
  EXPECT_EQ(cells[0], "12");
  EXPECT_EQ(cells[1], "NO");
  EXPECT_EQ(cells[2], "25.0%");
  EXPECT_EQ(cells[3], "0.33");
}

}  // namespace
}  // namespace cs::report
