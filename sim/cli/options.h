// Command-line parsing shared by the subcommands: options plus an optional positional CONFIG.
#pragma once

#include <boost/program_options.hpp>

#include <functional>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cli/command_io.h"
#include "sim/config/run_config.h"

namespace cs::cli {

// The options of every command that reads a run configuration: CONFIG or --preset, the model of
// a Hugging Face config.json (--hf-config) and --set overrides, applied in that order.
struct ConfigOptions {
  std::string preset, hf_config;
  std::vector<std::string> overrides;

  // Adds --preset, --hf-config and --set, with `set_help` as --set's description.
  void add_to(boost::program_options::options_description& opts, const std::string& set_help);
  // Throws UsageError unless exactly one of `path` and --preset is given.
  LoadedConfig load(const std::string& path) const;
};

// Parses `args` against `opts`, and one positional argument into `config_path` when it is not
// null. Returns false after printing the options for --help to `help_out`. Throws UsageError on
// bad options.
bool parse_options(const std::vector<std::string>& args,
                   const boost::program_options::options_description& opts,
                   std::string* config_path, boost::program_options::variables_map& vm,
                   std::ostream& help_out);

// One output option as given: its name ("--json") and path ("" when not given, "-" for stdout).
struct OutputPath {
  std::string_view option;
  const std::string& path;
};

// Checks, before any simulation, that every given output path can be written, so that a long run
// does not end on a missing folder: throws UsageError naming the option, the path and why (no
// such folder, a folder, not writable). At most one may be "-" (standard output). When one is,
// the returned io prints the human report to stderr, so that stdout holds only that file and
// pipes into jq or pandas; otherwise it is `io` unchanged. Paths in `io.captured` are not files.
CommandIo check_outputs(const CommandIo& io, std::initializer_list<OutputPath> outputs);

// Opens `path` for writing, lets `write` fill it, and throws std::runtime_error naming the path
// if it cannot be opened or written. A path in `io.captured` is filled there instead, and "-"
// goes to standard output.
void write_file(const CommandIo& io, const std::string& path,
                const std::function<void(std::ostream&)>& write);

}  // namespace cs::cli
