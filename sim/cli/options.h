// Command-line parsing shared by the subcommands: options plus an optional positional CONFIG.
#pragma once

#include <boost/program_options.hpp>

#include <string>
#include <vector>

namespace cs::cli {

// Parses `args` against `opts`, and one positional argument into `config_path` when it is not
// null. Returns false after printing the options for --help. Throws UsageError on bad options.
bool parse_options(const std::vector<std::string>& args,
                   const boost::program_options::options_description& opts,
                   std::string* config_path, boost::program_options::variables_map& vm);

}  // namespace cs::cli
