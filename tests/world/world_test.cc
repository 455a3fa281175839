// The world builder: a config's topology resolved once, then built with the GPU override, the
// network of the configured mode and the executor options the config's effects ask for.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "sim/config/config_error.h"
#include "sim/config/embedded_presets.h"
#include "sim/net/topology_builder.h"
#include "sim/world/world.h"
#include "tests/support/test_helpers.h"

namespace cs::world {
namespace {

clustersim::RunConfig on(const std::string& topology) {
  clustersim::RunConfig config;
  config.mutable_cluster()->set_topology(topology);
  return config;
}

std::string error_of(const clustersim::RunConfig& config) {
  try {
    ResolvedCluster cluster(config, "job.textproto");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ResolvedCluster, TakesThePresetsDescriptionAndItsGpu) {
  const ResolvedCluster cluster(on("dgx-h100"), "test");
  EXPECT_EQ(cluster.description().name(), "dgx-h100");
  EXPECT_EQ(cluster.gpu_type(), "h100");
  EXPECT_GE(cluster.capacity_gpus(), 8);
}

// Servers a world's GPUs sit in.
std::set<int32_t> servers_of(const net::Topology& topology) {
  std::set<int32_t> nodes;
  for (std::size_t g = 0; g < topology.num_gpus(); ++g)
    nodes.insert(topology.vertex(topology.gpu(static_cast<int32_t>(g))).node);
  return nodes;
}

TEST(ResolvedCluster, AppliesTheClustersGpusPerNode) {
  clustersim::RunConfig config = on("dgx-h100");
  EXPECT_EQ(servers_of(World(ResolvedCluster(config, "test"), 16).topology()).size(), 2u);
  config.mutable_cluster()->set_gpus_per_node(4);
  const ResolvedCluster cluster(config, "test");
  EXPECT_EQ(net::gpus_per_node_in_use(cluster.description()), 4);
  EXPECT_EQ(servers_of(World(cluster, 16).topology()).size(), 4u);
}

TEST(ResolvedCluster, NamesTheFieldOfAnUnknownOrMissingTopology) {
  const std::string unknown = error_of(on("no-such-cluster"));
  EXPECT_NE(unknown.find("job.textproto: cluster.topology: "), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("no-such-cluster"), std::string::npos) << unknown;
  const std::string missing = error_of(clustersim::RunConfig{});
  EXPECT_EQ(missing, "job.textproto: cluster.topology is not set");
}

// The description is read once, when the cluster is resolved: a world built later does not read
// the file again (a run's short extrapolation runs each build one).
TEST(ResolvedCluster, IsReadOnceAndBuiltFromMemory) {
  const std::string text = find_preset_or_file("topologies", "dgx-h100")->text;
  const std::string path = testing_support::temp_file("once.textproto", text);
  const ResolvedCluster cluster(on(path), "test");
  std::filesystem::remove(path);
  const World world(cluster, 16);
  EXPECT_EQ(world.topology().num_gpus(), 16u);
}

TEST(World, PutsClusterGpuInPlaceOfTheTopologysOwn) {
  clustersim::RunConfig config = on("dgx-h100");
  config.mutable_cluster()->set_gpu("b200");
  const ResolvedCluster cluster(config, "test");
  World world(cluster, 8);
  EXPECT_EQ(world.topology().gpu_type, "b200");
  EXPECT_EQ(world.topology().name, "dgx-h100");
  EXPECT_EQ(world.gpu().name(), "b200");
}

// The largest NVLink bandwidth out of a GPU on a topology's NVLink links.
double nvlink_gbytes(const net::Topology& t) {
  double most = 0;
  for (net::LinkId id = 0; id < t.num_links(); ++id)
    if (t.link(id).link_class == net::LinkClass::kNvlink)
      most = std::max(most, t.link(id).bandwidth.in_bytes_per_s() / 1e9);
  return most;
}

// A GPU moves no more over NVLink than its own links carry (H800: 200 GB/s on dgx-h100's 450),
// and NCCL's model reads the topology's NICs, not the GPU profile's (Alps: 200 Gb/s Slingshot,
// whatever GPU runs there). An H800 on dgx-h100 used to run at H100's NVLink.
TEST(World, TheGpusOwnNvlinkAndTheTopologysNicsBind) {
  clustersim::RunConfig config = on("dgx-h100");
  EXPECT_DOUBLE_EQ(nvlink_gbytes(World(ResolvedCluster(config, "test"), 8).topology()), 450);
  config.mutable_cluster()->set_gpu("h800");
  EXPECT_DOUBLE_EQ(nvlink_gbytes(World(ResolvedCluster(config, "test"), 8).topology()), 200);
  clustersim::RunConfig alps = on("alps-gh200");
  alps.mutable_cluster()->set_gpu("h100");  // a 400 Gb/s NIC in its profile
  const World world(ResolvedCluster(alps, "test"), 8);
  EXPECT_DOUBLE_EQ(world.topology().nic_gbits, 200);
  // NCCL's rings cross servers at sm90SpeedArrayInter's speed a 25 GB/s NIC fits, not 50's.
  const auto graph = world.nccl_tuning().graph(8, 4);
  EXPECT_LT(graph.bw_inter_gbps * graph.channels / 4, 25.0 + 1e-9);
  config.mutable_cluster()->set_gpu("h1000");
  const std::string unknown = error_of(config);
  EXPECT_NE(unknown.find("job.textproto: cluster.gpu: unknown GPU 'h1000'"), std::string::npos)
      << unknown;
}

TEST(World, EditsTheGraphBeforeRoutesAreMade) {
  const ResolvedCluster cluster(on("dgx-h100"), "test");
  std::string gpu_seen;
  const World world(cluster, 8, 0, [&](net::Topology& t) { gpu_seen = t.gpu_type; });
  EXPECT_EQ(gpu_seen, "h100");  // the override is in place when the edit runs
}

TEST(World, NetworkModeComesFromTheConfig) {
  for (const auto mode :
       {clustersim::CONGESTION_AWARE, clustersim::ANALYTICAL, clustersim::IDEAL}) {
    clustersim::RunConfig config = on("dgx-h100");
    config.set_network(mode);
    const ResolvedCluster cluster(config, "test");
    World world(cluster, 8);
    EXPECT_EQ(world.mode(), network_mode(mode));
    EXPECT_EQ(config_network_mode(world.mode()), mode);
    Simulator sim;
    EXPECT_NE(world.make_network(sim), nullptr);
  }
  EXPECT_NE(network_mode(clustersim::ANALYTICAL), network_mode(clustersim::IDEAL));
}

TEST(World, ExecutorOptionsFollowTheEffects) {
  clustersim::RunConfig config = on("dgx-h100");
  {
    const ResolvedCluster cluster(config, "test");
    World world(cluster, 8);
    const exec::ExecutorOptions options = world.executor_options();
    ASSERT_TRUE(options.interference.has_value());
    EXPECT_TRUE(options.isolated_timer != nullptr);
    EXPECT_TRUE(options.fold_tensor_parallel);
    EXPECT_FALSE(world.executor_options({.ranks_differ = true}).fold_tensor_parallel);
    EXPECT_TRUE(world.executor_options({.reuse_isolated = false}).isolated_timer == nullptr);
  }
  config.mutable_effects()->set_comm_compute_interference(false);
  const ResolvedCluster cluster(config, "test");
  World world(cluster, 8);
  EXPECT_FALSE(world.executor_options().interference.has_value());
}

TEST(World, NcclSettingsReachTheTuning) {
  clustersim::RunConfig config = on("dgx-h100");
  config.mutable_nccl()->set_protocol(clustersim::NcclConfig::LL);
  config.mutable_effects()->set_nccl_step_latency(false);
  const ResolvedCluster cluster(config, "test");
  World world(cluster, 8);
  const coll::NcclSettings settings = world.nccl_tuning().settings();
  EXPECT_EQ(settings.protocol, coll::Protocol::kLl);
  EXPECT_FALSE(settings.step_latency);
  const exec::ExecutorOptions options = world.executor_options();
  ASSERT_TRUE(options.nccl.has_value());
  EXPECT_EQ(options.nccl->settings().protocol, coll::Protocol::kLl);
}

TEST(World, RefusesNegativeChannelsNamingTheSource) {
  clustersim::RunConfig config = on("dgx-h100");
  config.mutable_nccl()->set_channels(-1);
  const ResolvedCluster cluster(config, "job.textproto");
  World world(cluster, 8);
  try {
    world.executor_options();
    FAIL() << "negative channels accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("job.textproto: nccl.channels"), std::string::npos);
  }
}

// Whether two configs give different NCCL settings, network options or executor options (what
// effects can change).
bool world_differs(World& world, const clustersim::RunConfig& a, const clustersim::RunConfig& b) {
  const exec::ExecutorOptions x = executor_options(world, a, {}, "test");
  const exec::ExecutorOptions y = executor_options(world, b, {}, "test");
  const auto quantized = [](const exec::ExecutorOptions& o) {
    return o.interference && o.interference->wave_quantization;
  };
  return !(nccl_settings(a) == nccl_settings(b)) || !(network_options(a) == network_options(b)) ||
         x.all_to_all_wire != y.all_to_all_wire ||
         x.interference.has_value() != y.interference.has_value() || quantized(x) != quantized(y) ||
         x.side_stream_contention != y.side_stream_contention ||
         x.deepep.nvlink != y.deepep.nvlink || x.deepep.network != y.deepep.network ||
         x.deepep_tokens.call_us != y.deepep_tokens.call_us ||
         x.deepep_tokens.ns_per_token_peer != y.deepep_tokens.ns_per_token_peer;
}

// Turning off an effect changes the world exactly when world_effects() lists it, so the list a
// replay checks its --set against is the one the world reads.
TEST(WorldEffects, TheListedEffectsAreTheOnesTheWorldReads) {
  // H800s, whose profile holds every figure an effect reads (DeepEP's shares among them), and a
  // DeepEP token cost, which only Blackwell profiles give.
  clustersim::RunConfig base = on("dgx-h100");
  base.mutable_cluster()->set_gpu(testing_support::temp_file(
      "h800-call.textproto", "name: \"h800-call\" based_on: \"h800\" deepep_call_us: 10"));
  World world(ResolvedCluster(base, "test"), 16);
  const auto* fields = clustersim::EffectsConfig::descriptor();
  const auto listed = world_effects();
  int read = 0;
  for (int i = 0; i < fields->field_count(); ++i) {
    const auto* field = fields->field(i);
    ASSERT_EQ(field->type(), google::protobuf::FieldDescriptor::TYPE_BOOL) << field->name();
    clustersim::RunConfig flipped = base;
    auto* effects = flipped.mutable_effects();
    effects->GetReflection()->SetBool(effects, field, !field->default_value_bool());
    const bool is_listed = std::find(listed.begin(), listed.end(), field->name()) != listed.end();
    EXPECT_EQ(world_differs(world, base, flipped), is_listed) << field->name();
    read += is_listed;
  }
  EXPECT_EQ(read, static_cast<int>(listed.size()));  // every listed name is a field
}

}  // namespace
}  // namespace cs::world
