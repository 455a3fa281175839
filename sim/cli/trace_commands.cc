// `clustersim generate`, `replay` and `convert`: write, simulate and translate workload traces.
#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/progress.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/config/embedded_presets.h"
#include "sim/config/field_override.h"
#include "sim/config/run_config.h"
#include "sim/config/text_proto.h"
#include "sim/core/input_file.h"
#include "sim/net/network_factory.h"
#include "sim/run/step_simulation.h"
#include "sim/trace/chakra.h"
#include "sim/trace/replay.h"
#include "sim/trace/trace_format.h"
#include "sim/workload/layout_config.h"
#include "sim/world/world.h"

namespace cs::cli {

namespace po = boost::program_options;

namespace {

po::variables_map parse(const std::vector<std::string>& args, const po::options_description& opts,
                        const char* positional_name, int positional_count) {
  po::options_description hidden;
  hidden.add_options()(positional_name, po::value<std::vector<std::string>>());
  po::positional_options_description positional;
  positional.add(positional_name, positional_count);
  po::options_description all;
  all.add(opts).add(hidden);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    if (!vm.count("help")) po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return vm;
}

std::string positional(const po::variables_map& vm, const char* name) {
  if (!vm.count(name)) return "";
  return vm[name].as<std::vector<std::string>>().front();
}

clustersim::NetworkMode network_mode(const std::string& text) {
  try {
    return world::config_network_mode(net::parse_network_mode(text));
  } catch (const std::invalid_argument&) {
  }
  throw UsageError("--network must be congestion_aware, analytical or ideal, not " + text);
}

trace::CommGroups load_groups(const std::string& path) {
  if (path.empty()) return {};
  const InputFile file = read_input_file(path, kMaxJsonBytes, "--comm-groups JSON file");
  if (!file.ok()) throw std::runtime_error("--comm-groups: " + file.error);
  return trace::parse_comm_groups(file.bytes, path);
}

void write_report_json(const CommandIo& io, const std::string& path, const report::StepReport& r) {
  if (!path.empty()) write_file(io, path, [&](std::ostream& out) { report::write_json(out, r); });
}

trace::CpuOps cpu_ops_mode(const std::string& text) {
  if (text == "host") return trace::CpuOps::kHostThread;
  if (text == "skip") return trace::CpuOps::kSkip;
  throw UsageError("--cpu-ops must be host or skip, not " + text);
}

// The Chakra import options shared by replay and convert.
struct ChakraFlags {
  std::string groups, cpu_ops = "host";
  bool strict_deps = false;
  void add_to(po::options_description& opts) {
    // clang-format off
    opts.add_options()
        ("comm-groups", po::value(&groups),
         "Chakra: process groups, {\"pg_name\": [ranks]} or PyTorch's pg_config list "
         "(default: PREFIX.comm_groups.json where `convert --to-chakra` wrote one, else the "
         "trace's process_group:init metadata, else every collective spans all ranks)")
        ("cpu-ops", po::value(&cpu_ops),
         "Chakra: is_cpu_op nodes run on one host thread per rank for their traced duration "
         "(host, the default) or take no time (skip); their GPU kernels run either way")
        ("strict-deps", po::bool_switch(&strict_deps),
         "Chakra: a dependency on a node absent from the rank's file is an error (default: "
         "dropped and counted)");
    // clang-format on
  }
  // Reads the trace at `prefix` with its groups: --comm-groups, else the PREFIX.comm_groups.json
  // that `convert --to-chakra` writes beside the ranks' files, when there is one.
  exec::ExplicitWorkload read(const std::string& prefix, const compute::KernelCostModel& cost,
                              trace::ChakraSummary* summary) const {
    std::string file = groups;
    if (file.empty() && std::filesystem::exists(prefix + ".comm_groups.json"))
      file = prefix + ".comm_groups.json";
    trace::ChakraImportOptions o;
    o.strict_deps = strict_deps;
    o.cpu_ops = cpu_ops_mode(cpu_ops);
    o.groups_source = file;
    return trace::read_chakra(prefix, cost, load_groups(file), o, summary);
  }
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

namespace {

// Refuses a binary trace output that cannot be written before the trace is built (check_outputs),
// and standard output, which a binary trace would garble.
void check_trace_output(std::string_view option, const std::string& path, const CommandIo& io) {
  if (path == "-")
    throw UsageError(std::string(option) + " -: a binary trace is written to a file, not stdout");
  check_outputs(io, {{option, path}});
}

}  // namespace

int generate_command(const std::vector<std::string>& args, CommandIo& io) {
  std::string output;
  ConfigOptions config;
  po::options_description opts(
      "usage: clustersim generate CONFIG -o FILE.pb\n"
      "       clustersim generate --preset NAME [--set ...] -o FILE.pb\n\n"
      "Writes the workload trace of a configuration: one program per pipeline stage, shared by\n"
      "its ranks, with the config, layout and communicator groups (binary protobuf,\n"
      "proto/trace.proto; times in ps, sizes in bytes).\n\noptions");
  config.add_to(opts, "override a field, e.g. --set parallel.pp=8");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("output,o", po::value(&output), "the trace file to write");
  // clang-format on
  const auto vm = parse(args, opts, "config", 1);
  if (vm.count("help")) return io.out << opts << '\n', 0;
  const std::string path = positional(vm, "config");
  if (output.empty()) throw UsageError("give the output file with -o FILE.pb");
  check_trace_output("-o", output, io);
  const auto start = std::chrono::steady_clock::now();
  const LoadedConfig loaded = config.load(path);
  const run::PreparedStep step = run::prepare_step(loaded.config, loaded.source);
  const double built = seconds_since(start);
  const auto written_start = std::chrono::steady_clock::now();
  trace::write_trace_file(trace::to_trace(step), output);
  const double written = seconds_since(written_start);
  std::size_t ops = 0;
  for (const auto& p : step.programs) ops += p.ops.size();
  const auto par = step.config.parallel();
  print_to(io.out,
           "%s: %d ranks, %zu programs, %zu ops; %.1f MB; built in %.2f s, written in %.2f s\n",
           output.c_str(), static_cast<int>(workload::world_of(workload::dim_sizes(par))),
           step.programs.size(), ops, static_cast<double>(std::filesystem::file_size(output)) / 1e6,
           built, written);
  return 0;
}

namespace {

// Applies replay's --set assignments to `config`: nccl.* and the effects the world reads
// (world::world_effects()). Every other field shapes the ops the trace already holds, so setting
// it would change nothing; it is refused with the reason.
void apply_replay_sets(clustersim::RunConfig& config, const std::vector<std::string>& sets) {
  constexpr std::string_view kEffects = "effects.";
  const auto effects = world::world_effects();
  for (const std::string& assignment : sets) {
    const std::string key = assignment.substr(0, assignment.find('='));
    const bool world_effect =
        key.starts_with(kEffects) &&
        std::find(effects.begin(), effects.end(), key.substr(kEffects.size())) != effects.end();
    if (!key.starts_with("nccl.") && !world_effect) {
      std::string listed;
      for (const auto name : effects) listed += (listed.empty() ? "" : ", ") + std::string(name);
      throw UsageError("--set " + key +
                       ": a trace holds its ops already; replay sets only nccl.* and the "
                       "effects that act on the simulated cluster, effects.KEY for KEY in " +
                       listed);
    }
    apply_override(config, assignment);
  }
}

// Reads the Chakra trace at `prefix`, prints what it read and dropped, and replays it.
report::StepReport replay_chakra(const std::string& prefix, const ChakraFlags& flags,
                                 const trace::ReplayTarget& target, CommandIo& io) {
  const compute::KernelCostModel cost(compute::load_gpu_profile(trace::target_gpu(target)));
  trace::ChakraSummary summary;
  const auto workload = flags.read(prefix, cost, &summary);
  trace::print_chakra_summary(io.out, summary);
  const auto name = std::filesystem::path(prefix).filename().string();
  return trace::simulate_workload(workload, target, name, prefix, simulation_progress(io));
}

// What `replay` was asked for, option by option.
struct ReplayArgs {
  std::string chakra, topology, gpu, network, json;
  std::vector<std::string> sets;
  ChakraFlags flags;
};

// Replays a trace `generate` wrote: its own config, with what the command sets in place.
report::StepReport replay_generated(run::PreparedStep& step, const std::string& path,
                                    const ReplayArgs& a, const trace::ReplayTarget& target,
                                    CommandIo& io) {
  auto* cluster = step.config.mutable_cluster();
  // Compute stays timed for the trace's GPU unless --gpu names another, even on a new cluster.
  if (!a.topology.empty()) cluster->set_topology(a.topology);
  if (!a.gpu.empty()) cluster->set_gpu(a.gpu);
  if (!a.network.empty()) step.config.set_network(target.network);
  if (!target.fluid_collectives) step.config.mutable_simulation()->set_fluid_collectives(false);
  apply_replay_sets(step.config, a.sets);
  run::SimulationOptions options;
  options.on_progress = simulation_progress(io);
  return run::simulate_prepared(step, path, options);
}

}  // namespace

int replay_command(const std::vector<std::string>& args, CommandIo& given_io) {
  ReplayArgs a;
  po::options_description opts(
      "usage: clustersim replay FILE.pb [--topology X] [--gpu Y] [--network M] [--set K=V]...\n"
      "                         [--json F]\n"
      "       clustersim replay --chakra PREFIX [--topology X] [--gpu Y] [--comm-groups F.json]\n"
      "                         [--cpu-ops host|skip] [--strict-deps]\n\n"
      "Simulates a workload trace and prints the report `run` prints. A trace from `generate`\n"
      "can be retargeted to another topology or GPU (compute is re-timed). --chakra reads\n"
      "PREFIX.0.et, PREFIX.1.et, ... (gzip accepted) until a rank file is missing, as the\n"
      "PyTorch execution-trace observer + Kineto + chakra converter write them (schema 1.0.x)\n"
      "or ASTRA-sim's generators do, and first prints what it read and what it "
      "dropped.\n\noptions");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("chakra", po::value(&a.chakra), "replay the Chakra execution trace with this file prefix")
      ("topology", po::value(&a.topology),
       "cluster preset or file (default: the trace's; dgx-h100 for imported traces)")
      ("gpu", po::value(&a.gpu), "GPU profile to time compute for (default: the trace's)")
      ("network", po::value(&a.network), "congestion_aware, analytical or ideal")
      ("messages", "run every collective message by message, not as fluid transfers "
                   "(simulation.fluid_collectives=false)")
      ("set", po::value(&a.sets)->composing(),
       "nccl.KEY=V or effects.KEY=V for an effect that acts on the cluster (NCCL's model, "
       "the all-to-all wire, interference), as `run --set` takes them; repeatable")
      ("json", po::value(&a.json),
       "also write the report as JSON to this file (-: to stdout, the table then to stderr)");
  // clang-format on
  a.flags.add_to(opts);
  const auto vm = parse(args, opts, "trace", 1);
  if (vm.count("help")) return given_io.out << opts << '\n', 0;
  CommandIo io = check_outputs(given_io, {{"--json", a.json}});
  const std::string path = positional(vm, "trace");
  if (path.empty() == a.chakra.empty()) throw UsageError("give either FILE.pb or --chakra PREFIX");
  // GPU- and topology-keyed tables compare the presets' own names: "H100" must mean "h100".
  a.gpu = canonical_preset_name("topologies/gpus", a.gpu);
  a.topology = canonical_preset_name("topologies", a.topology);
  trace::ReplayTarget target;
  target.topology = a.topology.empty() ? "dgx-h100" : a.topology;
  target.gpu = a.gpu;
  if (!a.network.empty()) target.network = network_mode(a.network);
  target.fluid_collectives = vm.count("messages") == 0;
  clustersim::RunConfig knobs = trace::replay_config(target);
  apply_replay_sets(knobs, a.sets);
  target.nccl = knobs.nccl();
  target.effects = knobs.effects();

  if (!a.chakra.empty()) {
    const auto r = replay_chakra(a.chakra, a.flags, target, io);
    trace::print_workload_table(io.out, r);
    write_report_json(io, a.json, r);
    return 0;
  }
  if (!a.flags.groups.empty() || a.flags.strict_deps || vm.count("cpu-ops"))
    throw UsageError("--comm-groups, --cpu-ops and --strict-deps go with --chakra");
  auto loaded = trace::from_trace(trace::read_trace_file(path), path);
  if (loaded.workload) {
    if (!a.gpu.empty()) trace::retime_workload(*loaded.workload, a.gpu);
    const auto name = std::filesystem::path(path).stem().string();
    const auto r =
        trace::simulate_workload(*loaded.workload, target, name, path, simulation_progress(io));
    trace::print_workload_table(io.out, r);
    write_report_json(io, a.json, r);
    return 0;
  }
  const auto r = replay_generated(*loaded.step, path, a, target, io);
  report::print_table(io.out, r);
  write_report_json(io, a.json, r);
  return 0;
}

int convert_command(const std::vector<std::string>& args, CommandIo& io) {
  std::string chakra, output, to_chakra, gpu;
  ChakraFlags flags;
  po::options_description opts(
      "usage: clustersim convert --chakra PREFIX -o FILE.pb [--gpu Y] [--comm-groups F.json]\n"
      "       clustersim convert FILE.pb --to-chakra PREFIX\n\n"
      "Translates between Chakra execution traces (one .et file per rank) and clustersim's\n"
      "trace. --to-chakra writes PREFIX.<rank>.et for every rank and PREFIX.comm_groups.json;\n"
      "stream order becomes ctrl_deps.\n\noptions");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("chakra", po::value(&chakra), "the Chakra trace's file prefix")
      ("output,o", po::value(&output), "the clustersim trace to write")
      ("to-chakra", po::value(&to_chakra), "the Chakra file prefix to write")
      ("gpu", po::value(&gpu), "GPU that times COMP nodes without a duration (default h100)");
  // clang-format on
  flags.add_to(opts);
  const auto vm = parse(args, opts, "trace", 1);
  if (vm.count("help")) return io.out << opts << '\n', 0;
  const std::string path = positional(vm, "trace");
  if (!chakra.empty()) {
    if (output.empty() || !path.empty() || !to_chakra.empty())
      throw UsageError("convert --chakra PREFIX takes -o FILE.pb and nothing else to convert");
    check_trace_output("-o", output, io);
    const compute::KernelCostModel cost(compute::load_gpu_profile(compute::gpu_or_default(gpu)));
    trace::ChakraSummary summary;
    const auto workload = flags.read(chakra, cost, &summary);
    trace::print_chakra_summary(io.out, summary);
    trace::write_trace_file(trace::to_trace(workload, "chakra " + chakra), output);
    print_to(io.out, "%s: %zu ranks from %s.*.et\n", output.c_str(),
             workload.program_of_rank.size(), chakra.c_str());
    return 0;
  }
  if (path.empty() || to_chakra.empty())
    throw UsageError("give --chakra PREFIX -o FILE.pb, or FILE.pb --to-chakra PREFIX");
  check_trace_output("--to-chakra", to_chakra + ".comm_groups.json", io);
  auto loaded = trace::from_trace(trace::read_trace_file(path), path);
  const auto workload =
      loaded.workload ? std::move(*loaded.workload) : trace::expand_layout(*loaded.step);
  trace::write_chakra(workload, to_chakra);
  print_to(io.out, "%s.{0..%zu}.et and %s.comm_groups.json written\n", to_chakra.c_str(),
           workload.program_of_rank.size() - 1, to_chakra.c_str());
  return 0;
}

}  // namespace cs::cli
