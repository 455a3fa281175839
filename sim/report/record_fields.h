// A record's figures described once, as a table, from which its CSV columns, JSON keys, terminal
// columns and MPI wire form are all derived, so that a new figure is one line of the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/report/json.h"

namespace cs::report {

// Where one figure of a record is stored; its type decides how it prints: a flag as true/false,
// an integer without a point, a real in shortest round-trip form, text quoted where needed.
using FieldRef = std::variant<std::string*, int32_t*, bool*, double*>;

// A figure with one value per workload dimension (workload::kDims, stored by Dim) or per failure
// cause (cost::kFailureCauses); `at` then points at the first double of the array.
enum class Parts : uint8_t { kOne, kDims, kCauses };

// The outputs that carry a figure. A per-part figure's JSON is an object of its parts under
// `key`, or with kFlatJson one key per part, named as its CSV columns.
enum Shown : uint8_t { kCsv = 1, kJson = 2, kWire = 4, kFlatJson = 8, kEverywhere = 7 };

// One line of a record's table; initialise with designated initialisers, unset ones default.
template <typename Record>
struct Field {
  std::string_view key;  // the JSON key, the CSV column of a one-part figure
  FieldRef (*at)(Record&) = nullptr;
  uint8_t shown = kEverywhere;
  Parts parts = Parts::kOne;
  std::string_view column = {};  // a per-part figure's CSV column: "{}" stands for the part's key
  double unit = 1;               // CSV and JSON show the stored value over this (bytes as GB)
  std::string_view label = {};   // terminal heading ("{}": the part's label); empty: not shown
  int digits = 0;                // terminal digits after the point
  bool percent = false;          // terminal: 100 x the value and "%"
};

// The parts of a figure: how many, where each is stored, and its key and label.
std::size_t part_count(Parts p);
std::size_t part_slot(Parts p, std::size_t k);
std::string_view part_key(Parts p, std::size_t k);
std::string_view part_label(Parts p, std::size_t k);
// `pattern` with "{}" replaced by `part`.
std::string with_part(std::string_view pattern, std::string_view part);

// RFC 4180: a field holding a comma, quote or line break is quoted, its quotes doubled.
std::string csv_field(const std::string& s);
// The shortest text that reads back to the same double ("0.30000000000000004").
std::string shortest(double v);

// A record on one line of text, tab-separated, every double exactly: how rows and candidates
// travel between MPI ranks. Text escapes tabs, line breaks and backslashes so any error fits.
class WireWriter {
 public:
  void put(std::string_view s);
  void put(double v);
  void put(int64_t v);
  std::string take() { return std::move(out_); }

 private:
  std::string& next();
  std::string out_;
  bool first_ = true;
};

// Reads what WireWriter wrote, in the same order; throws std::invalid_argument on a bad field.
class WireReader {
 public:
  explicit WireReader(std::string_view line);
  std::string text();
  double real();
  int64_t integer();

