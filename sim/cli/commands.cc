#include "sim/cli/commands.h"

#include <array>
#include <exception>
#include <iostream>

namespace cs::cli {

namespace {

constexpr std::array kCommands = {
    Command{"run", "simulate one training step of a model, layout and cluster", &run_command},
    Command{"presets", "list the built-in workloads, topologies and GPUs", &presets_command},
    Command{"sweep", "run the cartesian product of config variations, as a table/CSV/JSON",
            &sweep_command},
    Command{"generate", "write the workload trace of a configuration (protobuf)",
            &generate_command},
    Command{"replay", "simulate a workload trace (ours, or Chakra with --chakra)", &replay_command},
    Command{"convert", "convert between Chakra execution traces and our trace format",
            &convert_command},
    Command{"memory", "per-GPU memory breakdown of a configuration, instantly", &memory_command},
    Command{"plan", "find the fastest or cheapest layout for a model on N GPUs", &plan_command},
    Command{"verify", "numerical checks of the parallel math on real data (Eigen)",
            &verify_command},
    Command{"validate", "micro-benchmark cases against their published figures", &validate_command},
    Command{"collective", "time one collective over a topology for several sizes, like nccl-tests",
            &collective_command},
};

void print_help(std::ostream& out) {
  out << "clustersim - discrete-event simulator of GPU clusters training large language models\n\n"
         "usage: clustersim <command> [options]\n       clustersim <command> --help\n\ncommands:\n";
  for (const auto& c : kCommands) {
    out << "  " << c.name << std::string(14 - c.name.size(), ' ') << c.summary << '\n';
  }
}

}  // namespace

const Command* find_command(std::string_view name) {
  for (const auto& c : kCommands)
    if (c.name == name) return &c;
  return nullptr;
}

std::string error_line(std::string_view name, const std::exception& e) {
  const bool usage = dynamic_cast<const UsageError*>(&e) != nullptr;
  return "clustersim " + std::string(name) + ": " + (usage ? "" : "error: ") + e.what();
}

int run_main(int argc, char** argv) {
  CommandIo io{std::cout, std::cerr};
  if (argc < 2) {
    print_help(std::cerr);
    return 2;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    if (name == "help" && argc > 2) {
      const std::vector<std::string> args{"--help"};
      if (const Command* c = find_command(argv[2])) return c->run(args, io);
    }
    print_help(std::cout);
    return 0;
  }
  if (const Command* c = find_command(name)) {
    const std::vector<std::string> args(argv + 2, argv + argc);
    try {
      return c->run(args, io);
    } catch (const std::exception& e) {
      std::cerr << error_line(name, e) << '\n';
      return dynamic_cast<const UsageError*>(&e) != nullptr ? 2 : 1;
    }
  }
  std::cerr << "clustersim: unknown command '" << name << "' (see clustersim --help)\n";
  return 2;
}

}  // namespace cs::cli
