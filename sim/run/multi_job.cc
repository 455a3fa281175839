#include "sim/run/multi_job.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include "sim/compute/gpu_profile.h"
#include "sim/compute/precision_formats.h"
#include "sim/config/config_error.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/model_math.h"
#include "sim/world/world.h"

namespace cs::run {

namespace {

// A job ready to run: its programs, layout and the GPUs of its ranks.
struct PlacedJob {
  PreparedStep prepared;
  std::string source;
  workload::Layout layout;
  std::vector<int32_t> gpus;
};

// Job j's config on job 0's cluster; refuses what the shared cluster cannot honour.
clustersim::RunConfig on_cluster(const JobInput& job, const clustersim::RunConfig& first,
                                 const std::string& first_source) {
  clustersim::RunConfig config = job.config;
  const std::string& gpu = first.cluster().gpu();
  if (!config.cluster().gpu().empty() && config.cluster().gpu() != gpu)
    throw ConfigError(job.source + ": cluster.gpu is \"" + config.cluster().gpu() +
                      "\" but the shared cluster (" + first_source + ") has \"" + gpu +
                      "\"; jobs run on the first config's GPUs, set cluster.gpu=" + gpu);
  if (config.network() != first.network())
    throw ConfigError(job.source + ": network is " +
                      clustersim::NetworkMode_Name(config.network()) + " but the shared network (" +
                      first_source + ") is " + clustersim::NetworkMode_Name(first.network()));
  *config.mutable_cluster() = first.cluster();
  return config;
}

void refuse_variability(const JobInput& job) {
  if (job.config.has_variability() && job.config.variability().enabled())
    throw ConfigError(job.source +
                      ": variability is not supported with several jobs on one cluster");
}

int32_t gpus_per_server(const clustersim::Topology& desc, const std::string& source) {
  if (desc.has_tiered()) return net::gpus_per_node_in_use(desc);
  const net::Topology whole = net::build_topology(desc, 0, source);
  int32_t n = 0;
  const int32_t node = whole.vertex(whole.gpu(0)).node;
  for (std::size_t g = 0; g < whole.num_gpus(); ++g)
    n += whole.vertex(whole.gpu(static_cast<int32_t>(g))).node == node ? 1 : 0;
  return n;
}

std::string ranges_text(const std::vector<int32_t>& gpus) {
  std::string s;
  for (std::size_t i = 0; i < gpus.size();) {
    std::size_t j = i;
    while (j + 1 < gpus.size() && gpus[j + 1] == gpus[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(gpus[i]) +
         (j > i ? "-" + std::to_string(gpus[j]) : "");
    i = j + 1;
  }
  return s;
}

// Step durations of each job in `subset`, run together from time 0 (see JobFigures::steps).
struct TogetherRun {
  std::vector<std::vector<Time>> steps;  // by position in subset
  Time span;
  uint64_t events = 0;
};

// `world` is the shared cluster, built once for the contended and the alone runs.
TogetherRun run_together(std::vector<PlacedJob>& jobs, const std::vector<std::size_t>& subset,
                         world::World& world, const ProgressFn& on_progress, int32_t max_steps) {
  Simulator sim;
  auto network = world.make_network(sim);
  std::vector<std::unique_ptr<exec::Executor>> executors;
  TogetherRun run;
  run.steps.resize(subset.size());
  std::size_t in_first_step = subset.size();
  // Jobs never share a server (place_jobs), so a job's NVLink ports stay its own: isolated
  // timing and tensor-parallel folding remain exact.
  std::function<void(std::size_t)> start_step = [&](std::size_t k) {
    PlacedJob& job = jobs[subset[k]];
    if (static_cast<int32_t>(run.steps[k].size()) >= max_steps)
      throw ConfigError(job.source + ": " + std::to_string(max_steps) +
                        " steps while another job has not finished its first; the jobs' steps " +
                        "differ too much in length, or one cannot end");
    // Each job's own NCCL, effects and simulation settings, on the shared world.
    exec::ExecutorOptions options =
        world::executor_options(world, job.prepared.config, {}, job.source);
    const Time begin = sim.now();
    options.on_finished = [&, k, begin] {
      run.steps[k].push_back(sim.now() - begin);
      if (run.steps[k].size() == 1) --in_first_step;
      // Another step while some job is still in its first one. Decided a picosecond later,
      // so that steps ending at the same time end the run together, whatever their order.
      sim.schedule_in(Time::ps(1), [&, k] {
        if (in_first_step > 0) start_step(k);
      });
    };
    auto& ex = executors.emplace_back(
        std::make_unique<exec::Executor>(sim, *network, world.topology(), job.layout,
                                         job.prepared.programs, std::move(options), job.gpus));
    ex->start();
  };
  for (std::size_t k = 0; k < subset.size(); ++k) start_step(k);
  run_with_progress(
      sim, [&] { return 1.0 - static_cast<double>(in_first_step) / subset.size(); }, on_progress);
  for (std::size_t e = 0; e < executors.size(); ++e)
    if (!executors[e]->all_finished())
      executors[e]->require_finished("several jobs: a step cannot complete", 8);
  run.span = sim.now();
  run.events = sim.events_processed();
  return run;
}

}  // namespace

JobsReport simulate_jobs(const std::vector<JobInput>& inputs, const PlacementSpec& placement,
                         const ProgressFn& on_progress, int32_t max_steps) {
  const auto wall_start = std::chrono::steady_clock::now();
  if (inputs.empty()) throw ConfigError("several jobs: no job given");
  for (const auto& job : inputs) refuse_variability(job);
  std::vector<PlacedJob> jobs;
  jobs.push_back(
      {prepare_step(inputs[0].config, inputs[0].source), inputs[0].source, {1, 1, 1, 1}, {}});
  const clustersim::RunConfig first = jobs[0].prepared.config;  // a copy: jobs grows
  for (std::size_t j = 1; j < inputs.size(); ++j)
    jobs.push_back({prepare_step(on_cluster(inputs[j], first, inputs[0].source), inputs[j].source),
                    inputs[j].source,
                    {1, 1, 1, 1},
                    {}});
  std::vector<int32_t> sizes;
  for (auto& job : jobs) {
    job.layout = workload::layout_of(job.prepared.config.parallel());
    sizes.push_back(job.layout.world());
  }

  const std::string& source = inputs[0].source;
  const world::ResolvedCluster resolved(first, source);
  const int64_t capacity =
      first.cluster().num_gpus() > 0 ? first.cluster().num_gpus() : resolved.capacity_gpus();
  const auto gpus =
      place_jobs(placement, sizes, gpus_per_server(resolved.description(), source), capacity);
  int32_t needed = 0;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    jobs[j].gpus = gpus[j];
    for (const int32_t g : gpus[j]) needed = std::max(needed, g + 1);
  }
  const int32_t build = net::cluster_build_gpus(needed, first.cluster().num_gpus(), source);
  world::World cluster(resolved, build);

  JobsReport report;
  report.topology = cluster.topology().name;
  report.gpu = cluster.gpu().name();
  report.network = std::string(net::to_string(cluster.mode()));
  report.placement = placement_text(placement);
  report.cluster_gpus = static_cast<int32_t>(cluster.topology().num_gpus());
  std::vector<std::size_t> all(jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) all[j] = j;
  const TogetherRun together = run_together(jobs, all, cluster, on_progress, max_steps);
  report.span_s = together.span.as_seconds();
  report.events = together.events;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const TogetherRun alone = run_together(jobs, {j}, cluster, {}, max_steps);
    report.events += alone.events;
    const auto& config = jobs[j].prepared.config;
    JobFigures f;
    f.name = config.name();
    f.source = jobs[j].source;
    f.layout = workload::dims_text(workload::dim_sizes(config.parallel()));
    f.gpus = jobs[j].layout.world();
    f.gpu_ranges = ranges_text(jobs[j].gpus);
    f.alone_step_s = alone.steps[0][0].as_seconds();
    f.steps = static_cast<int32_t>(together.steps[j].size());
    for (const Time t : together.steps[j]) {
      f.mean_step_s += t.as_seconds() / f.steps;
      f.max_step_s = std::max(f.max_step_s, t.as_seconds());
    }
    f.slowdown = f.mean_step_s / f.alone_step_s;
    const double flops = workload::model_flops_per_step(config);
    const double peak =
        compute::peak_flops(cluster.gpu(), compute::format_of(config.precision()).gemm);
    f.mfu_alone = flops / (f.alone_step_s * f.gpus * peak);
    f.mfu_shared = flops / (f.mean_step_s * f.gpus * peak);
    report.jobs.push_back(std::move(f));
  }
  report.wall_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return report;
}

}  // namespace cs::run
