// `clustersim run` and `clustersim presets`: time one training step; list what is built in.
#include <boost/program_options.hpp>
#include <iostream>
#include <optional>

#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/progress.h"
#include "sim/compute/gpu_profile.h"
#include "sim/config/embedded_presets.h"
#include "sim/config/run_config.h"
#include "sim/config/text_proto.h"
#include "sim/report/timeline.h"
#include "sim/run/step_simulation.h"
#include "sim/run/timeline_options.h"
#include "sim/workload/layout.h"
#include "sim/workload/layout_config.h"

namespace cs::cli {

namespace po = boost::program_options;

int run_command(const std::vector<std::string>& args) {
  std::string path, json, timeline_path, timeline_ranks;
  ConfigOptions config;
  po::options_description opts(
      "usage: clustersim run CONFIG [options]\n       clustersim run --preset NAME [options]\n\n"
      "Simulates one training step of a model, parallel layout and cluster on every GPU, and\n"
      "reports step time, throughput, MFU, pipeline bubbles, communication and memory.\n\noptions");
  config.add_to(opts, "override a field by its dotted path, e.g. --set parallel.pp=8 (repeatable)");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("json", po::value(&json), "also write the report as JSON to this file")
      ("timeline", po::value(&timeline_path),
       "write a Chrome/Perfetto trace of the step (open in ui.perfetto.dev) to this file")
      ("timeline-ranks", po::value(&timeline_ranks),
       "ranks in the timeline, e.g. 0-15,1024 (default: the first rank of each pipeline stage)");
  // clang-format on
  po::variables_map vm;
  if (!parse_options(args, opts, &path, vm)) return 0;

  if (!timeline_ranks.empty() && timeline_path.empty())
    throw UsageError("--timeline-ranks needs --timeline FILE");

  const LoadedConfig loaded = config.load(path);
  // The layout is built only for a timeline, so that bad sizes get simulate_step's messages.
  std::optional<report::Timeline> timeline;
  if (!timeline_path.empty()) {
    const workload::Layout layout = workload::layout_of(loaded.config.parallel());
    try {
      timeline.emplace(layout, timeline_ranks.empty()
                                   ? report::default_timeline_ranks(layout)
                                   : report::parse_rank_list(timeline_ranks, layout.world()));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--timeline-ranks: ") + e.what());
    }
  }
  run::SimulationOptions options =
      timeline ? run::with_timeline(*timeline) : run::SimulationOptions{};
  options.on_progress = simulation_progress();
  const report::StepReport report = run::simulate_step(loaded.config, loaded.source, options);
  report::print_table(std::cout, report);
  if (!json.empty()) write_file(json, [&](std::ostream& out) { report::write_json(out, report); });
  if (timeline) write_file(timeline_path, [&](std::ostream& out) { timeline->write_json(out); });
  return 0;
}

int presets_command(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout
        << "usage: clustersim presets\n\nLists the built-in workloads, topologies and GPUs.\n";
    return 0;
  }
  if (!args.empty()) throw UsageError("presets takes no arguments");
  std::cout << "workloads (clustersim run --preset NAME):\n";
  for (const auto& name : preset_names("workloads")) {
    clustersim::RunConfig config;
    parse_text_proto(find_preset("workloads", name)->text, name, &config);
    std::cout << "  " << name << std::string(name.size() < 14 ? 14 - name.size() : 1, ' ')
              << config.description() << '\n';
  }
  std::cout << "topologies (--topology NAME, cluster.topology):\n";
  for (const auto& name : preset_names("topologies")) std::cout << "  " << name << '\n';
  std::cout << "gpus (cluster.gpu):\n";
  for (const auto& name : compute::gpu_profile_names()) std::cout << "  " << name << '\n';
  return 0;
}

}  // namespace cs::cli
