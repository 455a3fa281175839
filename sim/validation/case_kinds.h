// The kinds of validation case as one table: name, unit of the model value, field checks and the
// function that computes the model value through the real simulator models.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "proto/validation.pb.h"

namespace cs::validation {

// What the model says for one case. `modelled` is false when no model of the effect exists yet:
// the case is then skipped (never passed) and `note` says why.
struct ModelValue {
  bool modelled = true;
  double value = 0;
  std::string note;
};

struct CaseKind {
  clustersim::ValidationCase::KindCase proto_case;
  std::string_view name;  // what --kind selects and the report prints
  std::string_view unit;  // the model value's unit; the published figure must use the same
  // Throws ConfigError "<where>: <kind>.<field> ..." on missing or senseless parameters.
  void (*check)(const clustersim::ValidationCase& c, const std::string& where);
  // The model value; throws ConfigError for inputs only the models can reject (an unknown GPU).
  ModelValue (*model)(const clustersim::ValidationCase& c);
};

// Every kind, in report order.
std::span<const CaseKind> case_kinds();
// The kind named `name`, or nullptr.
const CaseKind* find_kind(std::string_view name);
// The kind of `c`, or nullptr when it has none set.
const CaseKind* kind_of(const clustersim::ValidationCase& c);
// "gemm, attention, collective, interference, memory", for messages.
std::string kind_names();

}  // namespace cs::validation
