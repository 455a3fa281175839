// Placeholder until the trace subcommands land; each says so and exits 2.
#include "sim/cli/commands.h"

namespace cs::cli {

int generate_command(const std::vector<std::string>&) { throw UsageError("'generate' is not implemented yet"); }
int replay_command(const std::vector<std::string>&) { throw UsageError("'replay' is not implemented yet"); }
int convert_command(const std::vector<std::string>&) { throw UsageError("'convert' is not implemented yet"); }

}  // namespace cs::cli
