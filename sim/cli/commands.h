// The `clustersim` subcommands: a table of names, one-line summaries and entry functions.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cli/command_io.h"

namespace cs::cli {

// An error in what the user asked for (bad option, impossible request): one line, exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Command {
  std::string_view name;
  std::string_view summary;
  // Receives the arguments after the subcommand name; returns the exit code.
  int (*run)(const std::vector<std::string>& args, CommandIo& io);
};

// Defined in one file per subcommand.
int collective_command(const std::vector<std::string>& args, CommandIo& io);
int run_command(const std::vector<std::string>& args, CommandIo& io);
int presets_command(const std::vector<std::string>& args, CommandIo& io);
int generate_command(const std::vector<std::string>& args, CommandIo& io);
int replay_command(const std::vector<std::string>& args, CommandIo& io);
int convert_command(const std::vector<std::string>& args, CommandIo& io);
int sweep_command(const std::vector<std::string>& args, CommandIo& io);
int memory_command(const std::vector<std::string>& args, CommandIo& io);
int plan_command(const std::vector<std::string>& args, CommandIo& io);
int verify_command(const std::vector<std::string>& args, CommandIo& io);
int validate_command(const std::vector<std::string>& args, CommandIo& io);

// The subcommand of that name, or null.
const Command* find_command(std::string_view name);

// The line `clustersim NAME` prints for an exception that ends it, without the newline.
std::string error_line(std::string_view name, const std::exception& e);

// Parses argv, runs the chosen subcommand and returns the process exit code.
int run_main(int argc, char** argv);

}  // namespace cs::cli
