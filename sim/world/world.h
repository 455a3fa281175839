// The simulated world of a run, assembled in one place: the cluster's topology resolved once, then
// built with the GPU override, its routes, the network of the configured mode and the executor's
// options.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "proto/config.pb.h"
#include "sim/coll/nccl_plan.h"
#include "sim/compute/gpu_profile.h"
#include "sim/core/simulator.h"
#include "sim/exec/executor_options.h"
#include "sim/exec/variability.h"
#include "sim/net/network.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology.h"

namespace cs::world {

// The transfer model a config's network field names, and back (for callers that parse a name).
net::NetworkMode network_mode(clustersim::NetworkMode mode);
clustersim::NetworkMode config_network_mode(net::NetworkMode mode);

// The config's NCCL knobs and collective effects (RunConfig.nccl, EffectsConfig 40-59).
coll::NcclSettings nccl_settings(const clustersim::RunConfig& config);
// The effects that act inside the network model (analytical_oversubscribed_trunks,
// analytical_hashed_paths).
net::NetworkOptions network_options(const clustersim::RunConfig& config);

// The EffectsConfig fields a world reads (NCCL's model, the all-to-all wire, interference, the
// network model's trunks): the effects that act on an already lowered workload, so the ones a
// trace's replay can switch. The others shape the ops lowering makes from the model.
std::span<const std::string_view> world_effects();

// The world's part of a config: cluster, network, nccl, effects and simulation, copied out of
// `config` (nothing else of it can change the world), with the cluster's topology description
// resolved once. Every run, replay, collective and validation case starts here.
class ResolvedCluster {
 public:
  // Resolves cluster.topology (a preset or a file) and applies cluster.load_balancing and
  // cluster.gpus_per_node to it. Throws ConfigError naming `source` and `field` (what the user
  // set: cluster.topology, or a command's option) when the topology is unset or names neither a
  // preset nor a readable file.
  ResolvedCluster(const clustersim::RunConfig& config, std::string source,
                  std::string_view field = "cluster.topology");

  const clustersim::Topology& description() const { return description_; }
  // The GPUs the description can hold.
  int64_t capacity_gpus() const;
  // cluster.gpu, else the topology's own GPU: the GPU every world of this cluster has.
  const std::string& gpu_type() const { return gpu_type_; }
  const clustersim::RunConfig& config() const { return config_; }
  const std::string& source() const { return source_; }

 private:
  clustersim::RunConfig config_;
  std::string source_;
  clustersim::Topology description_;
  std::string gpu_type_;
};

// What an executor needs besides the world and the config.
struct ExecutorChoices {
  // Time collectives that own their NVLink ports once, each alone on a fresh network of the
  // world's mode.
  bool reuse_isolated = true;
  // Ranks are not alike (variability): no rank may stand for another.
  bool ranks_differ = false;
  // Per-rank compute speeds; null: every rank computes at the profile's speed.
  const exec::ComputeVariability* variability = nullptr;
};

// A cluster built for one simulation: the graph, its routes and the GPU. Routes and the isolated
// timer refer to the graph, so a World neither moves nor copies; it must outlive every network
// and executor made from it.
class World {
 public:
  // Runs on the built graph before routes are made (degraded links change the graph's rates).
  using TopologyEdit = std::function<void(net::Topology&)>;

  // Builds `cluster`'s graph for `gpus` GPUs (<= 0: the whole cluster as its tiers describe it)
  // in a fabric grown for `fabric_gpus` (net::build_topology), with cluster.gpu in place of the
  // topology's own GPU, then applies `edit` and makes the routes.
  World(const ResolvedCluster& cluster, int32_t gpus, int64_t fabric_gpus = 0,
        const TopologyEdit& edit = {});
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  const net::Topology& topology() const { return topology_; }
  net::Routing& routing() { return *routing_; }
  net::NetworkMode mode() const { return mode_; }
  const clustersim::RunConfig& config() const { return config_; }
  const std::string& source() const { return source_; }
  // The GPU's profile, loaded on first use: a collective alone needs none.
  const compute::GpuProfile& gpu();
  // NCCL's model for the world's GPU with the config's NCCL settings and effects.
  coll::NcclTuning nccl_tuning() const;
  // A network of the configured mode on `sim`, over this world's graph and routes.
  std::unique_ptr<net::Network> make_network(Simulator& sim);

  // The executor options the world's config asks for (see the free function below).
  exec::ExecutorOptions executor_options(const ExecutorChoices& choices = {});

 private:
  clustersim::RunConfig config_;
  std::string source_;
  net::NetworkMode mode_;
  net::Topology topology_;
  std::unique_ptr<net::Routing> routing_;
  std::optional<compute::GpuProfile> gpu_;
};

// The options of an executor on `world` for `config`'s NCCL, simulation and effects settings (a
// job of several on one cluster brings its own; its cluster and network must be the world's).
// Throws ConfigError naming `source` for a negative nccl.channels.
exec::ExecutorOptions executor_options(World& world, const clustersim::RunConfig& config,
                                       const ExecutorChoices& choices, const std::string& source);

}  // namespace cs::world
