#include "sim/world/world.h"

#include <stdexcept>
#include <utility>

#include "sim/coll/runner.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/config/config_error.h"
#include "sim/exec/interference.h"
#include "sim/net/topology_builder.h"

namespace cs::world {

namespace {

// The parts of a config that make the world; a copy of only these keeps a world from depending
// on anything else of it (a model, a layout).
clustersim::RunConfig world_part(const clustersim::RunConfig& config) {
  clustersim::RunConfig part;
  *part.mutable_cluster() = config.cluster();
  part.set_network(config.network());
  *part.mutable_nccl() = config.nccl();
  *part.mutable_effects() = config.effects();
  *part.mutable_simulation() = config.simulation();
  return part;
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

// A GPU moves no more over NVLink than its own links carry: a topology drawn for one GPU and run
// with another (cluster.gpu=h800 on dgx-h100) takes the smaller per-GPU NVLink figure of the two,
// as the planner's estimate does.
void cap_nvlink_at_the_gpus(clustersim::Topology& description, const std::string& gpu,
                            const std::string& where) {
  if (!description.has_tiered() || gpu.empty()) return;
  double own = 0;
  try {
    own = compute::load_gpu_profile(gpu).nvlink_bandwidth_gbytes();
  } catch (const ConfigError& e) {
    throw ConfigError(where + ": " + e.what());
  }
  auto* node = description.mutable_tiered()->mutable_node();
  if (own > 0 && own < node->nvlink_bandwidth_gbytes()) node->set_nvlink_bandwidth_gbytes(own);
}

}  // namespace

net::NetworkMode network_mode(clustersim::NetworkMode mode) {
  switch (mode) {
    case clustersim::CONGESTION_AWARE:
      return net::NetworkMode::kCongestionAware;
    case clustersim::ANALYTICAL:
      return net::NetworkMode::kAnalytical;
    case clustersim::IDEAL:
      return net::NetworkMode::kIdeal;
  }
  throw std::logic_error("unknown network mode");
}

clustersim::NetworkMode config_network_mode(net::NetworkMode mode) {
  switch (mode) {
    case net::NetworkMode::kCongestionAware:
      return clustersim::CONGESTION_AWARE;
    case net::NetworkMode::kAnalytical:
      return clustersim::ANALYTICAL;
    case net::NetworkMode::kIdeal:
      return clustersim::IDEAL;
  }
  throw std::logic_error("unknown network mode");
}

std::span<const std::string_view> world_effects() {
  // Read by nccl_settings and executor_options below; WorldEffects tests hold the list to them.
  static constexpr std::string_view kNames[] = {
      "nccl_protocol_overhead",    "nvlink_protocol_overhead",
      "nvls_switch_efficiency",    "network_packet_overhead",
      "nccl_step_latency",         "rail_aligned_rings",
      "nccl_algorithm_choice",     "nvls_bus_bandwidth_cap",
      "nccl_tree_pattern",         "moe_all_to_all_wire",
      "comm_compute_interference", "interference_wave_quantization",
      "side_stream_contention",    "nvls_tree_channel_ceiling",
      "deepep_kernel_share",       "deepep_token_cost",
      "nvls_loop_pipeline",        "nccl_small_call_channels",
      "nvls_tree_loop_pipeline",   "analytical_oversubscribed_trunks",
      "analytical_hashed_paths"};
  return kNames;
}

net::NetworkOptions network_options(const clustersim::RunConfig& config) {
  return {.oversubscribed_trunks = config.effects().analytical_oversubscribed_trunks(),
          .hashed_paths = config.effects().analytical_hashed_paths()};
}

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
  s.nvls_bus_cap = e.nvls_bus_bandwidth_cap();
  s.nvls_tree_ceiling = e.nvls_tree_channel_ceiling();
  s.nvls_loops = e.nvls_loop_pipeline();
  s.nvls_tree_loops = e.nvls_tree_loop_pipeline();
  s.small_calls = e.nccl_small_call_channels();
  s.tree_pattern = e.nccl_tree_pattern();
  s.network_overhead = e.network_packet_overhead();
  // An ideal network makes communication free (NetworkMode IDEAL): NCCL's software latencies too.
  s.step_latency = e.nccl_step_latency() && config.network() != clustersim::IDEAL;
  s.rail_rings = e.rail_aligned_rings();
  s.nccl_choice = e.nccl_algorithm_choice();
  return s;
}

ResolvedCluster::ResolvedCluster(const clustersim::RunConfig& config, std::string source,
                                 std::string_view field)
    : config_(world_part(config)), source_(std::move(source)) {
  const auto& cluster = config_.cluster();
  if (!cluster.has_topology() || cluster.topology().empty())
    throw ConfigError(source_ + ": " + std::string(field) + " is not set");
  try {
    description_ = net::resolve_topology(cluster.topology());
  } catch (const ConfigError& e) {
    // The resolver knows the name, not the field or the file that gave it.
    throw ConfigError(source_ + ": " + std::string(field) + ": " + e.what());
  }
  net::override_load_balancing(description_, cluster.load_balancing(), source_);
  net::override_gpus_per_node(description_, cluster.gpus_per_node(), source_);
  gpu_type_ = cluster.gpu().empty() ? description_.gpu() : cluster.gpu();
  cap_nvlink_at_the_gpus(
      description_, gpu_type_,
      source_ + (cluster.gpu().empty() ? ": the topology's gpu" : ": cluster.gpu"));
}

int64_t ResolvedCluster::capacity_gpus() const {
  return net::topology_capacity_gpus(description_);
}

World::World(const ResolvedCluster& cluster, int32_t gpus, int64_t fabric_gpus,
             const TopologyEdit& edit)
    : config_(cluster.config()),
      source_(cluster.source()),
      mode_(network_mode(config_.network())),
      topology_(net::build_topology(cluster.description(), gpus, config_.cluster().topology(),
                                    fabric_gpus)) {
  topology_.gpu_type = cluster.gpu_type();
  if (edit) edit(topology_);
  routing_ = std::make_unique<net::Routing>(topology_);
}

const compute::GpuProfile& World::gpu() {
  if (!gpu_) gpu_ = compute::load_gpu_profile(topology_.gpu_type);
  return *gpu_;
}

coll::NcclTuning World::nccl_tuning() const {
  return compute::nccl_tuning(topology_, nccl_settings(config_));
}

std::unique_ptr<net::Network> World::make_network(Simulator& sim) {
  return net::make_network(mode_, sim, topology_, *routing_, network_options(config_));
}

exec::ExecutorOptions World::executor_options(const ExecutorChoices& choices) {
  return world::executor_options(*this, config_, choices, source_);
}

exec::ExecutorOptions executor_options(World& world, const clustersim::RunConfig& config,
                                       const ExecutorChoices& choices, const std::string& source) {
  if (config.nccl().channels() < 0)
    throw ConfigError(source + ": nccl.channels must not be negative (0: one ring per NIC)");
  exec::ExecutorOptions options;
  options.nccl = compute::nccl_tuning(world.topology(), nccl_settings(config));
  options.fluid_collectives = config.simulation().fluid_collectives();
  options.all_to_all_wire = config.effects().moe_all_to_all_wire();
  if (config.effects().deepep_kernel_share()) options.deepep = exec::deepep_shares(world.gpu());
  if (config.effects().deepep_token_cost())
    options.deepep_tokens = exec::deepep_token_cost(world.gpu());
  if (choices.variability) options.variability = *choices.variability;
  options.fold_tensor_parallel =
      config.simulation().fold_tensor_parallel() && choices.reuse_isolated && !choices.ranks_differ;
  options.fold_data_parallel = config.simulation().fold_data_parallel() && !choices.ranks_differ;
  // A stack's host figure, once resolved (an unresolved config is Megatron-TE's, which has none),
  // on this node's CPU.
  if (config.effects().host_dispatch() && config.has_resolved_stack()) {
    const double cpu = compute::host_op_time_factor(world.gpu());
    const auto& stack = config.resolved_stack();
    options.host_per_kernel = Time::from_us(cpu * stack.host_us_per_kernel());
    options.host_per_layer_pass = Time::from_us(cpu * stack.host_us_per_layer_pass());
  }
  options.side_stream_contention = config.effects().side_stream_contention();
  if (config.effects().comm_compute_interference()) {
    options.interference = exec::interference_model(world.gpu());
    options.interference->wave_quantization = config.effects().interference_wave_quantization();
  }
  if (choices.reuse_isolated)
    options.isolated_timer = isolated_timer(world.mode(), world.topology(), world.routing());
  return options;
}

}  // namespace cs::world
