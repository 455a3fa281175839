// `clustersim memory`, `plan` and `verify`: instant memory breakdowns, the layout planner with
// cost, and numerical checks of the parallel math.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <functional>
#include <optional>
#include <sstream>
#include <thread>

#include "sim/cli/commands.h"
#include "sim/cli/mpi_world.h"
#include "sim/cli/options.h"
#include "sim/cli/progress.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/compute/gpu_profile.h"
#include "sim/config/config_diff.h"
#include "sim/config/field_checks.h"
#include "sim/config/run_config.h"
#include "sim/cost/host.h"
#include "sim/net/topology_builder.h"
#include "sim/plan/memory_report.h"
#include "sim/plan/planner.h"
#include "sim/report/json.h"
#include "sim/run/step_simulation.h"
#include "sim/verify/checks.h"
#include "sim/workload/layout_config.h"

namespace cs::cli {

namespace po = boost::program_options;

namespace {

// GPUs of one NVLink domain the job uses (cluster.gpus_per_node over the topology's own): the
// unit the planner fills with TP and EP groups.
int32_t gpus_per_node_of(const clustersim::ClusterConfig& cluster, const std::string& source) {
  if (cluster.topology().empty()) return 8;
  auto desc = net::resolve_topology(cluster.topology());
  net::override_gpus_per_node(desc, cluster.gpus_per_node(), source);
  const int32_t used = net::gpus_per_node_in_use(desc);
  return used > 0 ? used : 8;
}

// --rank-order: "auto" (none pinned) or a ParallelConfig.RankOrder name.
std::optional<clustersim::ParallelConfig::RankOrder> parse_rank_order(const std::string& name) {
  if (name == "auto") return std::nullopt;
  clustersim::ParallelConfig::RankOrder order{};
  if (!clustersim::ParallelConfig::RankOrder_Parse(name, &order))
    throw UsageError("--rank-order must be auto, TP_CP_PP_DP or TP_CP_DP_PP, got '" + name + "'");
  return order;
}

// `arg` as one shell word: quoted when it holds anything but plain path and number characters.
std::string shell_word(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789._,=/:+-") == std::string::npos)
    return arg;
  std::string quoted = "'";
  for (const char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// One `clustersim run` line per ranked layout: the plan's own CONFIG or --preset, --hf-config and
// --set, then a --set for each field the layout changed, so that a reader copies the line rather
// than translating "TP 8 x PP 4, mbs 2" back into field names.
void print_run_lines(std::ostream& out, const ConfigOptions& config, const std::string& path,
                     const clustersim::RunConfig& as_loaded, const plan::PlanResult& result,
                     int32_t top) {
  const std::size_t n = std::min<std::size_t>(result.ranked.size(), static_cast<std::size_t>(top));
  if (n == 0) return;
  std::string prefix = "clustersim run";
  if (!path.empty()) prefix += " " + shell_word(path);
  if (!config.preset.empty()) prefix += " --preset " + shell_word(config.preset);
  if (!config.hf_config.empty()) prefix += " --hf-config " + shell_word(config.hf_config);
  for (const auto& o : config.overrides) prefix += " --set " + shell_word(o);
  out << "\nto run them:\n";
  for (std::size_t i = 0; i < n; ++i) {
    std::string line = prefix;
    for (const auto& o : override_diff(as_loaded, result.ranked[i].config))
      line += " --set " + shell_word(o);
    out << "  #" << i + 1 << (i < 9 ? "  " : " ") << line << '\n';
  }
}

// --min-gpus: the fewest GPUs that hold the model and that layout's analytical step, as text and
// (with --json) as {"model", "max_gpus", "gpus": 0 when nothing fits, and the layout's figures}.
int min_gpus_command(CommandIo& io, const clustersim::RunConfig& base, int64_t max_gpus,
                     int32_t per_node, std::optional<clustersim::ParallelConfig::RankOrder> order,
                     const std::string& json, double reserve_bytes) {
  const plan::MinGpus min = plan::find_min_gpus(base, max_gpus, per_node, order, reserve_bytes);
  std::optional<report::StepReport> r;
  if (min.gpus == 0) {
    io.out << "no layout fits on up to " << max_gpus << " GPUs\n";
  } else {
    io.out << base.model().name() << " fits on " << min.gpus << " x " << base.cluster().gpu()
           << " at the fewest: " << plan::short_layout(min.layout.config) << ", "
           << min.layout.fit.peak / 1e9 << " GB of " << min.layout.fit.capacity / 1e9
           << " GB per GPU (global batch " << base.parallel().global_batch_size() << ")\n";
    clustersim::RunConfig sim = min.layout.config;
    sim.set_network(clustersim::ANALYTICAL);
    r = run::simulate_step(sim, "min-gpus layout");
    print_to(io.out,
             "  step %.2f s, MFU %.1f%%; %.3g tokens take %.1f days, %.3g GPU-hours, $%.4g\n",
             r->iteration_time_s, 100 * r->mfu, r->cost.train_tokens, r->cost.wall_days,
             r->cost.gpu_hours, r->cost.dollars);
  }
  if (!json.empty()) {
    report::Json doc = {{"model", base.model().name()},
                        {"gpu", base.cluster().gpu()},
                        {"max_gpus", max_gpus},
                        {"gpus", min.gpus}};
    if (r) {
      doc["layout"] = plan::short_layout(min.layout.config);
      doc["peak_memory_gb"] = min.layout.fit.peak / 1e9;
      doc["capacity_gb"] = min.layout.fit.capacity / 1e9;
      doc["global_batch_size"] = base.parallel().global_batch_size();
      doc["analytical_iteration_time_s"] = r->iteration_time_s;
      doc["mfu"] = r->mfu;
      doc["train_tokens"] = r->cost.train_tokens;
      doc["wall_days"] = r->cost.wall_days;
      doc["gpu_hours"] = r->cost.gpu_hours;
      doc["dollars"] = r->cost.dollars;
    }
    write_file(io, json, [&](std::ostream& out) { report::write_document(out, doc); });
  }
  return r ? 0 : 3;
}

}  // namespace

int memory_command(const std::vector<std::string>& args, CommandIo& given_io) {
  std::string path, json, gpu;
  ConfigOptions config;
  po::options_description opts(
      "usage: clustersim memory CONFIG [options]\n       clustersim memory --preset NAME "
      "[options]\n\nPer-GPU memory of a configuration, instantly (no simulation): weights,\n"
      "gradients, fp32 master / Adam m / Adam v, activations and temporaries per pipeline stage,\n"
      "the peak against HBM, offloaded states against host RAM / NVMe, and side-by-side\n"
      "comparisons of precisions and checkpointing policies.\n\noptions");
  config.add_to(opts,
                "override a field, e.g. --set parallel.checkpoint_every_k_layers=4, --set "
                "offload.optimizer=CPU (repeatable)");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("gpu", po::value(&gpu), "GPU profile: a preset of topologies/gpus/ or a file, overriding cluster.gpu")
      ("json", po::value(&json),
       "also write the report as JSON to this file (-: to stdout, the report then to stderr)");
  // clang-format on
  po::variables_map vm;
  if (!parse_options(args, opts, &path, vm, given_io.out)) return 0;
  CommandIo io = check_outputs(given_io, {{"--json", json}});
  LoadedConfig loaded = config.load(path);
  if (!gpu.empty()) loaded.config.mutable_cluster()->set_gpu(gpu);
  canonicalize_preset_names(loaded.config);
  const plan::MemoryReport report = plan::build_memory_report(loaded.config, loaded.source);
  plan::print_memory_report(io.out, report);
  if (!json.empty())
    write_file(io, json, [&](std::ostream& out) { plan::write_memory_json(out, report); });
  return report.fits && report.fits_host ? 0 : 3;
}

namespace {

// "all" or a comma-separated list of SoftwareStack names; empty: none (the config's own).
std::vector<clustersim::SoftwareStack> parse_stacks(const std::string& text) {
  std::vector<clustersim::SoftwareStack> out;
  const auto* e = clustersim::SoftwareStack_descriptor();
  if (text == "all") {
    for (int i = 0; i < e->value_count(); ++i)
      out.push_back(static_cast<clustersim::SoftwareStack>(e->value(i)->number()));
    return out;
  }
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string name(rest.substr(0, comma));
    clustersim::SoftwareStack stack;
    if (!clustersim::SoftwareStack_Parse(name, &stack))
      throw UsageError("--stacks: '" + name +
                       "' is not MEGATRON_TE, PYTORCH_FSDP, DEEPSPEED_ZERO or all");
    out.push_back(stack);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

// What `clustersim plan` was asked, as its options give it.
struct PlanArgs {
  std::string path, gpu, topology, objective = "time", json, rank_order = "auto", stacks;
  ConfigOptions config;
  int64_t gpus = 0, max_gpus = 16384;
  bool gpus_from_layout = false;  // no --gpus: the GPUs of the config's own layout
  int32_t top = 5, jobs = 0, simulate = 12, refine = 5;
  double price = 0, tokens = 0, reserve_gb = 0;
};

// "a100 2, b200 6.03, ...": each GPU profile's price_per_gpu_hour, for the help text.
std::string profile_prices() {
  std::ostringstream out;
  for (const auto& name : compute::gpu_profile_names())
    out << (out.tellp() > 0 ? ", " : "") << name << ' '
        << compute::load_gpu_profile(name).price_per_gpu_hour();
  return out.str();
}

// Adds every option of `clustersim plan` to `opts`, each writing into `a`.
void add_plan_options(po::options_description& opts, PlanArgs& a) {
  a.config.add_to(opts, "override a field (repeatable)");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("gpu", po::value(&a.gpu), "GPU profile: a preset of topologies/gpus/ or a file")
      ("gpus", po::value(&a.gpus), "number of GPUs (default: the config's own layout's)")
      ("topology", po::value(&a.topology), "topology preset or file (default: the config's)")
      ("objective", po::value(&a.objective), "time (fastest step) or cost (cheapest run; also "
       "tries N/2 and N/4 GPUs)")
      ("top", po::value(&a.top), "candidates to print (default 5)")
      ("simulate", po::value(&a.simulate), "candidates to simulate (default 12; 0: rank by the estimate alone)")
      ("refine", po::value(&a.refine), "leaders re-run congestion-aware and ranked by it "
       "(default 5; 0: analytical ranking only)")
      ("jobs", po::value(&a.jobs), "simulation threads (default: hardware threads)")
      ("rank-order", po::value(&a.rank_order), "rank order of every candidate: TP_CP_PP_DP or "
       "TP_CP_DP_PP (default auto: TP_CP_DP_PP where experts are split over EP > 1, keeping an "
       "EP group on one server; otherwise the config's)")
      ("stacks", po::value(&a.stacks), "software stacks to search, comma-separated "
       "(MEGATRON_TE, PYTORCH_FSDP, DEEPSPEED_ZERO) or all (default: the config's own)")
      ("min-gpus", "find the fewest GPUs on which the model fits, and the layout")
      ("reserve-gb", po::value(&a.reserve_gb), "GB of HBM per GPU kept free by the fits test, for "
       "what the memory model leaves out: CUDA context, NCCL buffers, allocator fragmentation "
       "(default 0: a layout fits when its modelled peak fits the whole HBM; 2-5 GB is typical)")
      ("max-gpus", po::value(&a.max_gpus), "upper bound of the --min-gpus search (default 16384)")
      ("price-per-gpu-hour", po::value(&a.price),
       ("dollars per GPU-hour (default: the GPU profile's, " + profile_prices() + ")").c_str())
      ("train-tokens", po::value(&a.tokens), "tokens of the whole run (default cost.train_tokens, 1e12)")
      ("json", po::value(&a.json), "also write the ranking (or the --min-gpus answer) as JSON to "
       "this file (-: to stdout, the ranking then to stderr)");
  // clang-format on
}

// Applies --gpu, --topology, --price-per-gpu-hour and --train-tokens to `base`. A flag given is a
// value the user means: refused when out of range, never skipped.
void apply_plan_flags(clustersim::RunConfig& base, const PlanArgs& a, const po::variables_map& vm) {
  if (!a.gpu.empty()) base.mutable_cluster()->set_gpu(a.gpu);
  if (!a.topology.empty()) base.mutable_cluster()->set_topology(a.topology);
  canonicalize_preset_names(base);
  if (base.cluster().gpu().empty() && !base.cluster().topology().empty())
    base.mutable_cluster()->set_gpu(net::resolve_topology(base.cluster().topology()).gpu());
  if (vm.count("price-per-gpu-hour")) {
    if (!(a.price > 0 && a.price <= 1e6))
      throw UsageError("--price-per-gpu-hour must be in (0, 1e6] dollars, got " +
                       number_text(a.price));
    base.mutable_cost()->set_price_per_gpu_hour(a.price);
  }
  if (vm.count("train-tokens")) {
    if (!(a.tokens > 0 && a.tokens <= 1e18))
      throw UsageError("--train-tokens must be in (0, 1e18], got " + number_text(a.tokens));
    base.mutable_cost()->set_train_tokens(a.tokens);
  }
}

// Throws UsageError for counts out of range, a bad cost section or an unknown objective.
void check_plan_request(const clustersim::RunConfig& base, const PlanArgs& a,
                        const po::variables_map& vm, const std::string& source) {
  for (const auto& [flag, v] :
       {std::pair{"--simulate", a.simulate}, {"--top", a.top}, {"--jobs", a.jobs}})
    if (v < 0)
      throw UsageError(std::string(flag) + " must not be negative, got " + std::to_string(v));
  if (vm.count("max-gpus") && a.max_gpus <= 0)
    throw UsageError("--max-gpus must be positive, got " + std::to_string(a.max_gpus));
  if (vm.count("gpus") && a.gpus <= 0)
    throw UsageError("--gpus must be positive, got " + std::to_string(a.gpus));
  cost::validate_cost(base.cost(), source);
  if (a.objective != "time" && a.objective != "cost")
    throw UsageError("--objective must be time or cost, got '" + a.objective + "'");
}

// The GPU the layouts are sized for, checked before any is built: an unknown one names where it
// came from (--gpu, or the config's cluster.gpu), and a --reserve-gb at or above its HBM is
// refused rather than refusing every layout (with --min-gpus, after trying every GPU count).
void check_plan_gpu(const clustersim::RunConfig& base, const PlanArgs& a,
                    const std::string& source) {
  try {
    compute::load_gpu_profile(compute::gpu_or_default(base.cluster().gpu()));
  } catch (const ConfigError& e) {
    if (!a.gpu.empty()) throw UsageError(std::string("--gpu: ") + e.what());
    throw ConfigError(source + ": cluster.gpu: " + e.what());
  }
  try {
    plan::usable_hbm_bytes(base, a.reserve_gb * 1e9, "--reserve-gb");
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

// Throws UsageError unless --simulate and --refine are in range. Each candidate simulated is a
// whole step (seconds at thousands of GPUs); the analytical pre-estimate exists so that a few
// suffice. A bound keeps a typo from running for hours.
void check_search_counts(const PlanArgs& a) {
  constexpr int32_t kMaxSimulate = 1000;
  if (a.simulate < 0 || a.simulate > kMaxSimulate)
    throw UsageError("--simulate must be in [0, " + std::to_string(kMaxSimulate) + "], got " +
                     std::to_string(a.simulate) +
                     " (each candidate is a whole step simulation; the analytical estimate ranks "
                     "the rest)");
  if (a.refine < 0)
    throw UsageError("--refine must not be negative, got " + std::to_string(a.refine));
}

// A candidate's step costs about its GPU count to simulate: past 16,384 GPUs the default
// --simulate and --refine shrink so that a search costs what the defaults cost there (flags given
// are kept). Returns what was shrunk, for the heading ("" when nothing).
std::string shrink_search_defaults(PlanArgs& a, const po::variables_map& vm) {
  std::string bounded;
  constexpr int64_t kDefaultsAtGpus = 16384;
  auto scaled = [&](int32_t& value, const std::string& option, int32_t floor) {
    if (vm.count(option) || a.gpus <= kDefaultsAtGpus) return;
    const auto fewer =
        static_cast<int32_t>(std::max<int64_t>(floor, value * kDefaultsAtGpus / a.gpus));
    bounded += (bounded.empty() ? "--" : ", --") + option + " " + std::to_string(fewer) +
               " (default " + std::to_string(value) + ")";
    value = fewer;
  };
  scaled(a.simulate, "simulate", 1);
  scaled(a.refine, "refine", 0);
  return bounded;
}

// The planner's options from the command's, before the MPI world and progress are added.
plan::PlanOptions plan_options_of(const PlanArgs& a, int32_t per_node,
                                  std::optional<clustersim::ParallelConfig::RankOrder> order) {
  plan::PlanOptions options;
  options.gpus = a.gpus;
  options.gpus_per_node = per_node;
  options.objective = a.objective == "cost" ? plan::Objective::kCost : plan::Objective::kTime;
  options.top = a.top;
  options.simulate = a.simulate;
  options.refine = a.refine;
  options.rank_order = order;
  options.stacks = parse_stacks(a.stacks);
  options.reserve_bytes = a.reserve_gb * 1e9;
  return options;
}

// Runs the planner on this rank; a failure under mpirun aborts every rank, which would otherwise
// wait for this one.
plan::PlanResult plan_on_this_rank(const clustersim::RunConfig& base,
                                   const plan::PlanOptions& options, const World& world) {
  try {
    return plan::plan_layouts(base, options);
  } catch (const std::exception& e) {
    if (world.size() == 1) throw;
    std::fprintf(stderr, "clustersim plan (rank %d): error: %s\n", world.rank(), e.what());
    world.abort();
  }
}

// The heading, the ranking with the run lines that reproduce it, and the JSON when asked for.
void print_plan_outputs(const CommandIo& io, const PlanArgs& a, const clustersim::RunConfig& base,
                        const clustersim::RunConfig& as_loaded, const std::string& bounded,
                        const plan::PlanResult& result, const plan::PlanOptions& options) {
  io.out << base.model().name() << " on " << a.gpus << " x " << base.cluster().gpu() << " ("
         << base.cluster().topology() << "), global batch " << base.parallel().global_batch_size()
         << " x " << base.model().seq_length() << " tokens\n";
  if (a.gpus_from_layout)
    io.out << a.gpus << " GPUs: the config's own layout's; --gpus N plans on another count\n";
  if (!bounded.empty())
    io.out << "bounded at " << a.gpus
           << " GPUs, where a candidate takes seconds to simulate: " << bounded
           << "; give them to choose\n";
  plan::print_plan(io.out, result, options);
  print_run_lines(io.out, a.config, a.path, as_loaded, result, a.top);
  if (!a.json.empty())
    write_file(io, a.json, [&](std::ostream& out) { plan::write_plan_json(out, result, options); });
}

}  // namespace

int plan_command(const std::vector<std::string>& args, CommandIo& given_io) {
  PlanArgs a;
  po::options_description opts(
      "usage: clustersim plan --preset NAME [--gpus N] [options]\n       clustersim plan CONFIG "
      "[--gpus N] [options]\n       clustersim plan --preset NAME --min-gpus\n\n"
      "Enumerates the parallel layouts of the model on N GPUs (by default the GPUs of the\n"
      "config's own layout): TP, CP, PP, DP, virtual stages, schedule, ZeRO stage, microbatch\n"
      "size, recompute; EP and expert TP for a mixture of experts; the config's own choices\n"
      "too, and its own layout with DP scaled to N. It drops those that do not fit in HBM,\n"
      "ranks the rest by an analytical estimate, simulates the best --simulate of them in\n"
      "parallel threads on the congestion-free analytical network, runs the best --refine of\n"
      "those again on the congestion-aware network and ranks them by it, and prints the top\n"
      "ones with why they win or lose. With --simulate 0 the ranking is the estimate's alone,\n"
      "in seconds at any scale.\n"
      "With --stacks, every layout is tried under each software stack named.\n"
      "Where no layout on N GPUs is valid (1,000 GPUs for a batch of 1,024 sequences), it\n"
      "plans on the most whole servers below N (at most 64 fewer, at least N/2) that have\n"
      "one, and says so.\n"
      "When none is left it says why (the fields invalid layouts fail on, the smallest\n"
      "memory among those that do not fit) and exits 3. Each ranked layout comes with the\n"
      "`clustersim run` line that simulates it. On a terminal, stderr shows the progress.\n\n"
      "options");
  add_plan_options(opts, a);
  po::variables_map vm;
  if (!parse_options(args, opts, &a.path, vm, given_io.out)) return 0;
  CommandIo io = check_outputs(given_io, {{"--json", a.json}});
  if (a.reserve_gb < 0)
    throw UsageError("--reserve-gb must not be negative, got " + report::one_line(a.reserve_gb));
  LoadedConfig loaded = a.config.load(a.path);
  const clustersim::RunConfig as_loaded = loaded.config;  // what the run lines start from
  auto& base = loaded.config;
  apply_plan_flags(base, a, vm);
  check_plan_request(base, a, vm, loaded.source);
  check_plan_gpu(base, a, loaded.source);
  run::apply_gradient_accumulation(base, loaded.source);
  const auto order = parse_rank_order(a.rank_order);
  const int32_t per_node = gpus_per_node_of(base.cluster(), loaded.source);

  if (vm.count("min-gpus"))
    return min_gpus_command(io, base, a.max_gpus, per_node, order, a.json, a.reserve_gb * 1e9);
  // Without --gpus the question is the config's own: the best layout on the GPUs it runs on.
  if (!vm.count("gpus")) {
    a.gpus = workload::world_of(workload::dim_sizes(base.parallel()));
    a.gpus_from_layout = true;
  }
  check_search_counts(a);
  const std::string bounded = shrink_search_defaults(a, vm);
  plan::PlanOptions options = plan_options_of(a, per_node, order);
  // Under mpirun the candidates are spread over the ranks and rank 0 prints the ranking.
  World world(io.join_mpi);
  options.jobs = a.jobs > 0 ? a.jobs : world.local_jobs();
  options.rank = world.rank();
  options.ranks = world.size();
  options.gather = [&world](const std::string& mine) { return world.gather(mine); };
  // Simulating the candidates takes minutes at scale; a terminal sees how far it got.
  PointProgress progress(io.terminal_progress && world.rank() == 0 && stderr_is_terminal(),
                         "candidates simulated");
  options.on_progress = [&progress](std::size_t done, std::size_t n) { progress.update(done, n); };
  const plan::PlanResult result = plan_on_this_rank(base, options, world);
  if (world.rank() != 0) return 0;
  print_plan_outputs(io, a, base, as_loaded, bounded, result, options);
  return result.ranked.empty() ? 3 : 0;
}

int verify_command(const std::vector<std::string>& args, CommandIo& io) {
  po::options_description opts(
      "usage: clustersim verify [options]\n\nExecutable numerical checks of the parallel math on "
      "real data (Eigen): sharded matmuls,\ndata-parallel and accumulated gradients, every "
      "collective schedule, ZeRO-sharded Adam.\nExits 1 if any check fails.\n\noptions");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("broken", "run deliberately wrong variants instead (every check should FAIL)");
  // clang-format on
  po::variables_map vm;
  if (!parse_options(args, opts, nullptr, vm, io.out)) return 0;
  verify::CheckOptions options;
  options.broken = vm.count("broken") > 0;
  int failed = 0;
  const auto results = verify::run_all_checks(options);
  for (const auto& c : results) {
    print_to(io.out, "%-4s %-44s max error %.3g (tolerance %.0e)  %s\n", c.passed() ? "ok" : "FAIL",
             c.name.c_str(), c.max_error, c.tolerance, c.detail.c_str());
    if (!c.passed()) ++failed;
  }
  print_to(io.out, "%d checks, %d failed\n", static_cast<int>(results.size()), failed);
  return failed ? 1 : 0;
}

}  // namespace cs::cli
