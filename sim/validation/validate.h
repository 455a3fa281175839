// Runs validation cases through the models and judges each against its published figure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/validation/case_file.h"

namespace cs::validation {

enum class Verdict : uint8_t { kPass, kFail, kSkip };
std::string_view to_string(Verdict v);  // "PASS", "FAIL", "SKIP"

struct CaseResult {
  std::string name;
  std::string kind;
  std::string unit;
  double model = 0;  // meaningless when skipped
  double published = 0;
  double error_pct = 0;  // (model − published) / published × 100
  double tolerance_pct = 0;
  Verdict verdict = Verdict::kSkip;
  std::string note;       // why skipped, or what the model ran (e.g. the chosen algorithm)
  std::string source;     // published.source, published.where
  std::string file;       // the case file
  std::string known_gap;  // the case's known_gap: why the model misses it today
};

// PASS when |error| <= tolerance: the boundary passes, since tolerances are stated inclusively.
Verdict judge(double error_pct, double tolerance_pct);

// Runs one case. A ConfigError from the models (an unknown GPU, a topology too small) comes
// back prefixed with the case's file, index and name.
CaseResult run_case(const LoadedCase& c);

// Which cases to run: an empty field selects everything.
struct CaseFilter {
  std::string kind;  // a kind name
  std::string name;  // a case name, or a prefix ending in '*'
};
bool matches(const CaseFilter& filter, const LoadedCase& c);

struct Summary {
  int passed = 0, failed = 0, skipped = 0;
};
Summary summarize(const std::vector<CaseResult>& results);

}  // namespace cs::validation
