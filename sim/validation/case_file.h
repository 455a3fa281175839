// Reads validation case files (proto/validation.proto) and checks every case before any runs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "proto/validation.pb.h"
#include "sim/config/config_error.h"

namespace cs::validation {

// Folder of the built-in case files, compiled in like the other presets.
inline constexpr std::string_view kCaseFolder = "workloads/validation";

// One case with where it came from, so that errors and reports can point at it.
struct LoadedCase {
  clustersim::ValidationCase spec;
  std::string file;           // the case file, e.g. "workloads/validation/gemm.textproto"
  int index = 0;              // position in the file's `cases`
  std::string where() const;  // "<file>: cases[<index>] \"<name>\""
};

// Parses one case file and checks each case (see check_case). `source_name` labels errors.
std::vector<LoadedCase> load_case_text(std::string_view text, const std::string& source_name);
// A case file on disk.
std::vector<LoadedCase> load_case_file(const std::string& path);
// Every built-in case file, in path order, then cases in file order.
std::vector<LoadedCase> load_builtin_cases();

// Throws ConfigError "<file>: cases[i] \"name\": <field> <problem>" when a field is missing or
// makes no sense: the kind and its parameters, the published figure (value, unit matching the
// kind, source, where) and the tolerance (percent, reason).
void check_case(const LoadedCase& c);
// Throws ConfigError naming both places when two cases share a name.
void check_unique_names(const std::vector<LoadedCase>& cases);

}  // namespace cs::validation
