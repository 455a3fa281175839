#include "sim/run/sweep_output.h"

#include <algorithm>
#include <charconv>

#include "sim/report/json.h"
#include "sim/report/text_rows.h"

namespace cs::run {

namespace {

std::string shortest(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

// RFC 4180: quote a field holding a comma, quote or line break; double the quotes inside.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + '"';
}

using report::fixed;

constexpr const char* kFigureColumns[] = {"layout",
                                          "schedule",
                                          "gpus",
                                          "microbatches",
                                          "iteration_time_s",
                                          "tokens_per_s",
                                          "mfu",
                                          "bubble_fraction",
                                          "analytic_bubble_fraction",
                                          "compute_s",
                                          "",  // the dimensions' exposed_<key>_s go here
                                          "peak_memory_gb",
                                          "activations_gb",
                                          "in_flight_microbatches",
                                          "fits"};

}  // namespace

void write_sweep_csv(std::ostream& out, const std::vector<SweepAxis>& axes,
                     const std::vector<SweepRow>& rows) {
  std::string line;
  for (const auto& a : axes) line += csv_field(a.field) + ',';
  for (const std::string_view c : kFigureColumns) {
    if (!c.empty()) {
      line += std::string(c) + ',';
      continue;
    }
    for (const auto& d : workload::kDims) line += "exposed_" + std::string(d.key) + "_s,";
  }
  line.back() = '\n';
  out << line;
  for (const auto& r : rows) {
    if (!r.ok()) continue;
    line.clear();
    for (const auto& v : r.values) line += csv_field(v) + ',';
    line += csv_field(r.layout) + ',' + csv_field(r.schedule) + ',' + std::to_string(r.gpus) + ',' +
            std::to_string(r.microbatches);
    for (const double v : {r.iteration_time_s, r.tokens_per_s, r.mfu, r.bubble_fraction,
                           r.analytic_bubble_fraction, r.compute_s})
      line += ',' + shortest(v);
    for (const double v : r.exposed_s) line += ',' + shortest(v);
    for (const double v : {r.peak_memory_gb, r.activations_gb}) line += ',' + shortest(v);
    line += ',' + std::to_string(r.in_flight_microbatches) + (r.fits ? ",true\n" : ",false\n");
    out << line;
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
    p["layout"] = r.layout;
    p["schedule"] = r.schedule;
    p["gpus"] = r.gpus;
    p["microbatches"] = r.microbatches;
    p["iteration_time_s"] = r.iteration_time_s;
    p["tokens_per_s"] = r.tokens_per_s;
    p["mfu"] = r.mfu;
    p["bubble_fraction"] = r.bubble_fraction;
    p["analytic_bubble_fraction"] = r.analytic_bubble_fraction;
    p["compute_s"] = r.compute_s;
    report::Json& exposed = p["exposed_comm_s"] = report::Json::object();
    for (const auto& d : workload::kDims)
      exposed[std::string(d.key)] = r.exposed_s[static_cast<std::size_t>(d.dim)];
    p["peak_memory_gb"] = r.peak_memory_gb;
    p["activations_gb"] = r.activations_gb;
    p["in_flight_microbatches"] = r.in_flight_microbatches;
    p["fits"] = r.fits;
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
  for (const char* h : {"step s", "tokens/s", "MFU", "bubble", "formula"}) header.emplace_back(h);
  for (const auto& d : workload::kDims) header.push_back("exp " + std::string(d.label) + " s");
  for (const char* h : {"mem GB", "fits"}) header.emplace_back(h);
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    if (!r.ok()) continue;
    std::vector<std::string> c = r.values;
    c.push_back(fixed(r.iteration_time_s, 4));
    c.push_back(fixed(r.tokens_per_s, 0));
    c.push_back(fixed(100 * r.mfu, 1) + "%");
    c.push_back(fixed(100 * r.bubble_fraction, 2) + "%");
    c.push_back(fixed(100 * r.analytic_bubble_fraction, 2) + "%");
    for (const double v : r.exposed_s) c.push_back(fixed(v, 4));
    c.push_back(fixed(r.peak_memory_gb, 1));
    c.push_back(r.fits ? "yes" : "NO");
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
