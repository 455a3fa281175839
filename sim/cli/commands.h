// The `clustersim` subcommands: dispatch from argv, one function per subcommand.
#pragma once

namespace cs::cli {

// Parses argv, runs the chosen subcommand and returns the process exit code.
int run_main(int argc, char** argv);

}  // namespace cs::cli
