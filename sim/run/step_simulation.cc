#include "sim/run/step_simulation.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include "sim/coll/runner.h"
#include "sim/compute/gpu_profile.h"
#include "sim/compute/kernel_cost.h"
#include "sim/compute/precision_formats.h"
#include "sim/config/config_error.h"
#include "sim/config/field_checks.h"
#include "sim/config/run_config.h"
#include "sim/cost/goodput.h"
#include "sim/cost/host.h"
#include "sim/exec/executor.h"
#include "sim/lower/stage_work.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"
#include "sim/report/kernel_breakdown.h"
#include "sim/report/report_check.h"
#include "sim/run/config_checks.h"
#include "sim/run/extrapolation.h"
#include "sim/run/footprint.h"
#include "sim/run/moe_figures.h"
#include "sim/run/post_validation.h"
#include "sim/run/variability.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/memory.h"
#include "sim/workload/model_math.h"
#include "sim/workload/pipeline_schedule.h"
#include "sim/workload/schedules/registry.h"
#include "sim/workload/stack.h"
#include "sim/workload/validate.h"
#include "sim/world/world.h"

namespace cs::run {

namespace {

using workload::Dim;

// Peak resident memory of this process so far, from /proc (0 where it is not available).
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

compute::Precision precision_of(clustersim::Precision p) {
  return compute::format_of(p).gemm;
}

std::string layout_text(const clustersim::ParallelConfig& p) {
  std::string s = workload::dims_text(workload::dim_sizes(p));
  if (p.virtual_stages() > 1) s += " (" + std::to_string(p.virtual_stages()) + " virtual stages)";
  if (workload::sequence_parallel_on(p)) s += ", SP";
  if (p.zero_stage() > 0) s += ", ZeRO-" + std::to_string(p.zero_stage());
  if (p.recompute() != clustersim::ParallelConfig::NONE)
    s += std::string(", ") + clustersim::ParallelConfig::Recompute_Name(p.recompute()) +
         " recompute";
  return s;
}

}  // namespace

// Offload figures: host bytes per GPU against the node's share, and the offload ops' time per
// step on the stage where they take longest.
static report::OffloadFigures offload_figures(const clustersim::RunConfig& config,
                                              const compute::GpuProfile& gpu,
                                              const std::vector<workload::Program>& programs) {
  using clustersim::OffloadConfig;
  const auto& off = config.offload();
  report::OffloadFigures o;
  o.optimizer = OffloadConfig::Target_Name(off.optimizer());
  o.parameters = OffloadConfig::Target_Name(off.parameters());
  o.enabled = off.optimizer() != OffloadConfig::NONE || off.parameters() != OffloadConfig::NONE;
  if (!o.enabled) return o;
  const cost::HostFigures host = cost::host_figures(gpu, off);
  for (std::size_t s = 0; s < programs.size(); ++s) {
    const auto& prog = programs[s];
    double d2h = 0, cpu = 0, h2d = 0;
    for (const auto& op : prog.ops) {
      const std::string& label = prog.labels[op.label];
      if (label == "offload_grad_d2h") d2h += op.duration.as_seconds();
      if (label == "cpu_adam") cpu += op.duration.as_seconds();
      if (label == "offload_param_h2d") h2d += op.duration.as_seconds();
    }
    if (d2h + cpu + h2d > o.d2h_s + o.cpu_adam_s + o.h2d_s) {
      o.d2h_s = d2h;
      o.cpu_adam_s = cpu;
      o.h2d_s = h2d;
    }
    const auto mem = workload::estimate_stage_memory(config, static_cast<int32_t>(s), 0);
    o.host_dram_gb = std::max(o.host_dram_gb, static_cast<double>(mem.host_dram) / 1e9);
    o.host_nvme_gb = std::max(o.host_nvme_gb, static_cast<double>(mem.host_nvme) / 1e9);
  }
  o.host_dram_capacity_gb = host.host_memory_per_gpu() / 1e9;
  o.host_nvme_capacity_gb = host.nvme_per_gpu() / 1e9;
  o.fits_host =
      o.host_dram_gb <= o.host_dram_capacity_gb && o.host_nvme_gb <= o.host_nvme_capacity_gb;
  return o;
}

// A timeline keeps every op of its ranks (about 80 bytes each, and 230 of JSON): at most
// kMaxTimelineOps, a gigabyte of JSON, which is what a trace viewer still opens.
constexpr std::size_t kMaxTimelineOps = 5'000'000;

void refuse_timeline_if_too_big(const std::vector<int32_t>& ranks, const workload::Layout& layout,
                                const std::vector<workload::Program>& programs,
                                const std::string& source) {
  std::size_t ops = 0;
  for (const int32_t r : ranks)
    if (r >= 0 && r < layout.world())
      ops += programs[static_cast<std::size_t>(layout.coord(r, workload::Dim::kPp))].ops.size();
  if (ops <= kMaxTimelineOps) return;
  throw ConfigError(source + ": a timeline of " + std::to_string(ranks.size()) +
                    " ranks would hold " + std::to_string(ops) + " ops, more than the " +
                    std::to_string(kMaxTimelineOps) +
                    " (about 1 GB of JSON) a trace viewer opens; give fewer --timeline-ranks "
                    "(the default is the first rank of each pipeline stage)");
}

// The job's GPUs, the servers they sit in, and the NICs on those GPUs' PCIe links, which the
// per-component failure rates count (a topology may hold more than the job uses). A server
// fails the job whatever share of it the job holds; another GPU's NIC does not.
cost::FleetCounts fleet_counts(const net::Topology& topology, int32_t gpus) {
  std::set<int32_t> servers;
  int64_t nics = 0;
  const net::Graph& graph = topology.graph();
  for (int32_t g = 0; g < gpus; ++g) {
    const net::VertexId v = topology.gpu(g);
    servers.insert(topology.vertex(v).node);
    for (const auto e : boost::make_iterator_range(boost::out_edges(v, graph)))
      if (graph[boost::target(e, graph)].kind == net::VertexKind::kNic) ++nics;
  }
  return {gpus, static_cast<int64_t>(servers.size()), nics};
}

void fill_goodput(cost::RunCost& c, const clustersim::RunConfig& config,
                  const cost::FleetCounts& counts, const std::string& source) {
  const double params = static_cast<double>(workload::count_params(config.model()).total());
  const cost::Goodput g =
      cost::goodput_of(config.reliability(), cost::checkpoint_bytes(params), counts, source);
  // Interruptions that leave no time to train: the run never finishes, and no wall time or price
  // can stand for that (dividing by the goodput would give infinity; 0 would read as instant).
  if (!(g.fraction > 0)) {
    const auto& per_day = g.interruptions.per_day;
    const auto largest = static_cast<std::size_t>(std::max_element(per_day.begin(), per_day.end()) -
                                                  per_day.begin());
    const std::string rates = config.reliability().has_interruptions_per_gpu_day()
                                  ? "reliability.interruptions_per_gpu_day"
                                  : "the rates, most of all reliability." +
                                        cost::cause_field(cost::kFailureCauses[largest]);
    config_fail(source, "reliability: the run never finishes: an interruption every " +
                            number_text(g.mtbf_s) + " s on average (" + rates +
                            ") leaves no time to train after reliability.restart_s = " +
                            number_text(g.restart_s) + " s, the checkpoint read (" +
                            number_text(g.read_s) + " s at reliability.storage_gb_per_s) and " +
                            "checkpoints every reliability.checkpoint_interval_s = " +
                            number_text(g.interval_s) + " s");
  }
  c.goodput = g.fraction;
  c.mtbf_hours = g.mtbf_s / 3600;
  c.interruptions_per_day = g.interruptions.per_day;
  c.interruptions_total_per_day = g.interruptions.total_per_day;
  c.servers = counts.servers;
  c.nics = counts.nics;
  c.checkpoint_tb = g.checkpoint_bytes / 1e12;
  c.checkpoint_write_s = g.write_s;
  c.checkpoint_interval_s = g.interval_s;
  c.restart_s = g.restart_s;
  c.effective_wall_days = c.wall_days / g.fraction;
  c.effective_dollars = c.dollars / g.fraction;
}

void fill_comm_figures(report::StepReport& r, const exec::CommTally& comm,
                       const net::TrafficStats& traffic) {
  for (std::size_t i = 0; i < r.comm_bytes_by_op.size(); ++i)
    r.comm_bytes_by_op[i] = static_cast<double>(comm.by_op[i]);
  for (std::size_t i = 0; i < r.comm_bytes_by_dim.size(); ++i)
    r.comm_bytes_by_dim[i] = static_cast<double>(comm.by_dim[i]);
  auto bytes = [&](net::LinkClass c) {
    return static_cast<double>(traffic.bytes_by_class[static_cast<int>(c)]);
  };
  // Collectives timed alone never reached the network's counters; they ran on NVLink.
  r.comm_bytes_nvlink =
      bytes(net::LinkClass::kNvlink) + static_cast<double>(comm.isolated_nvlink_bytes);
  r.comm_bytes_pcie = bytes(net::LinkClass::kPcie);
  r.comm_bytes_network = bytes(net::LinkClass::kNetwork);
  for (const auto& [kind, count] : comm.by_kind) {
    if (count.calls == 0) continue;
    r.collectives_run.push_back(
        {std::string(workload::info(kind.dim).key), std::string(coll::to_string(kind.op)),
         std::string(coll::to_string(kind.algo)), std::string(coll::to_string(kind.protocol)),
         static_cast<double>(count.calls), static_cast<double>(count.bytes) / count.calls});
  }
}

// Validates and resolves `original` and builds each stage's work (no programs yet); `cluster`
// receives its resolved cluster, which the simulation then builds on.
static PreparedStep prepare_config(const clustersim::RunConfig& original, const std::string& source,
                                   std::vector<workload::StageWork>& works,
                                   std::optional<world::ResolvedCluster>& cluster) {
  clustersim::RunConfig config = original;
  CheckedConfig checked = validate_config(config, source, CheckContext::kRun);
  cluster = std::move(checked.cluster);
  const auto& par = config.parallel();
  PreparedStep prepared;
  prepared.config = config;
  prepared.config.mutable_cluster()->set_gpu(cluster->gpu_type());
  prepared.timed_for_gpu = prepared.config.cluster().gpu();
  const compute::KernelCostModel cost(*checked.gpu, compute::cost_options(config));
  const bool split = workload::schedule_info(workload::pipeline_schedule_of(par)).splits_backward;
  for (int32_t s = 0; s < par.pp(); ++s)
    works.push_back(lower::build_stage_work(prepared.config, s, cost, split));
  prepared.costs = lower::phase_costs(works[static_cast<std::size_t>(par.pp() / 2)]);
  return prepared;
}

// Every stage's exact order of work items for the config's microbatch count.
static std::vector<std::vector<workload::WorkItem>> stage_orders(
    const clustersim::RunConfig& config, const lower::StageCosts& costs) {
  const auto& par = config.parallel();
  const auto schedule = workload::pipeline_schedule_of(par);
  const int32_t p = par.pp(), v = par.virtual_stages();
  const int32_t m = workload::num_microbatches(par);
  return workload::schedule_info(schedule).splits_backward
             ? workload::pipeline_orders(schedule, p, m, v, costs.t_f, costs.t_b, costs.t_w)
             : workload::pipeline_orders(schedule, p, m, v);
}

// Programs: one per pipeline stage, shared by all of its TP, CP and DP ranks; with `programs`
// false only each stage's peak of held activations.
static void build_programs(PreparedStep& prepared, const std::vector<workload::StageWork>& works,
                           bool programs = true) {
  const auto schedule = workload::pipeline_schedule_of(prepared.config.parallel());
  const int32_t p = prepared.config.parallel().pp();
  const auto orders = stage_orders(prepared.config, prepared.costs);
  prepared.programs.clear();
  prepared.peak_held.clear();
  for (int32_t s = 0; s < p; ++s) {
    if (programs)
      prepared.programs.push_back(
          workload::build_stage_program(works[s], orders[s], schedule, s, p));
    prepared.peak_held.push_back(workload::peak_held_activations(orders[s]));
  }
}

PreparedStep prepare_step(const clustersim::RunConfig& original, const std::string& source) {
  std::vector<workload::StageWork> works;
  std::optional<world::ResolvedCluster> cluster;
  PreparedStep prepared = prepare_config(original, source, works, cluster);
  build_programs(prepared, works);
  return prepared;
}

// Expert ops keep one time per EP rank, from kernels the trace does not hold (only the mean
// rank's): they cannot be re-timed, so another GPU is refused rather than mixed with stale rows.
void retime(std::vector<workload::Program>& programs, const compute::KernelCostModel& cost,
            const std::string& timed_for, const std::string& source) {
  for (auto& program : programs) {
    for (auto& op : program.ops) {
      if (op.kind != workload::OpKind::kCompute || op.kernel >= program.kernels.size()) continue;
      if (op.varies != UINT32_MAX)
        throw ConfigError(source + ": expert ops are timed per EP rank for GPU '" + timed_for +
                          "' and cannot be re-timed for '" + cost.profile().name() +
                          "'; generate the trace again for that GPU");
      const auto& call = program.kernels[op.kernel];
      op.duration = cost.time(call.kernel, call.precision);
    }
  }
}

// The GPUs to build for the job on `cluster`, after the checks that must refuse a config before
// anything is built: the layout and cluster.num_gpus against the topology, variability, memory.
static int32_t checked_build_gpus(const clustersim::RunConfig& config,
                                  const world::ResolvedCluster& cluster,
                                  const workload::Layout& layout, const std::string& source) {
  if (cluster.capacity_gpus() < layout.world()) {
    throw ConfigError(source + ": topology " + config.cluster().topology() + " holds at most " +
                      std::to_string(cluster.capacity_gpus()) + " GPUs, the layout needs " +
                      std::to_string(layout.world()));
  }
  const int32_t cluster_gpus =
      net::cluster_build_gpus(layout.world(), config.cluster().num_gpus(), source);
  if (cluster.capacity_gpus() < cluster_gpus) {
    throw ConfigError(source + ": cluster.num_gpus is " + std::to_string(cluster_gpus) +
                      " but topology " + config.cluster().topology() + " holds at most " +
                      std::to_string(cluster.capacity_gpus()));
  }
  validate_variability(config.variability(), layout.world(), source);
  if (config.simulation().memory_limit_gb() < 0)
    throw ConfigError(source +
                      ": simulation.memory_limit_gb must not be negative (0: this machine)");
  // The job runs on the cluster's first GPUs: only those are built, in a fabric grown for the
  // whole cluster.
  refuse_cluster_if_too_big(layout.world(), config.simulation().memory_limit_gb(), source);
  return cluster_gpus;
}

// Runs the prepared programs on `cluster` (prepared.config's, resolved once) to the end of the
// step.
static StepOutcome run_programs(PreparedStep& prepared, const world::ResolvedCluster& cluster,
                                const std::string& source, const SimulationOptions& options) {
  const clustersim::RunConfig& config = prepared.config;
  const workload::Layout layout = workload::layout_of(config.parallel());
  const int32_t cluster_gpus = checked_build_gpus(config, cluster, layout, source);
  DegradedLinks degraded;
  world::World world(cluster, layout.world(), cluster_gpus, [&](net::Topology& topology) {
    degraded = degrade_links(topology, config.variability(), source);
  });
  const compute::GpuProfile& gpu = world.gpu();
  compute::require_precision_supported(gpu, config.precision(), source);
  if (prepared.timed_for_gpu != config.cluster().gpu()) {
    retime(prepared.programs, compute::KernelCostModel(gpu, compute::cost_options(config)),
           prepared.timed_for_gpu, source);
    prepared.timed_for_gpu = config.cluster().gpu();
  }
  const std::vector<workload::Program>& programs = prepared.programs;
  refuse_if_too_big(estimate_footprint(world.topology(), world.routing(), layout, programs),
                    config.simulation().memory_limit_gb(), source);

  Simulator sim;
  auto network = world.make_network(sim);
  // Variability makes ranks differ, and a folded rank must stand for ranks identical to it; a
  // degraded NVLink or PCIe link makes one server's collectives differ from another's.
  const auto compute_var = compute_variability(config.variability(), layout.world());
  const bool ranks_differ = degraded.links > 0 || (compute_var && !compute_var->uniform());
  const bool reuse_isolated = options.reuse_isolated_collectives && !degraded.inside_servers;
  exec::ExecutorOptions executor_opts = world::executor_options(
      world, config, {reuse_isolated, ranks_differ, compute_var ? &*compute_var : nullptr}, source);
  if (options.on_op) {
    refuse_timeline_if_too_big(options.op_ranks, layout, programs, source);
    executor_opts.observer = options.on_op;
    executor_opts.observed.assign(static_cast<std::size_t>(layout.world()), false);
    for (const int32_t r : options.op_ranks)
      if (r >= 0 && r < layout.world()) executor_opts.observed[static_cast<std::size_t>(r)] = true;
  }
  exec::Executor executor(sim, *network, world.topology(), layout, programs,
                          std::move(executor_opts));
  executor.start();
  run_with_progress(
      sim, [&] { return executor.progress(); }, options.on_progress);
  executor.require_finished(source + ": the step cannot complete", 8);

  StepOutcome out;
  out.stats = executor.rank_stats();
  out.step_end = executor.step_end();
  out.comm = executor.comm();
  out.traffic = network->stats();
  out.events = sim.events_processed();
  const compute::KernelCostModel timing(gpu, compute::cost_options(config));
  out.kernel_groups = report::kernel_time_by_group(programs, &timing);
  out.matmul_flops_per_gpu = report::matmul_flops_per_gpu(programs);
  out.offload = offload_figures(config, gpu, programs);
  if (ranks_differ)
    out.variability = variability_figures(out.stats, layout, out.step_end,
                                          compute_var ? &*compute_var : nullptr, degraded.links);
  out.topology_name = world.topology().name;
  out.fleet = fleet_counts(world.topology(), layout.world());
  return out;
}

// The run's identity: names, layout, hardware and the step's size.
static void describe_run(report::StepReport& r, const clustersim::RunConfig& config,
                         const compute::GpuProfile& gpu, const StepOutcome& outcome) {
  const auto& par = config.parallel();
  r.name = config.name();
  r.model = config.model().name();
  r.layout = layout_text(par);
  r.expert_parallel = par.ep() > 1;
  r.schedule = std::string(workload::to_string(workload::pipeline_schedule_of(par)));
  r.gpu = gpu.name();
  r.topology = outcome.topology_name;
  r.network = std::string(net::to_string(world::network_mode(config.network())));
  r.precision = clustersim::Precision_Name(config.precision());
  r.software_stack = workload::stack_label(config);
  r.gpus = workload::layout_of(par).world();
  r.microbatches = workload::num_microbatches(par);
  r.extrapolated_from = outcome.extrapolated_from;
  r.tokens_per_step = static_cast<int64_t>(workload::tokens_per_step(config));
}

// Sums each rank's compute, waits and interference into its stage (divided by the stage's ranks
// later) and the exposed communication into the run's means.
static std::vector<int32_t> sum_rank_waits(report::StepReport& r, const workload::Layout& layout,
                                           const std::vector<exec::RankStats>& stats,
                                           bool free_running, Time step_time) {
  const int32_t p = layout.size(Dim::kPp);
  const double step = step_time.as_seconds();
  // With post-validation no stage waits for the others at the step's end: a stage's wait at the
  // boundary is the gap to the longest stage's span, not to the end.
  auto boundary_wait = [&](const exec::RankStats& st) {
    return free_running ? step_time - rank_span(st) : st.end_wait;
  };
  std::vector<int32_t> ranks_in_stage(static_cast<std::size_t>(p), 0);
  for (int32_t rank = 0; rank < layout.world(); ++rank) {
    const auto& st = stats[rank];
    auto& f = r.stages[static_cast<std::size_t>(layout.coord(rank, Dim::kPp))];
    ++ranks_in_stage[static_cast<std::size_t>(layout.coord(rank, Dim::kPp))];
    // A rank that finishes early waits for the step to close. With a pipeline that is the
    // drain (stage s ends s backward passes before stage 0); without one it can only be
    // data-parallel groups finishing their communication at different times. A free-running
    // rank spends its wait for its first input on its previous step instead.
    const Time own_wait = st.pipeline_wait - (free_running ? st.lead_wait : Time{});
    const Time bubble = own_wait + (p > 1 ? boundary_wait(st) : Time{});
    const Time dp_wait = st.wait_for(Dim::kDp) + (p > 1 ? Time{} : boundary_wait(st));
    f.bubble_fraction += bubble.as_seconds() / step;
    f.compute_s += st.compute.as_seconds();
    f.side_stream_s += st.side_stream.as_seconds();
    for (const auto& d : workload::kDims) {
      const double wait = (d.dim == Dim::kDp ? dp_wait : st.wait_for(d.dim)).as_seconds();
      f.comm_wait_s[static_cast<std::size_t>(d.dim)] += wait;
      r.exposed_s[static_cast<std::size_t>(d.dim)] += wait / r.gpus;
      r.peer_wait_s[static_cast<std::size_t>(d.dim)] +=
          st.peer_wait[static_cast<std::size_t>(d.dim)].as_seconds() / r.gpus;
    }
    f.interference_s += st.interference.as_seconds();
    r.interference_s += st.interference.as_seconds() / r.gpus;
    f.host_dispatch_s += st.host_wait.as_seconds();
    r.host_dispatch_s += st.host_wait.as_seconds() / r.gpus;
    f.side_stream_hold_s += st.side_stream_hold.as_seconds();
    r.side_stream_hold_s += st.side_stream_hold.as_seconds() / r.gpus;
  }
  return ranks_in_stage;
}

// Turns the stages' sums into means and sets each stage's memory at its peak of held
// activations; returns the breakdown of the stage with the highest peak.
static workload::MemoryBreakdown finish_stages(report::StepReport& r, const PreparedStep& prepared,
                                               const std::vector<int32_t>& ranks_in_stage) {
  const clustersim::RunConfig& config = prepared.config;
  // The stages' exact orders again: the memory peak follows each held chunk (a trace keeps none).
  const auto orders = stage_orders(config, prepared.costs);
  const auto p = static_cast<int32_t>(r.stages.size());
  workload::MemoryBreakdown peak_memory;
  for (int32_t s = 0; s < p; ++s) {
    auto& f = r.stages[static_cast<std::size_t>(s)];
    const double n = ranks_in_stage[static_cast<std::size_t>(s)];
    f.bubble_fraction /= n;
    f.compute_s /= n;
    f.side_stream_s /= n;
    for (double& wait : f.comm_wait_s) wait /= n;
    f.interference_s /= n;
    f.host_dispatch_s /= n;
    f.side_stream_hold_s /= n;
    f.analytic_bubble_fraction = r.analytic_bubble_fraction;
    f.layers = workload::layers_on_stage(config, s);
    f.peak_in_flight = prepared.peak_held[static_cast<std::size_t>(s)];
    const auto mem = workload::estimate_stage_memory(
        config, s, std::span<const workload::WorkItem>(orders[static_cast<std::size_t>(s)]));
    f.memory_gb = static_cast<double>(mem.total()) / 1e9;
    r.bubble_fraction += f.bubble_fraction / p;
    if (s == 0 || f.memory_gb > r.memory.peak_gb) {
      peak_memory = mem;
      r.memory.peak_gb = f.memory_gb;
      r.memory.peak_stage = s;
      r.memory.weights_gb = static_cast<double>(mem.weights) / 1e9;
      r.memory.gradients_gb = static_cast<double>(mem.gradients) / 1e9;
      r.memory.optimizer_gb = static_cast<double>(mem.optimizer) / 1e9;
      r.memory.activations_gb = static_cast<double>(mem.activations) / 1e9;
      r.memory.other_gb = static_cast<double>(mem.temporary + mem.working_set) / 1e9;
      r.memory.in_flight_microbatches = f.peak_in_flight;
    }
  }
  return peak_memory;
}

// The report of a simulated (or extrapolated) step of `prepared.config`.
static report::StepReport report_of(const PreparedStep& prepared, const StepOutcome& outcome,
                                    const std::string& source) {
  const clustersim::RunConfig& config = prepared.config;
  const auto& par = config.parallel();
  const compute::GpuProfile gpu = compute::load_gpu_profile(config.cluster().gpu());
  const lower::StageCosts& costs = prepared.costs;
  const auto schedule = workload::pipeline_schedule_of(par);
  const bool split = workload::schedule_info(schedule).splits_backward;
  const int32_t p = par.pp(), v = par.virtual_stages();

  report::StepReport r;
  describe_run(r, config, gpu, outcome);
  const int32_t m = r.microbatches;
  // With post-validation the steady step is the longest stage's span.
  const bool free_running = par.optimizer_post_validation();
  const Time step_time = free_running ? post_validated_step(outcome.stats) : outcome.step_end;
  const double step = step_time.as_seconds();
  const double peak = compute::peak_flops(gpu, precision_of(config.precision()));
  r.iteration_time_s = step;
  r.model_flops_per_step = workload::model_flops_per_step(config);
  r.tokens_per_s = static_cast<double>(r.tokens_per_step) / step;
  r.tflops_per_gpu = r.model_flops_per_step / step / r.gpus / 1e12;
  r.mfu = r.model_flops_per_step / (step * r.gpus * peak);
  r.hfu = outcome.matmul_flops_per_gpu / (step * peak);

  r.analytic_bubble_fraction = workload::analytic_bubble_fraction(
      schedule, p, m, v, costs.t_f, costs.t_b + (split ? 0 : costs.t_w), costs.t_w);
  r.virtual_stages = v;
  r.compute_by_kernel_group_s = outcome.kernel_groups;
  r.stages.resize(static_cast<std::size_t>(p));
  const auto ranks_in_stage =
      sum_rank_waits(r, workload::layout_of(par), outcome.stats, free_running, step_time);
  const workload::MemoryBreakdown peak_memory = finish_stages(r, prepared, ranks_in_stage);
  r.moe = moe_figures(config, outcome.stats, peak_memory,
                      compute::KernelCostModel(gpu, compute::cost_options(config)));
  const double capacity = static_cast<double>(compute::hbm_capacity_bytes(gpu));
  r.memory.capacity_gb = capacity / 1e9;
  r.memory.fits = r.memory.peak_gb * 1e9 <= capacity;
  r.offload = outcome.offload;

  fill_comm_figures(r, outcome.comm, outcome.traffic);
  r.variability = outcome.variability;

  r.accumulation_steps = m;
  r.dp_bytes_per_sample = r.comm_bytes_by_dim[static_cast<int>(Dim::kDp)] /
                          static_cast<double>(std::max(par.global_batch_size(), 1));
  const double price = cost::price_per_gpu_hour(gpu, config.cost());
  r.cost = cost::run_cost(step, static_cast<double>(r.tokens_per_step), r.gpus, price,
                          config.cost().train_tokens());
  fill_goodput(r.cost, config, outcome.fleet, source);
  r.events = outcome.events;
  return r;
}

// Stamps the host figures and checks the report: inputs were checked field by field; a figure
// that still cannot be true is our bug, and no caller may print it as a result.
static report::StepReport finished(report::StepReport r,
                                   std::chrono::steady_clock::time_point wall_start) {
  r.wall_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  r.peak_rss_mb = peak_rss_mb();
  report::check_report(r);
  return r;
}

// The step from short runs (see extrapolation.h), or in full when the short runs it would take
// to find a steady state cost as much; `prepared` holds no programs yet.
static report::StepReport simulate_extrapolated(PreparedStep& prepared,
                                                const world::ResolvedCluster& cluster,
                                                const std::vector<workload::StageWork>& works,
                                                const ExtrapolationPlan& plan,
                                                const std::string& source,
                                                const SimulationOptions& options) {
  std::vector<StepOutcome> runs;
  std::vector<int32_t> counts;
  uint64_t events = 0;
  auto run = [&](int32_t microbatches) {
    PreparedStep part;
    part.config = with_microbatches(prepared.config, microbatches);
    part.costs = prepared.costs;
    part.timed_for_gpu = prepared.timed_for_gpu;
    build_programs(part, works);
    runs.push_back(run_programs(part, cluster, source, options));
    counts.push_back(microbatches);
    events += runs.back().events;
  };
  for (int32_t i = 0; i < 3; ++i) run(plan.first + i * plan.step);
  int64_t simulated = plan.first_check();
  std::size_t n = runs.size();
  while (!is_steady(runs[n - 3], runs[n - 2], runs[n - 1])) {
    const int32_t next = counts.back() + plan.step;
    if (simulated + 2 * int64_t{next} + plan.step >= plan.full) {
      build_programs(prepared, works);
      StepOutcome outcome = run_programs(prepared, cluster, source, options);
      outcome.events += events;
      return report_of(prepared, outcome, source);
    }
    run(next);
    run(next + plan.step);
    simulated += 2 * int64_t{next} + plan.step;
    n = runs.size();
  }
  StepOutcome outcome =
      extrapolate(runs[n - 2], counts[n - 2], runs[n - 1], counts[n - 1], plan.full);
  outcome.events = events;
  outcome.extrapolated_from = counts;
  build_programs(prepared, works, /*programs=*/false);
  return report_of(prepared, outcome, source);
}

report::StepReport simulate_step(const clustersim::RunConfig& config, const std::string& source,
                                 const SimulationOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  std::vector<workload::StageWork> works;
  std::optional<world::ResolvedCluster> cluster;
  PreparedStep prepared = prepare_config(config, source, works, cluster);
  // A timeline shows every op, so it is always simulated in full.
  const auto plan = options.on_op ? std::nullopt : plan_extrapolation(prepared.config);
  if (plan) {
    return finished(simulate_extrapolated(prepared, *cluster, works, *plan, source, options),
                    wall_start);
  }
  build_programs(prepared, works);
  StepOutcome outcome = run_programs(prepared, *cluster, source, options);
  return finished(report_of(prepared, outcome, source), wall_start);
}

report::StepReport simulate_prepared(PreparedStep& prepared, const std::string& source,
                                     const SimulationOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const world::ResolvedCluster cluster(prepared.config, source);
  const StepOutcome outcome = run_programs(prepared, cluster, source, options);
  return finished(report_of(prepared, outcome, source), wall_start);
}

}  // namespace cs::run