 private:
  const std::string& next();
  std::vector<std::string> fields_;
  std::size_t pos_ = 0;
};

namespace record_detail {

// The tables only name where a figure lives; reading a const record through them never writes.
template <typename Record>
FieldRef ref(const Field<Record>& f, const Record& r) {
  return f.at(const_cast<Record&>(r));
}

void put_csv(std::string& line, FieldRef ref, double unit);
Json to_json(FieldRef ref, double unit);
std::string to_text(FieldRef ref, int digits, bool percent);
void put_wire(WireWriter& out, FieldRef ref);
void get_wire(WireReader& in, FieldRef ref);

}  // namespace record_detail

// The CSV columns of a table's kCsv figures, in table order.
template <typename Record>
std::vector<std::string> csv_columns(std::span<const Field<Record>> table) {
  std::vector<std::string> columns;
  for (const auto& f : table) {
    if (!(f.shown & kCsv)) continue;
    if (f.parts == Parts::kOne) columns.emplace_back(f.key);
    for (std::size_t k = 0; f.parts != Parts::kOne && k < part_count(f.parts); ++k)
      columns.push_back(with_part(f.column, part_key(f.parts, k)));
  }
  return columns;
}

// Appends ",value" for each kCsv figure of `r`.
template <typename Record>
void append_csv(std::string& line, std::span<const Field<Record>> table, const Record& r) {
  for (const auto& f : table) {
    if (!(f.shown & kCsv)) continue;
    const FieldRef at = record_detail::ref(f, r);
    if (f.parts == Parts::kOne) record_detail::put_csv(line, at, f.unit);
    for (std::size_t k = 0; f.parts != Parts::kOne && k < part_count(f.parts); ++k)
      record_detail::put_csv(line, std::get<double*>(at) + part_slot(f.parts, k), f.unit);
  }
}

// Sets `j`'s keys for each kJson figure of `r`, in table order.
template <typename Record>
void add_json(Json& j, std::span<const Field<Record>> table, const Record& r) {
  for (const auto& f : table) {
    if (!(f.shown & kJson)) continue;
    const FieldRef at = record_detail::ref(f, r);
    if (f.parts == Parts::kOne) {
      j[std::string(f.key)] = record_detail::to_json(at, f.unit);
      continue;
    }
    Json& parts = f.shown & kFlatJson ? j : (j[std::string(f.key)] = Json::object());
    for (std::size_t k = 0; k < part_count(f.parts); ++k) {
      const std::string key(part_key(f.parts, k));
      parts[f.shown & kFlatJson ? with_part(f.column, key) : key] =
          record_detail::to_json(std::get<double*>(at) + part_slot(f.parts, k), f.unit);
    }
  }
}

// The terminal headings of the figures with a label, and a record's cells under them.
template <typename Record>
std::vector<std::string> text_headings(std::span<const Field<Record>> table) {
  std::vector<std::string> headings;
  for (const auto& f : table) {
    if (f.label.empty()) continue;
    for (std::size_t k = 0; k < part_count(f.parts); ++k)
      headings.push_back(with_part(f.label, part_label(f.parts, k)));
  }
  return headings;
}

template <typename Record>
void append_text(std::vector<std::string>& cells, std::span<const Field<Record>> table,
                 const Record& r) {
  for (const auto& f : table) {
    if (f.label.empty()) continue;
    const FieldRef at = record_detail::ref(f, r);
    if (f.parts == Parts::kOne) cells.push_back(record_detail::to_text(at, f.digits, f.percent));
    for (std::size_t k = 0; f.parts != Parts::kOne && k < part_count(f.parts); ++k)
      cells.push_back(record_detail::to_text(std::get<double*>(at) + part_slot(f.parts, k),
                                             f.digits, f.percent));
  }
}

// Writes, and reads back into `r`, every kWire figure, in table order.
template <typename Record>
void write_wire(WireWriter& out, std::span<const Field<Record>> table, const Record& r) {
  for (const auto& f : table) {
    if (!(f.shown & kWire)) continue;
    const FieldRef at = record_detail::ref(f, r);
    if (f.parts == Parts::kOne) record_detail::put_wire(out, at);
    for (std::size_t k = 0; f.parts != Parts::kOne && k < part_count(f.parts); ++k)
      out.put(std::get<double*>(at)[part_slot(f.parts, k)]);
  }
}

template <typename Record>
void read_wire(WireReader& in, std::span<const Field<Record>> table, Record& r) {
  for (const auto& f : table) {
    if (!(f.shown & kWire)) continue;
    const FieldRef at = f.at(r);
    if (f.parts == Parts::kOne) record_detail::get_wire(in, at);
    for (std::size_t k = 0; f.parts != Parts::kOne && k < part_count(f.parts); ++k)
      std::get<double*>(at)[part_slot(f.parts, k)] = in.real();
  }
}

}  // namespace cs::report
