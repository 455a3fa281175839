// Entry point of the `clustersim` command line tool.
#include "sim/cli/commands.h"

int main(int argc, char** argv) {
  return cs::cli::run_main(argc, argv);
}
