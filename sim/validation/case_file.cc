#include "sim/validation/case_file.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/config/embedded_presets.h"
#include "sim/config/field_checks.h"
#include "sim/config/text_proto.h"
#include "sim/validation/case_kinds.h"

namespace cs::validation {

namespace {

void require_text(const std::string& v, const std::string& where, const std::string& field) {
  if (v.empty()) config_fail(where, field + " must be set");
}

void check_published(const clustersim::ValidationCase& c, const CaseKind& kind,
                     const std::string& where) {
  if (!c.has_published()) config_fail(where, "published { value: ... source: ... } must be set");
  const auto& p = c.published();
  require_positive(p.value(), where, "published.value");
  if (p.unit() != kind.unit) {
    config_fail(where, "published.unit must be \"" + std::string(kind.unit) + "\" for a " +
                           std::string(kind.name) + " case (is \"" + p.unit() + "\")");
  }
  require_text(p.source(), where, "published.source");
  require_text(p.where(), where, "published.where (the table, figure or comment)");
}

void check_tolerance(const clustersim::ValidationCase& c, const std::string& where) {
  if (!c.has_tolerance()) config_fail(where, "tolerance { percent: ... reason: ... } must be set");
  require_positive(c.tolerance().percent(), where, "tolerance.percent");
  require_text(c.tolerance().reason(), where, "tolerance.reason");
}

}  // namespace

std::string LoadedCase::where() const {
  return file + ": cases[" + std::to_string(index) + "] \"" + spec.name() + "\"";
}

void check_case(const LoadedCase& c) {
  const std::string where = c.where();
  if (c.spec.name().empty()) config_fail(where, "name must be set");
  const CaseKind* kind = kind_of(c.spec);
  if (kind == nullptr) config_fail(where, "one of " + kind_names() + " { ... } must be set");
  kind->check(c.spec, where);
  check_published(c.spec, *kind, where);
  check_tolerance(c.spec, where);
}

void check_unique_names(const std::vector<LoadedCase>& cases) {
  std::map<std::string, const LoadedCase*> seen;
  for (const auto& c : cases) {
    const auto [it, inserted] = seen.emplace(c.spec.name(), &c);
    if (!inserted) config_fail(c.where(), "name is already used by " + it->second->where());
  }
}

std::vector<LoadedCase> load_case_text(std::string_view text, const std::string& source_name) {
  clustersim::ValidationSuite suite;
  parse_text_proto(text, source_name, &suite);
  if (suite.cases_size() == 0)
    config_fail(source_name, "cases { ... } must hold at least one case");
  std::vector<LoadedCase> cases;
  for (int i = 0; i < suite.cases_size(); ++i) {
    LoadedCase c{suite.cases(i), source_name, i};
    check_case(c);
    cases.push_back(std::move(c));
  }
  check_unique_names(cases);
  return cases;
}

std::vector<LoadedCase> load_case_file(const std::string& path) {
  return load_case_text(read_text_file(path), path);
}

std::vector<LoadedCase> load_builtin_cases() {
  std::vector<const EmbeddedFile*> files;
  for (const auto& f : embedded_presets()) {
    if (f.path.starts_with(std::string(kCaseFolder) + "/")) files.push_back(&f);
  }
  std::sort(files.begin(), files.end(),
            [](const EmbeddedFile* a, const EmbeddedFile* b) { return a->path < b->path; });
  std::vector<LoadedCase> cases;
  for (const EmbeddedFile* f : files) {
    auto more = load_case_text(f->text, std::string(f->path));
    cases.insert(cases.end(), std::make_move_iterator(more.begin()),
                 std::make_move_iterator(more.end()));
  }
  check_unique_names(cases);
  return cases;
}

}  // namespace cs::validation
