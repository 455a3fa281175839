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

// Times a collective alone on a fresh network of `mode` over `topology`.
exec::IsolatedCollectiveTimer isolated_timer(net::NetworkMode mode, const net::Topology& topology,
                                             net::Routing& routing) {
  return [mode, &topology, &routing](const coll::Schedule& schedule,
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
  };
}

}  // namespace

exec::ExecutorOptions executor_options(const clustersim::RunConfig& config,
                                       const ExecutorSetup& setup, const std::string& source) {
  if (config.nccl().channels() < 0)
    throw ConfigError(source + ": nccl.channels must not be negative (0: one ring per NIC)");
  exec::ExecutorOptions options;
  options.nccl = compute::nccl_tuning(
      config.cluster().gpu().empty() ? setup.topology.gpu_type : config.cluster().gpu(),
      nccl_settings(config));
  options.fluid_collectives = config.simulation().fluid_collectives();
  options.all_to_all_wire = config.effects().moe_all_to_all_wire();
  options.variability = setup.compute_variability;
  options.fold_tensor_parallel =
      config.simulation().fold_tensor_parallel() && setup.reuse_isolated && !setup.ranks_differ;
  options.fold_data_parallel = config.simulation().fold_data_parallel() && !setup.ranks_differ;
  if (config.effects().comm_compute_interference()) {
    options.interference = exec::interference_model(setup.gpu);
    options.interference->wave_quantization = config.effects().interference_wave_quantization();
  }
  if (setup.reuse_isolated)
    options.isolated_timer = isolated_timer(setup.mode, setup.topology, setup.routing);
  return options;
}

}  // namespace cs::run
