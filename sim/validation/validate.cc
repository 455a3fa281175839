#include "sim/validation/validate.h"

#include <cmath>
#include <stdexcept>

#include "sim/validation/case_kinds.h"

namespace cs::validation {

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "PASS";
    case Verdict::kFail:
      return "FAIL";
    case Verdict::kSkip:
      break;
  }
  return "SKIP";
}

Verdict judge(double error_pct, double tolerance_pct) {
  // NaN (a model that returned nonsense) fails too.
  return std::abs(error_pct) <= tolerance_pct ? Verdict::kPass : Verdict::kFail;
}

CaseResult run_case(const LoadedCase& c) {
  const CaseKind* kind = kind_of(c.spec);
  if (kind == nullptr) throw ConfigError(c.where() + ": no kind set");
  CaseResult r;
  r.name = c.spec.name();
  r.kind = std::string(kind->name);
  r.unit = std::string(kind->unit);
  r.published = c.spec.published().value();
  r.tolerance_pct = c.spec.tolerance().percent();
  r.source = c.spec.published().source() + ", " + c.spec.published().where();
  r.file = c.file;
  r.known_gap = c.spec.known_gap();
  ModelValue m;
  try {
    m = kind->model(c.spec);
  } catch (const ConfigError& e) {
    throw ConfigError(c.where() + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw ConfigError(c.where() + ": " + e.what());
  }
  r.note = m.note;
  if (!m.modelled) return r;  // kSkip
  r.model = m.value;
  r.error_pct = (m.value - r.published) / r.published * 100.0;
  r.verdict = judge(r.error_pct, r.tolerance_pct);
  return r;
}

bool matches(const CaseFilter& filter, const LoadedCase& c) {
  if (!filter.kind.empty()) {
    const CaseKind* kind = kind_of(c.spec);
    if (kind == nullptr || kind->name != filter.kind) return false;
  }
  if (filter.name.empty()) return true;
  const std::string& name = c.spec.name();
  if (filter.name.back() == '*') {
    return name.starts_with(std::string_view(filter.name).substr(0, filter.name.size() - 1));
  }
  return name == filter.name;
}

Summary summarize(const std::vector<CaseResult>& results) {
  Summary s;
  for (const auto& r : results) {
    switch (r.verdict) {
      case Verdict::kPass:
        ++s.passed;
        break;
      case Verdict::kFail:
        ++s.failed;
        break;
      case Verdict::kSkip:
        ++s.skipped;
        break;
    }
  }
  return s;
}

}  // namespace cs::validation
