// `clustersim run` and `clustersim presets`: time one training step; list what is built in.
#include <algorithm>
#include <boost/program_options.hpp>
#include <optional>

#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/progress.h"
#include "sim/cli/run_args.h"
#include "sim/compute/gpu_profile.h"
#include "sim/config/embedded_presets.h"
#include "sim/config/run_config.h"
#include "sim/config/stack_profile.h"
#include "sim/config/text_proto.h"
#include "sim/report/timeline.h"
#include "sim/run/step_simulation.h"
#include "sim/run/timeline_options.h"
#include "sim/workload/layout.h"
#include "sim/workload/layout_config.h"

namespace cs::cli {

namespace po = boost::program_options;

namespace {

// Parses `run`'s arguments, keeping configs and presets in the order given. Returns false after
// printing the help.
bool parse_run_args(const std::vector<std::string>& args, RunArgs& run, std::ostream& help_out) {
  std::vector<std::string> presets, paths;
  po::options_description opts(
      "usage: clustersim run CONFIG [options]\n       clustersim run --preset NAME [options]\n"
      "       clustersim run CONFIG|--preset NAME CONFIG|--preset NAME... [--placement P]\n\n"
      "Simulates one training step of a model, parallel layout and cluster on every GPU, and\n"
      "reports step time, throughput, MFU, pipeline bubbles, communication and memory.\n"
      "With two or more configs (files and presets, in any mix) the jobs run at once on the\n"
      "first one's cluster and network; each job repeats its step while another is still in\n"
      "its first, and is also run alone on the same GPUs for its slowdown.\n\noptions");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("preset", po::value(&presets)->composing(),
       "a built-in configuration (see clustersim presets); repeat it for several jobs")
      ("hf-config", po::value(&run.hf_config),
       "replace the configuration's model by the one of this Hugging Face config.json (or its "
       "folder): Llama, Mistral, Qwen2, Qwen3, Mixtral, Qwen3-MoE or DeepSeek-V3; the training "
       "seq_length stays the config's (one job only). Alone (no CONFIG or --preset), the layout, "
       "cluster and seq_length are the llama3-8b preset's: TP 2 x DP 32 on 64 H100s, 8192 "
       "tokens")
      ("set", po::value(&run.overrides)->composing(),
       "override a field by its dotted path, e.g. --set parallel.pp=8 (repeatable; every job)")
      ("job-set", po::value(&run.job_overrides)->composing(),
       "several jobs: override a field of job J (numbered from 0 in the order given), e.g. "
       "--job-set 1:parallel.dp=8 (repeatable)")
      ("placement", po::value(&run.placement),
       "several jobs: packed (job 0 on the first servers, job 1 from the next free server), "
       "spread (servers dealt round robin to the jobs) or GPU ranges, one per job, each "
       "starting on a server boundary, e.g. 0-511,512-1023 (default packed)")
      ("json", po::value(&run.json),
       "also write the report as JSON to this file (-: to stdout, the table then to stderr)")
      ("timeline", po::value(&run.timeline_path),
       "write a Chrome/Perfetto trace of the step (open in ui.perfetto.dev) to this file (-: "
       "stdout)")
      ("timeline-ranks", po::value(&run.timeline_ranks),
       "ranks in the timeline, e.g. 0-15,1024 (default: the first rank of each pipeline stage)");
  // clang-format on
  po::options_description hidden;
  hidden.add_options()("config", po::value(&paths)->composing());
  po::positional_options_description positional;
  positional.add("config", -1);
  po::options_description all;
  all.add(opts).add(hidden);
  po::variables_map vm;
  try {
    const auto parsed = po::command_line_parser(args).options(all).positional(positional).run();
    po::store(parsed, vm);
    if (vm.count("help")) {
      help_out << opts << '\n';
      return false;
    }
    po::notify(vm);
    for (const auto& o : parsed.options) {
      if (o.string_key == "config") run.jobs.push_back({o.value.at(0), ""});
      if (o.string_key == "preset") run.jobs.push_back({"", o.value.at(0)});
    }
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return true;
}

int run_one_job(const RunArgs& args, CommandIo& io) {
  if (!args.placement.empty()) throw UsageError("--placement needs two or more configs");
  if (!args.job_overrides.empty()) throw UsageError("--job-set needs two or more configs");
  if (!args.timeline_ranks.empty() && args.timeline_path.empty())
    throw UsageError("--timeline-ranks needs --timeline FILE");
  const JobArg& job = args.jobs.front();
  const LoadedConfig loaded = load_run_config(job.path, job.preset, args.overrides, args.hf_config);
  // The layout is built only for a timeline, so that bad sizes get simulate_step's messages.
  std::optional<report::Timeline> timeline;
  if (!args.timeline_path.empty()) {
    const workload::Layout layout = workload::layout_of(loaded.config.parallel());
    try {
      timeline.emplace(layout, args.timeline_ranks.empty()
                                   ? report::default_timeline_ranks(layout)
                                   : report::parse_rank_list(args.timeline_ranks, layout.world()));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--timeline-ranks: ") + e.what());
    }
  }
  run::SimulationOptions options =
      timeline ? run::with_timeline(*timeline) : run::SimulationOptions{};
  options.on_progress = simulation_progress(io);
  const report::StepReport report = run::simulate_step(loaded.config, loaded.source, options);
  report::print_table(io.out, report);
  if (!args.json.empty())
    write_file(io, args.json, [&](std::ostream& out) { report::write_json(out, report); });
  if (timeline)
    write_file(io, args.timeline_path, [&](std::ostream& out) { timeline->write_json(out); });
  return 0;
}

}  // namespace

int run_command(const std::vector<std::string>& args, CommandIo& io) {
  RunArgs run;
  if (!parse_run_args(args, run, io.out)) return 0;
  if (run.jobs.empty() && !run.hf_config.empty()) run.jobs.push_back({"", kHfConfigBasePreset});
  if (run.jobs.empty()) throw UsageError("give either a config file or --preset NAME");
  CommandIo out = check_outputs(io, {{"--json", run.json}, {"--timeline", run.timeline_path}});
  return run.jobs.size() == 1 ? run_one_job(run, out) : run_several_jobs(run, out);
}

int presets_command(const std::vector<std::string>& args, CommandIo& io) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    io.out << "usage: clustersim presets\n\nLists the built-in workloads, topologies, GPUs and "
              "software stacks.\n";
    return 0;
  }
  if (!args.empty()) throw UsageError("presets takes no arguments");
  io.out << "workloads (clustersim run --preset NAME):\n";
  const auto workloads = preset_names("workloads");
  std::size_t width = 0;  // the descriptions in one column, after the longest name
  for (const auto& name : workloads) width = std::max(width, name.size());
  for (const auto& name : workloads) {
    clustersim::RunConfig config;
    parse_text_proto(find_preset("workloads", name)->text, name, &config);
    io.out << "  " << name << std::string(width + 2 - name.size(), ' ') << config.description()
           << '\n';
  }
  io.out << "topologies (--topology NAME, cluster.topology):\n";
  for (const auto& name : preset_names("topologies")) io.out << "  " << name << '\n';
  io.out << "gpus (cluster.gpu):\n";
  for (const auto& name : compute::gpu_profile_names()) io.out << "  " << name << '\n';
  io.out << "software stacks (software_stack, stack_variant):\n";
  for (const auto& name : stack_profile_names()) {
    const StackProfile p = load_stack_profile(name);
    io.out << "  " << name << std::string(name.size() < 16 ? 16 - name.size() : 1, ' ')
           << clustersim::SoftwareStack_Name(p.stack())
           << (p.default_variant() ? " (default): " : ": ") << p.description() << '\n';
  }
  return 0;
}

}  // namespace cs::cli
