#include "sim/trace/replay.h"

#include <chrono>
#include <cstdio>
#include <ostream>
#include <stdexcept>

#include "sim/compute/gpu_profile.h"
#include "sim/config/config_error.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"
#include "sim/run/step_simulation.h"
#include "sim/world/world.h"

namespace cs::trace {

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

std::string target_gpu(const ReplayTarget& target) {
  return target.gpu.empty() ? net::resolve_topology(target.topology).gpu() : target.gpu;
}

clustersim::RunConfig replay_config(const ReplayTarget& target) {
  clustersim::RunConfig config;
  config.mutable_cluster()->set_topology(target.topology);
  if (!target.gpu.empty()) config.mutable_cluster()->set_gpu(target.gpu);  // --gpu
  config.set_network(target.network);
  config.mutable_simulation()->set_fluid_collectives(target.fluid_collectives);
  *config.mutable_nccl() = target.nccl;
  *config.mutable_effects() = target.effects;
  return config;
}

report::StepReport simulate_workload(const exec::ExplicitWorkload& workload,
                                     const ReplayTarget& target, const std::string& name,
                                     const std::string& source, const ProgressFn& progress) {
  const auto wall_start = std::chrono::steady_clock::now();
  const world::ResolvedCluster cluster(replay_config(target), source);
  const auto ranks = static_cast<int32_t>(workload.program_of_rank.size());
  if (cluster.capacity_gpus() < ranks)
    throw ConfigError(source + ": topology " + target.topology + " holds at most " +
                      std::to_string(cluster.capacity_gpus()) + " GPUs, the trace has " +
                      std::to_string(ranks) + " ranks");
  world::World built(cluster, ranks);
  Simulator sim;
  auto network = built.make_network(sim);
  // The options `run` gets from the same settings: NCCL's tuning and the interference of
  // communication with compute, not only fluid collectives.
  exec::Executor executor(sim, *network, built.topology(), workload, built.executor_options());
  executor.start();
  run_with_progress(
      sim, [&] { return executor.progress(); }, progress);
  executor.require_finished(source + ": the trace cannot complete", 16);
  const compute::GpuProfile& gpu = built.gpu();
  report::StepReport r;
  r.name = name;
  r.layout = std::to_string(ranks) + " ranks, explicit programs (imported trace)";
  r.schedule = "as traced";
  r.gpu = gpu.name();
  r.topology = built.topology().name;
  r.network = std::string(net::to_string(built.mode()));
  r.precision = "as traced";
  r.gpus = ranks;
  r.iteration_time_s = executor.step_end().as_seconds();
  run::fill_comm_figures(r, executor.comm(), network->stats());
  r.memory.capacity_gb = static_cast<double>(compute::hbm_capacity_bytes(gpu)) / 1e9;
  r.events = sim.events_processed();
  r.wall_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r;
}

void print_workload_table(std::ostream& out, const report::StepReport& r) {
  auto row = [&out](const std::string& k, const std::string& v) {
    out << "  " << k << std::string(k.size() < 30 ? 30 - k.size() : 1, ' ') << v << '\n';
  };
  out << r.name << ": " << r.layout << ", " << r.gpus << " x " << r.gpu << " on " << r.topology
      << " (" << r.network << " network)\n";
  row("iteration time",
      fmt("%.6f s", r.iteration_time_s) + fmt(" (%.3f us)", r.iteration_time_s * 1e6));
  std::string by_op;
  for (int i = 0; i < coll::kNumOps; ++i)
    if (r.comm_bytes_by_op[i] > 0)
      by_op += std::string(by_op.empty() ? "" : ", ") +
               std::string(coll::to_string(static_cast<coll::Op>(i))) + " " +
               fmt("%.4g", r.comm_bytes_by_op[i] / 1e6);
  row("comm MB by op", by_op.empty() ? "none" : by_op);
  row("comm MB nvlink / network",
      fmt("%.4g", r.comm_bytes_nvlink / 1e6) + " / " + fmt("%.4g", r.comm_bytes_network / 1e6));
  row("simulation", std::to_string(r.events) + " events, " + fmt("%.2f s", r.wall_time_s));
  out << "  (an imported trace has no model config: MFU, FLOP/s, bubbles and memory are not\n"
         "   available and are 0 in the JSON)\n";
}

}  // namespace cs::trace
