// `clustersim validate`: the micro-benchmark cases against their published figures.
#include <boost/program_options.hpp>

#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/validation/case_file.h"
#include "sim/validation/case_kinds.h"
#include "sim/validation/report.h"
#include "sim/validation/validate.h"

namespace cs::cli {

namespace po = boost::program_options;

namespace {

std::vector<validation::LoadedCase> load_cases(const std::vector<std::string>& files) {
  if (files.empty()) return validation::load_builtin_cases();
  std::vector<validation::LoadedCase> cases;
  for (const auto& f : files) {
    auto more = validation::load_case_file(f);
    cases.insert(cases.end(), std::make_move_iterator(more.begin()),
                 std::make_move_iterator(more.end()));
  }
  validation::check_unique_names(cases);
  return cases;
}

}  // namespace

int validate_command(const std::vector<std::string>& args, CommandIo& given_io) {
  validation::CaseFilter filter;
  std::vector<std::string> files;
  std::string json;
  po::options_description opts(
      "usage: clustersim validate [options]\n\n"
      "Runs each validation case (GEMM, grouped-GEMM, attention and memory-bound kernels through\n"
      "the kernel cost model, collectives over a topology as `clustersim collective` does,\n"
      "expert-parallel all-to-alls as a step sends them) against the published measurement it\n"
      "cites, and prints model, published value, error and tolerance per case.\n"
      "Cases whose effect has no model yet are skipped, with the reason. Exits 1 if any case\n"
      "fails. The built-in cases are in workloads/validation/ (schema: proto/validation.proto).\n\n"
      "options");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("kind", po::value(&filter.kind), ("only cases of this kind: " +
                                         validation::kind_names()).c_str())
      ("case", po::value(&filter.name), "only this case (a name, or a prefix ending in '*')")
      ("file", po::value(&files)->composing(),
       "run the cases of this file instead of the built-in ones (repeatable)")
      ("json", po::value(&json),
       "also write the results as JSON to this file (-: to stdout, the table then to stderr)");
  // clang-format on
  po::variables_map vm;
  if (!parse_options(args, opts, nullptr, vm, given_io.out)) return 0;
  CommandIo io = check_outputs(given_io, {{"--json", json}});
  if (!filter.kind.empty() && validation::find_kind(filter.kind) == nullptr) {
    throw UsageError("--kind " + filter.kind + ": not one of " + validation::kind_names());
  }

  std::vector<validation::CaseResult> results;
  for (const auto& c : load_cases(files)) {
    if (validation::matches(filter, c)) results.push_back(validation::run_case(c));
  }
  if (results.empty()) throw UsageError("no case matches --kind / --case");
  validation::write_table(io.out, results);
  if (!json.empty()) {
    write_file(io, json, [&](std::ostream& out) { validation::write_json(out, results); });
  }
  return validation::summarize(results).failed > 0 ? 1 : 0;
}

}  // namespace cs::cli
