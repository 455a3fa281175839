#include "sim/cli/commands.h"

#include <iostream>

namespace cs::cli {

int run_main(int, char**) {
  std::cout << "clustersim\n";
  return 0;
}

}  // namespace cs::cli
