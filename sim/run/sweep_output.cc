#include "sim/run/sweep_output.h"

#include <algorithm>

#include "sim/report/json.h"
#include "sim/report/record_fields.h"

namespace cs::run {

void write_sweep_csv(std::ostream& out, const std::vector<SweepAxis>& axes,
                     const std::vector<SweepRow>& rows) {
  // Every field is written after a comma; the line's first comma is dropped.
  std::string line;
  for (const auto& a : axes) line += ',' + report::csv_field(a.field);
  for (const auto& c : report::csv_columns(sweep_fields())) line += ',' + c;
  out << line.substr(1) << '\n';
  for (const auto& r : rows) {
    if (!r.ok()) continue;
    line.clear();
    for (const auto& v : r.values) line += ',' + report::csv_field(v);
    report::append_csv(line, sweep_fields(), r);
    out << line.substr(1) << '\n';
  }
}

void write_sweep_json(std::ostream& out, const std::string& source,
                      const std::vector<SweepAxis>& axes, const std::vector<SweepRow>& rows) {
  report::Json j = {{"source", source}, {"axes", report::Json::array()}};
  for (const auto& a : axes) j["axes"].push_back({{"field", a.field}, {"values", a.values}});
  // Every row starts with its index and the values of the axes that made it.
  auto row = [&](const SweepRow& r) {
    report::Json fields = report::Json::object();
    for (std::size_t a = 0; a < axes.size(); ++a) fields[axes[a].field] = r.values[a];
    return report::Json{{"index", static_cast<int64_t>(r.index)}, {"fields", std::move(fields)}};
  };
  report::Json& points = j["points"] = report::Json::array();
  for (const auto& r : rows) {
    if (!r.ok()) continue;
    report::Json p = row(r);
    report::add_json(p, sweep_fields(), r);
    points.push_back(std::move(p));
  }
  report::Json& skipped = j["skipped"] = report::Json::array();
  for (const auto& r : rows) {
    if (r.ok()) continue;
    report::Json p = row(r);
    p["error"] = r.error;
    skipped.push_back(std::move(p));
  }
  report::write_document(out, j);
}

void print_sweep_table(std::ostream& out, const std::vector<SweepAxis>& axes,
                       const std::vector<SweepRow>& rows) {
  std::vector<std::string> header;
  for (const auto& a : axes) header.push_back(a.field);
  for (auto& h : report::text_headings(sweep_fields())) header.push_back(std::move(h));
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    if (!r.ok()) continue;
    std::vector<std::string> c = r.values;
    report::append_text(c, sweep_fields(), r);
    cells.push_back(std::move(c));
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) {
    width[i] = header[i].size();
    for (const auto& c : cells) width[i] = std::max(width[i], c[i].size());
  }
  // Varied fields read left-aligned like labels; figures right-aligned like numbers.
  auto print = [&](const std::vector<std::string>& c) {
    std::string line;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const std::string pad(width[i] - c[i].size(), ' ');
      line += i < axes.size() ? c[i] + pad : pad + c[i];
      if (i + 1 < c.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  print(header);
  for (const auto& c : cells) print(c);
  for (const auto& r : rows) {
    if (r.ok()) continue;
    std::string what;
    for (std::size_t a = 0; a < axes.size(); ++a)
      what += (a ? ", " : "") + axes[a].field + "=" + r.values[a];
    out << "skipped " << what << ": " << r.error << '\n';
  }
}

}  // namespace cs::run
