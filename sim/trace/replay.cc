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

report::StepReport simulate_workload(const exec::ExplicitWorkload& workload,
                                     const ReplayTarget& target, const std::string& name,
                                     const std::string& source, const ProgressFn& progress) {
  const auto wall_start = std::chrono::steady_clock::now();
  const auto desc = net::resolve_topology(target.topology);
  const auto world = static_cast<int32_t>(workload.program_of_rank.size());
  if (net::topology_capacity_gpus(desc) < world)
    throw ConfigError(source + ": topology " + target.topology + " holds at most " +
                      std::to_string(net::topology_capacity_gpus(desc)) + " GPUs, the trace has " +
                      std::to_string(world) + " ranks");
  net::Topology topology = net::build_topology(desc, world, target.topology);
  topology.gpu_type = target_gpu(target);  // --gpu in place of the topology's own
  net::Routing routing(topology);
  const compute::GpuProfile gpu = compute::load_gpu_profile(target_gpu(target));
  Simulator sim;
  auto network = net::make_network(run::network_mode(target.network), sim, topology, routing);
  exec::ExecutorOptions options;
  options.fluid_collectives = target.fluid_collectives;
  exec::Executor executor(sim, *network, topology, workload, std::move(options));
  executor.start();
  run_with_progress(
      sim, [&] { return executor.progress(); }, progress);
  executor.require_finished(source + ": the trace cannot complete", 16);
  report::StepReport r;
  r.name = name;
  r.layout = std::to_string(world) + " ranks, explicit programs (imported trace)";
  r.schedule = "as traced";
  r.gpu = gpu.name();
  r.topology = topology.name;
  r.network = std::string(net::to_string(run::network_mode(target.network)));
  r.precision = "as traced";
  r.gpus = world;
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
