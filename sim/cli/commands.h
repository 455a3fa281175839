// The `clustersim` subcommands: a table of names, one-line summaries and entry functions.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cs::cli {

// An error in what the user asked for (bad option, impossible request): one line, exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Command {
  std::string_view name;
  std::string_view summary;
  // Receives the arguments after the subcommand name; returns the exit code.
  int (*run)(const std::vector<std::string>& args);
};

// Defined in one file per subcommand.
int collective_command(const std::vector<std::string>& args);
int run_command(const std::vector<std::string>& args);
int presets_command(const std::vector<std::string>& args);
int generate_command(const std::vector<std::string>& args);
int replay_command(const std::vector<std::string>& args);
int convert_command(const std::vector<std::string>& args);
int sweep_command(const std::vector<std::string>& args);
int memory_command(const std::vector<std::string>& args);
int plan_command(const std::vector<std::string>& args);
int verify_command(const std::vector<std::string>& args);
int validate_command(const std::vector<std::string>& args);

// Parses argv, runs the chosen subcommand and returns the process exit code.
int run_main(int argc, char** argv);

}  // namespace cs::cli
