// Command-line parsing shared by the subcommands: options plus an optional positional CONFIG.
#pragma once

#include <boost/program_options.hpp>

#include <functional>
#include <ostream>
#include <string>
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

// Opens `path` for writing, lets `write` fill it, and throws std::runtime_error naming the path
// if it cannot be opened or written. A path in `io.captured` is filled there instead.
void write_file(const CommandIo& io, const std::string& path,
                const std::function<void(std::ostream&)>& write);

}  // namespace cs::cli
