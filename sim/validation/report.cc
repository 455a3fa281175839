#include "sim/validation/report.h"

#include <cstdio>
#include <string>

#include "sim/report/json.h"

namespace cs::validation {

namespace {

// Two decimals below 10 (slowdown factors), one above (TFLOP/s, GB/s).
std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.2f" : "%.1f", v);
  return buf;
}

std::string signed_pct(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.1f", v);
  return buf;
}

std::string tolerance(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "±%g", v);
  return buf;
}

// Table cells cannot hold a bare '|'.
std::string cell(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

// A heading and one "- name: text" line per result that `selected` picks; nothing when none does.
template <typename Select>
void list(std::ostream& out, const std::vector<CaseResult>& results, const char* heading,
          Select selected, std::string CaseResult::*text) {
  bool any = false;
  for (const auto& r : results) {
    if (!selected(r)) continue;
    if (!any) out << '\n' << heading << '\n';
    any = true;
    out << "- " << r.name << ": " << r.*text << '\n';
  }
}

}  // namespace

void write_table(std::ostream& out, const std::vector<CaseResult>& results) {
  const Summary s = summarize(results);
  out << "clustersim validate: " << results.size() << " cases, " << s.passed << " passed, "
      << s.failed << " failed, " << s.skipped << " skipped\n\n";
  out << "| case | kind | model | published | unit | error % | tolerance % | result | source |\n"
      << "| --- | --- | ---: | ---: | --- | ---: | ---: | --- | --- |\n";
  for (const auto& r : results) {
    const bool skipped = r.verdict == Verdict::kSkip;
    out << "| " << r.name << " | " << r.kind << " | " << (skipped ? "-" : number(r.model)) << " | "
        << number(r.published) << " | " << r.unit << " | "
        << (skipped ? "-" : signed_pct(r.error_pct)) << " | " << tolerance(r.tolerance_pct) << " | "
        << to_string(r.verdict) << " | " << cell(r.source) << " |\n";
  }
  list(
      out, results, "Failing for a known gap (the case file's known_gap):",
      [](const CaseResult& r) { return r.verdict == Verdict::kFail && !r.known_gap.empty(); },
      &CaseResult::known_gap);
  list(
      out, results, "Passing, but still marked with a known gap (remove it from the case file):",
      [](const CaseResult& r) { return r.verdict == Verdict::kPass && !r.known_gap.empty(); },
      &CaseResult::known_gap);
  list(
      out, results, "Skipped (counted neither as passed nor as failed):",
      [](const CaseResult& r) { return r.verdict == Verdict::kSkip; }, &CaseResult::note);
}

void write_json(std::ostream& out, const std::vector<CaseResult>& results) {
  const Summary s = summarize(results);
  report::Json j = {{"cases", static_cast<int64_t>(results.size())},
                    {"passed", s.passed},
                    {"failed", s.failed},
                    {"skipped", s.skipped},
                    {"results", report::Json::array()}};
  for (const auto& r : results) {
    report::Json c = {
        {"name", r.name}, {"kind", r.kind},           {"result", to_string(r.verdict)},
        {"unit", r.unit}, {"published", r.published}, {"tolerance_pct", r.tolerance_pct}};
    if (r.verdict != Verdict::kSkip) {
      c["model"] = r.model;
      c["error_pct"] = r.error_pct;
    }
    c["note"] = r.note;
    if (!r.known_gap.empty()) c["known_gap"] = r.known_gap;
    c["source"] = r.source;
    c["file"] = r.file;
    j["results"].push_back(std::move(c));
  }
  report::write_document(out, j);
  out << '\n';  // a blank last line, as this file has always ended
}

}  // namespace cs::validation
