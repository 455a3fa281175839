// Command-line parsing shared by the subcommands: options plus an optional positional CONFIG.
#pragma once

#include <boost/program_options.hpp>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace cs::cli {

// Parses `args` against `opts`, and one positional argument into `config_path` when it is not
// null. Returns false after printing the options for --help. Throws UsageError on bad options.
bool parse_options(const std::vector<std::string>& args,
                   const boost::program_options::options_description& opts,
                   std::string* config_path, boost::program_options::variables_map& vm);

// Opens `path` for writing, lets `write` fill it, and throws std::runtime_error naming the path
// if it cannot be opened or written.
void write_file(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace cs::cli
