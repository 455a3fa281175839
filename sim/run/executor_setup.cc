#include "sim/run/executor_setup.h"

#include "sim/coll/runner.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/config/config_error.h"
#include "sim/exec/interference.h"

namespace cs::run {

namespace {

// The config's NCCL knobs and collective effects (RunConfig.nccl, EffectsConfig 40-59).
coll::NcclSettings nccl_settings(const clustersim::RunConfig& config) {
  coll::NcclSettings s;
  const auto& n = config.nccl();
  using P = clustersim::NcclConfig;
  s.protocol = n.protocol() == P::SIMPLE  ? coll::Protocol::kSimple
               : n.protocol() == P::LL    ? coll::Protocol::kLl
               : n.protocol() == P::LL128 ? coll::Protocol::kLl128
                                          : coll::Protocol::kAuto;
  s.channels = n.channels();
  s.nvls = n.nvls();
  s.pat = n.pat();
  const auto& e = config.effects();
  s.protocol_overhead = e.nccl_protocol_overhead();
  s.nvlink_overhead = e.nvlink_protocol_overhead();
  s.nvls_efficiency = e.nvls_switch_efficiency();
  s.network_overhead = e.network_packet_overhead();
  s.step_latency = e.nccl_step_latency();
  s.rail_rings = e.rail_aligned_rings();
  s.nccl_choice = e.nccl_algorithm_choice();
  return s;
}

}  // namespace

void configure_executor(exec::Executor& executor, const clustersim::RunConfig& config,
                        const ExecutorSetup& setup, const std::string& source) {
  if (config.nccl().channels() < 0)
    throw ConfigError(source + ": nccl.channels must not be negative (0: one ring per NIC)");
  executor.set_nccl_tuning(compute::nccl_tuning(
      config.cluster().gpu().empty() ? setup.topology.gpu_type : config.cluster().gpu(),
      nccl_settings(config)));
  executor.set_fluid_collectives(config.simulation().fluid_collectives());
  executor.set_all_to_all_wire(config.effects().moe_all_to_all_wire());
  if (setup.compute_variability) executor.set_compute_variability(*setup.compute_variability);
  executor.set_fold_tensor_parallel(config.simulation().fold_tensor_parallel() &&
                                    setup.reuse_isolated && !setup.ranks_differ);
  executor.set_fold_data_parallel(config.simulation().fold_data_parallel() && !setup.ranks_differ);
  if (config.effects().comm_compute_interference()) {
    exec::InterferenceModel model = exec::interference_model(setup.gpu);
    model.wave_quantization = config.effects().interference_wave_quantization();
    executor.set_interference(model);
  }
  if (!setup.reuse_isolated) return;
  const net::NetworkMode mode = setup.mode;
  const net::Topology& topology = setup.topology;
  net::Routing& routing = setup.routing;
  executor.set_isolated_collective_timer(
      [mode, &topology, &routing](const coll::Schedule& schedule,
                                  std::span<const net::VertexId> vertices, Bytes size) {
        Simulator alone;
        auto net = net::make_network(mode, alone, topology, routing);
        exec::IsolatedCollective result;
        coll::run_collective(alone, *net, schedule, vertices, size, [&](const coll::RunStats& run) {
          result.duration = run.end - run.start;
          result.bytes_sent = run.bytes_sent;
          result.wire_bytes = run.wire_bytes;
        });
        alone.run();
        return result;
      });
}

}  // namespace cs::run
