// `clustersim collective`: nccl-tests for the simulated cluster.
#include <algorithm>
#include <array>
#include <boost/program_options.hpp>
#include <chrono>
#include <iomanip>
#include <sstream>

#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/size_list.h"
#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/registry.h"
#include "sim/coll/collective.h"
#include "sim/coll/fluid.h"
#include "sim/coll/nccl_plan.h"
#include "sim/coll/runner.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/config/embedded_presets.h"
#include "sim/core/simulator.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"
#include "sim/report/json.h"
#include "sim/run/footprint.h"
#include "sim/world/world.h"

namespace cs::cli {

namespace po = boost::program_options;

namespace {

// The effects a collective can switch off, each a --no-FLAG naming its EffectsConfig field.
struct EffectFlag {
  const char* flag;
  const char* field;
  const char* help;
};
constexpr EffectFlag kEffectFlags[] = {
    {"no-protocol-overhead", "nccl_protocol_overhead", "LL / LL128 flag bytes"},
    {"no-nvlink-overhead", "nvlink_protocol_overhead", "NVLink carries its line rate of payload"},
    {"no-step-latency", "nccl_step_latency",
     "NCCL's per-hop and per-call latencies, and send/recv and all-to-all kernels' launch"},
    {"no-rail-rings", "rail_aligned_rings", "one ring in rank order across servers"},
    {"no-nvls-efficiency", "nvls_switch_efficiency",
     "NVLS reduces through the NVSwitch at full link rate"},
    {"no-small-call-channels", "nccl_small_call_channels",
     "a small call on one server runs on all of NCCL's channels, not on those its bytes fill"},
    {"no-nvls-loops", "nvls_loop_pipeline",
     "one server's NVLS at NCCL's derating and latencies at every size, not in its measured "
     "loops (Hopper)"},
    {"no-nvls-tree-loops", "nvls_tree_loop_pipeline",
     "NVLS-tree across servers at NCCL's latencies at every size, not in its loops (Hopper)"},
    {"no-nvls-bus-cap", "nvls_bus_bandwidth_cap",
     "NVLS bus bandwidth keeps growing past 8 GPUs (NVL72 racks)"},
    {"no-nvls-tree-ceiling", "nvls_tree_channel_ceiling",
     "Hopper's NVLS-tree beyond NCCL's per-channel ceiling"},
    {"no-tree-pattern", "nccl_tree_pattern",
     "trees whose servers reach the network through one GPU per channel (no NVSwitch) run at "
     "the full rate of NCCL's other trees"},
    {"no-network-overhead", "network_packet_overhead",
     "NICs carry their full data rate of payload (NCCL reaches 96%)"},
    {"no-trunks", "analytical_oversubscribed_trunks",
     "--network analytical sees no oversubscribed tier: traffic across one drains at its "
     "senders' rate"},
    {"no-hashed-paths", "analytical_hashed_paths",
     "--network analytical on an ECMP fabric pools the links above the NICs, as if sprayed: "
     "connections hashed onto one link no longer share it"},
};

struct Request {
  std::string op = "all_reduce";
  std::string algo = "auto";
  int32_t gpus = 0;
  int32_t gpus_per_node = 0;  // 0: every GPU of a node (cluster.gpus_per_node)
  int32_t group_size = 0;     // 0: all GPUs
  int32_t group_stride = 1;
  int32_t chunks = 0;  // 0: coll::auto_chunks per size
  int32_t window = 0;  // 0: coll::auto_window per size
  int32_t root = 0;
  std::string topology = "dgx-h100";
  std::string sizes = "1K,1M,1G";
  std::string network = "congestion_aware";
  std::string json;
  std::string protocol = "auto";
  int32_t channels = 0;  // 0: one ring per NIC across servers, as many as NCCL fits
  std::string nvls = "on";
  std::string pat = "on";
  std::array<bool, std::size(kEffectFlags)> effect_off{};  // by kEffectFlags
  bool fluid = false;
  bool nccl_costs = false;
};

struct SizeResult {
  Bytes size = 0;
  coll::Algorithm algo = coll::Algorithm::kRing;
  coll::Protocol protocol = coll::Protocol::kSimple;
  int32_t channels = 1;
  double model_busbw_gbytes_per_s = 0;  // NCCL's own cost model for the same call
  int32_t chunks = 1;
  int32_t window = 1;
  Time time;
  double algbw_gbytes_per_s = 0;
  double busbw_gbytes_per_s = 0;
  uint64_t events = 0;
  double wall_s = 0;
};

// The GPUs of group g: members j = 0..size-1 sit `stride` ranks apart, and consecutive groups
// fill the gaps first (stride 128 and size 128 on 16,384 GPUs gives the 128 data-parallel
// groups of TP 8 x PP 16 x DP 128).
std::vector<net::VertexId> group_vertices(const net::Topology& topo, int32_t g, int32_t size,
                                          int32_t stride) {
  const int32_t block = g / stride, offset = g % stride;
  std::vector<net::VertexId> v(static_cast<std::size_t>(size));
  for (int32_t j = 0; j < size; ++j) v[j] = topo.gpu(block * size * stride + offset + j * stride);
  return v;
}

// Group members that share a server, counted from the first member; must be uniform for the
// hierarchical algorithm.
int32_t members_per_node(const net::Topology& topo, const std::vector<net::VertexId>& group) {
  int32_t local = 0;
  while (local < static_cast<int32_t>(group.size()) &&
         topo.vertex(group[local]).node == topo.vertex(group[0]).node)
    ++local;
  return local;
}

void write_json(const CommandIo& io, const std::string& path, const Request& req,
                const net::Topology& topo, std::string_view algo, int32_t groups,
                const std::vector<SizeResult>& results, const report::Json& nccl_model) {
  write_file(io, path, [&](std::ostream& out) {
    report::Json j = {{"op", req.op},
                      {"algo", algo},
                      {"gpus", req.gpus},
                      {"gpus_per_node", req.gpus_per_node},
                      {"group_size", req.group_size},
                      {"groups", groups},
                      {"topology", topo.name},
                      {"gpu", topo.gpu_type},
                      {"network", req.network}};
    report::Json& rows = j["results"] = report::Json::array();
    for (const auto& r : results) {
      rows.push_back({{"size_bytes", r.size},
                      {"algo", coll::to_string(r.algo)},
                      {"protocol", coll::to_string(r.protocol)},
                      {"channels", r.channels},
                      {"nccl_model_busbw_gbytes_per_s", r.model_busbw_gbytes_per_s},
                      {"chunks", r.chunks},
                      {"window", r.window},
                      {"time_us", r.time.as_us()},
                      {"algbw_gbytes_per_s", r.algbw_gbytes_per_s},
                      {"busbw_gbytes_per_s", r.busbw_gbytes_per_s},
                      {"events", r.events}});
    }
    if (!nccl_model.is_null()) j["nccl_model"] = nccl_model;
    report::write_document(out, j);
  });
}

// Adds every option of `clustersim collective` to `opts`, each writing into `req`.
void add_collective_options(po::options_description& opts, Request& req) {
  std::string algo_help;  // every algorithm of the table, then auto
  for (const coll::AlgorithmInfo& a : coll::algorithm_table())
    algo_help += std::string(a.name) + " | ";
  algo_help += "auto (NCCL's choice by its cost model)";
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("op", po::value(&req.op)->default_value(req.op),
       "all_reduce | all_gather | reduce_scatter | all_to_all | broadcast | send_recv")
      ("algo", po::value(&req.algo)->default_value(req.algo), algo_help.c_str())
      ("protocol", po::value(&req.protocol)->default_value(req.protocol),
       "NCCL protocol: simple | ll | ll128 | auto (NCCL's choice by size)")
      ("channels", po::value(&req.channels)->default_value(req.channels),
       "rings or tree channel pairs across servers (0: one per NIC, rail-aligned, as many as "
       "NCCL's search fits; trees take the topology's nccl_channels where it gives them)")
      ("nvls", po::value(&req.nvls)->default_value(req.nvls),
       "on | off: NVLink SHARP all-reduce on Hopper NVSwitch servers (NVLS, NVLS-tree)")
      ("pat", po::value(&req.pat)->default_value(req.pat),
       "on | off: NCCL 2.23's PAT all-gather / reduce-scatter over one GPU per server")
      ("gpus", po::value(&req.gpus)->required(), "GPUs in the run (the topology is sized to them)")
      ("gpus-per-node", po::value(&req.gpus_per_node)->default_value(0),
       "GPUs used of each node or NVLink domain, the first ones (cluster.gpus_per_node: 8 of a "
       "72-GPU rack for an NVL8 partition; 0: all)")
      ("topology", po::value(&req.topology)->default_value(req.topology),
       ("preset name (" + preset_list("topologies") + ") or a .textproto file").c_str())
      ("sizes", po::value(&req.sizes)->default_value(req.sizes),
       "comma-separated sizes, K/M/G/T = 2^10/2^20/2^30/2^40 bytes")
      ("network", po::value(&req.network)->default_value(req.network),
       "congestion_aware | analytical (ideal, where communication is free, has nothing to "
       "time)")
      ("group-size", po::value(&req.group_size), "GPUs per group (default: all)")
      ("group-stride", po::value(&req.group_stride)->default_value(1),
       "rank distance between members of a group")
      ("chunks", po::value(&req.chunks)->default_value(req.chunks),
       "pipeline chunks per shard / tree half / broadcast channel share (0: by size, like NCCL)")
      ("window", po::value(&req.window)->default_value(req.window),
       "sends in flight per connection, at most NCCL_STEPS = 8 in NCCL (0: by size)")
      ("root", po::value(&req.root)->default_value(0), "broadcast root (group rank)")
      ("fluid", po::bool_switch(&req.fluid),
       "run the collectives that have a fluid form (rings, one-chunk hierarchical, trees, NVLS, "
       "NVLS-trees; coll/fluid.h) as fluid transfers, as training steps do, instead of message "
       "by message")
      ("nccl-costs", po::bool_switch(&req.nccl_costs),
       "also print NCCL's cost model for the call: each algorithm and protocol's latency (us) "
       "and algorithm bandwidth (GB/s), the table NCCL_DEBUG_SUBSYS=TUNING logs, and each size's "
       "predicted times, NCCL's choice first (with --json: its nccl_model)")
      ("json", po::value(&req.json),
       "also write the results as JSON to this file (-: to stdout, the table then to stderr)");
  // clang-format on
  for (std::size_t i = 0; i < std::size(kEffectFlags); ++i) {
    opts.add_options()(kEffectFlags[i].flag, po::bool_switch(&req.effect_off[i]),
                       (std::string("effect off: ") + kEffectFlags[i].help).c_str());
  }
}

// What the options ask for once parsed: the op (in `key`), the algorithm, the sizes, and the
// config of the world to run on (topology, network, NCCL's settings and the effect switches).
struct ParsedRequest {
  coll::ScheduleKey key;
  coll::Algorithm requested = coll::Algorithm::kAuto;
  std::vector<Bytes> sizes;
  clustersim::RunConfig config;
};

// Throws UsageError for group shapes, counts and switches out of range; --group-size defaults
// to every GPU here.
void check_collective_shape(Request& req) {
  if (req.group_size == 0) req.group_size = req.gpus;
  if (req.gpus < 1 || req.group_size < 1 || req.group_stride < 1)
    throw UsageError("--gpus, --group-size and --group-stride must be positive");
  if (req.chunks < 0 || req.channels < 0 || req.gpus_per_node < 0)
    throw UsageError(
        "--chunks, --channels and --gpus-per-node must not be negative (0: by size, all of a "
        "node)");
  if (req.channels > coll::kMaxChannels)
    throw UsageError("--channels must be at most " + std::to_string(coll::kMaxChannels) +
                     " (NCCL's MAXCHANNELS), got " + std::to_string(req.channels));
  // NCCL has NCCL_STEPS slots per connection; a wider window would model sends it cannot have in
  // flight.
  if (req.window < 0 || req.window > coll::kMaxWindow)
    throw UsageError("--window must be in [0, " + std::to_string(coll::kMaxWindow) +
                     "] (sends in flight per connection, at most NCCL_STEPS = " +
                     std::to_string(coll::kMaxWindow) + " in NCCL; 0: by size), got " +
                     std::to_string(req.window));
  for (const auto& [name, value] : {std::pair{"--nvls", req.nvls}, std::pair{"--pat", req.pat}})
    if (value != "on" && value != "off")
      throw UsageError(std::string(name) + " must be on or off, not '" + value + "'");
}

clustersim::NcclConfig::Protocol config_protocol(coll::Protocol protocol) {
  switch (protocol) {
    case coll::Protocol::kSimple:
      return clustersim::NcclConfig::SIMPLE;
    case coll::Protocol::kLl:
      return clustersim::NcclConfig::LL;
    case coll::Protocol::kLl128:
      return clustersim::NcclConfig::LL128;
    case coll::Protocol::kAuto:
      break;
  }
  return clustersim::NcclConfig::AUTO;
}

// Sets the NCCL settings and effects that --protocol, --channels, --nvls, --pat and the effect
// switches give, as a run's config would hold them.
void apply_nccl_switches(const Request& req, coll::Protocol protocol,
                         clustersim::RunConfig& config) {
  auto& nccl = *config.mutable_nccl();
  nccl.set_protocol(config_protocol(protocol));
  nccl.set_channels(req.channels);
  nccl.set_nvls(req.nvls == "on");
  nccl.set_pat(req.pat == "on");
  auto& effects = *config.mutable_effects();
  const auto* fields = clustersim::EffectsConfig::descriptor();
  for (std::size_t i = 0; i < std::size(kEffectFlags); ++i) {
    effects.GetReflection()->SetBool(&effects, fields->FindFieldByName(kEffectFlags[i].field),
                                     !req.effect_off[i]);
  }
}

// Parses and checks the request, throwing UsageError for anything it cannot run.
ParsedRequest parse_collective_request(Request& req) {
  ParsedRequest parsed;
  coll::Protocol protocol;
  try {
    parsed.key.op = coll::parse_op(req.op);
    parsed.requested = coll::parse_algorithm(req.algo);
    parsed.sizes = parse_size_list(req.sizes);
    parsed.config.set_network(world::config_network_mode(net::parse_network_mode(req.network)));
    protocol = coll::parse_protocol(req.protocol);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  // On the ideal network every transfer is free: no time, and a bandwidth of size / 0.
  if (parsed.config.network() == clustersim::IDEAL)
    throw UsageError(
        "--network ideal makes communication free, so a collective has no time or bandwidth to "
        "report: use congestion_aware or analytical");
  check_collective_shape(req);
  apply_nccl_switches(req, protocol, parsed.config);
  if (req.gpus % (req.group_size * req.group_stride) != 0) {
    throw UsageError(
        "--gpus " + std::to_string(req.gpus) + " is not a multiple of group size x stride (" +
        std::to_string(req.group_size) + " x " + std::to_string(req.group_stride) + ")");
  }
  return parsed;
}

// The world --topology names, built for --gpus.
world::World build_collective_world(const world::ResolvedCluster& cluster, const Request& req) {
  // A topology too small says so first; one that fits is estimated before it is built.
  if (req.gpus <= cluster.capacity_gpus())
    run::refuse_cluster_if_too_big(req.gpus, 0, "--gpus " + std::to_string(req.gpus));
  return world::World(cluster, req.gpus);
}

// Picks each size's schedule as NCCL would, or as --algo, --chunks and --window ask, and keeps
// the key of the size planned last. Schedules depend on the size only through (algorithm,
// chunks, window); sizes that agree share one.
class CollectivePlanner {
 public:
  CollectivePlanner(const Request& req, const ParsedRequest& parsed, const world::World& world,
                    const std::vector<std::vector<net::VertexId>>& groups)
      : req_(req),
        key_(parsed.key),
        requested_(parsed.requested),
        local_(members_per_node(world.topology(), groups.front())),
        // The plans see servers as a member count when every group holds runs of it (the last
        // perhaps fewer), else one member each.
        auto_local_(coll::common_members_per_server(
            static_cast<int32_t>(groups.size()), req.group_size,
            [&](int32_t g, int32_t i) { return world.topology().vertex(groups[g][i]).node; })),
        tuning_(world.nccl_tuning()) {
    key_.n = req.group_size;
    key_.root = req.root;
  }

  // The schedule of `size`, or null where it runs as fluid transfers; throws UsageError for an
  // algorithm that cannot run it.
  std::shared_ptr<const coll::Schedule> schedule_for(Bytes size) {
    coll::ScheduleKey planned;
    try {
      planned = tuning_.plan(key_.op, key_.n, auto_local_, size, requested_);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    const int32_t root = key_.root;
    key_ = planned;
    key_.root = root;
    if (req_.chunks > 0) {
      key_.chunks = req_.chunks;
      key_.tail = 0;  // chunks asked for are cut evenly
    }
    if (req_.window > 0 || req_.chunks > 0)
      key_.window = req_.window > 0
                        ? req_.window
                        : coll::auto_window(key_.op, key_.algo, key_.n, key_.chunks, size,
                                            auto_local_, key_.channels, key_.protocol);
    // NCCL's choice keeps the servers as plan() laid them out for the chooser (one member each
    // where the group splits them unevenly); an algorithm asked for by name takes the real count,
    // and its check.
    const coll::OpForm* form = coll::find_form(key_.algo, key_.op);
    if (requested_ != coll::Algorithm::kAuto && form != nullptr && form->on_servers())
      key_.local_size = local_;
    try {
      key_ = coll::normalize(key_);
      // A fluid run needs no message schedule (at 16K ranks it would take gigabytes).
      return req_.fluid && coll::fluid_supported(key_) ? nullptr : cache_.get(key_);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }

  // NCCL's own cost model's time of `size` in microseconds (0 where it has none).
  double model_us(Bytes size) const {
    return tuning_.has_hardware() && coll::nccl_tuned(key_.op)
               ? tuning_.model_choice(key_.op, key_.n, auto_local_, size, requested_).time_us
               : 0;
  }

  // Whether NCCL's cost model chooses this call's algorithm (it has the GPU's figures and the op
  // is one NCCL tunes), and its graph and candidates of `size` (NcclTuning::model_candidates).
  bool has_model() const { return tuning_.has_hardware() && coll::nccl_tuned(key_.op); }
  coll::NcclGraph model_graph() const { return tuning_.graph(key_.n, auto_local_); }
  std::vector<coll::NcclChoice> model_candidates(Bytes size) const {
    return tuning_.model_candidates(key_.op, key_.n, auto_local_, size, requested_);
  }

  const coll::ScheduleKey& key() const { return key_; }

 private:
  const Request& req_;
  coll::ScheduleKey key_;
  coll::Algorithm requested_;
  int32_t local_;
  int32_t auto_local_;
  coll::ScheduleCache cache_;
  coll::NcclTuning tuning_;
};

// Checks the request before printing anything: an impossible one gets a one-line error, and so
// does one whose groups together would start more flows than one schedule may hold messages
// (multi-flow ECMP spreads a message over several flows, each a share of max-min solving).
void check_flow_budget(CollectivePlanner& planner, const Request& req, const net::Topology& topo,
                       const std::vector<Bytes>& sizes, int32_t groups) {
  const auto flows_per_message =
      static_cast<std::size_t>(std::max(topo.load_balancing.flows_per_message, 1));
  for (const Bytes size : sizes) {
    const auto schedule = planner.schedule_for(size);
    const std::size_t messages =
        schedule ? schedule->num_messages() * static_cast<std::size_t>(groups) : 0;
    if (messages * flows_per_message <= coll::kMaxScheduleMessages) continue;
    const coll::ScheduleKey& key = planner.key();
    throw UsageError(
        std::to_string(groups) + " groups of " + std::string(coll::to_string(key.algo)) + " " +
        req.op + " at " + format_size(size) + " send " + std::to_string(messages) +
        " messages of " + std::to_string(flows_per_message) + " flows, more than the " +
        std::to_string(coll::kMaxScheduleMessages) + " flows run message by message; " +
        (coll::fluid_supported(key) ? "add --fluid to run them as fluid transfers, or " : "") +
        "run fewer groups (--gpus)");
  }
}

// The two header lines of the table: what runs where, then the column names.
void print_collective_header(std::ostream& out, const Request& req, int32_t groups, int32_t n,
                             const net::Topology& topo) {
  out << "# clustersim collective: " << req.op << " (" << req.algo << "), " << groups
      << " group(s) of " << n << " GPUs on " << topo.name << " (" << topo.gpu_type << ", "
      << topo.num_gpus() << " GPUs, " << topo.num_vertices() << " vertices, " << topo.num_links()
      << " links), " << req.network << " network\n";
  out << "#" << std::setw(13) << "size" << std::setw(14) << "algo" << std::setw(8) << "chunks"
      << std::setw(8) << "window" << std::setw(8) << "proto" << std::setw(5) << "ch"
      << std::setw(16) << "time(us)" << std::setw(14) << "algbw(GB/s)" << std::setw(14)
      << "busbw(GB/s)" << std::setw(12) << "events" << std::setw(10) << "wall(s)" << '\n';
}

// Where one size runs: the cluster, its groups and the bus bandwidth factor of the op.
struct CollectiveRun {
  world::World& world;
  const std::vector<std::vector<net::VertexId>>& members;
  double factor;
};

// Simulates every group's collective at `size` at once, on a fresh network, and times it.
SizeResult run_collective_size(const CollectiveRun& run, CollectivePlanner& planner, Bytes size) {
  const auto wall_start = std::chrono::steady_clock::now();
  const std::shared_ptr<const coll::Schedule> schedule = planner.schedule_for(size);
  const coll::ScheduleKey& key = planner.key();
  Simulator sim;
  auto network = run.world.make_network(sim);
  Time finish;
  const auto ended = [&](const coll::RunStats& s) { finish = std::max(finish, s.end); };
  for (const auto& group : run.members) {
    if (schedule)
      coll::run_collective(sim, *network, *schedule, group, size, ended);
    else
      coll::run_fluid_collective(sim, *network, key, group, size, ended);
  }
  sim.run();
  SizeResult r;
  r.size = size;
  r.algo = key.algo;
  r.protocol = key.protocol;
  r.channels = key.channels;
  r.chunks = key.chunks;
  r.window = key.window;
  r.time = finish;
  const double seconds = finish.as_seconds();
  r.algbw_gbytes_per_s = seconds > 0 ? static_cast<double>(size) / seconds * 1e-9 : 0;
  r.busbw_gbytes_per_s = r.algbw_gbytes_per_s * run.factor;
  const double model_us = planner.model_us(size);
  if (model_us > 0)
    r.model_busbw_gbytes_per_s = static_cast<double>(size) * 1e-3 * run.factor / model_us;
  r.events = sim.events_processed();
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r;
}

// One row of the table.
void print_size_row(std::ostream& out, const SizeResult& r) {
  out << std::setw(14) << format_size(r.size) << std::setw(14) << coll::to_string(r.algo)
      << std::setw(8) << r.chunks << std::setw(8) << r.window << std::setw(8)
      << coll::to_string(r.protocol) << std::setw(5) << r.channels << std::fixed
      << std::setprecision(3) << std::setw(16) << r.time.as_us() << std::setprecision(2)
      << std::setw(14) << r.algbw_gbytes_per_s << std::setw(14) << r.busbw_gbytes_per_s
      << std::setw(12) << r.events << std::setprecision(3) << std::setw(10) << r.wall_s << '\n';
  out.unsetf(std::ios::fixed);
}

// NCCL's cost model for the call: its graph, the latency and bandwidth of every algorithm and
// protocol (bandwidth 0: it does not run here), and each size's candidates by predicted time,
// NCCL's choice (the first of least time in its search order) first. Computed once for the text
// and the JSON.
struct NcclCosts {
  struct Cell {
    coll::NcclAlgo algo;
    coll::Protocol protocol;
    double latency_us, bandwidth_gbps;
  };
  coll::NcclGraph graph;
  std::vector<Cell> table;  // kNcclAlgos x kNcclProtocols, in that order
  std::vector<std::pair<Bytes, std::vector<coll::NcclChoice>>> sizes;
};

NcclCosts nccl_costs(const CollectivePlanner& planner, const std::vector<Bytes>& sizes) {
  NcclCosts costs{planner.model_graph(), {}, {}};
  const coll::Op op = planner.key().op;
  for (const coll::NcclAlgo a : coll::kNcclAlgos)
    for (const coll::Protocol p : coll::kNcclProtocols)
      costs.table.push_back({a, p, coll::model_latency_us(op, a, p, costs.graph),
                             coll::model_bandwidth_gbps(op, a, p, costs.graph)});
  for (const Bytes size : sizes) {
    std::vector<coll::NcclChoice> c = planner.model_candidates(size);
    std::stable_sort(c.begin(), c.end(),
                     [](const auto& a, const auto& b) { return a.time_us < b.time_us; });
    costs.sizes.emplace_back(size, std::move(c));
  }
  return costs;
}

// The cost model after the results: the table NCCL's TUNING log prints, then each size's
// candidates, fastest first.
void print_nccl_costs(std::ostream& out, const NcclCosts& costs) {
  const coll::NcclGraph& g = costs.graph;
  out << std::fixed << std::setprecision(1) << "# NCCL's cost model (tuning.cc): " << g.ranks
      << " ranks on " << g.nodes << " server(s), " << g.channels << " channels of "
      << g.bw_intra_gbps << " GB/s within a server, " << g.bw_inter_gbps
      << " across; latency us / algorithm bandwidth GB/s\n#" << std::setw(12) << "algorithm";
  for (const coll::Protocol p : coll::kNcclProtocols) out << std::setw(18) << coll::to_string(p);
  for (std::size_t i = 0; i < costs.table.size(); ++i) {
    const NcclCosts::Cell& c = costs.table[i];
    if (i % coll::kNcclProtocols.size() == 0)
      out << "\n#" << std::setw(12) << coll::to_string(c.algo);
    std::ostringstream cell;
    cell << std::fixed << std::setprecision(1);
    if (c.bandwidth_gbps > 0)
      cell << c.latency_us << " / " << c.bandwidth_gbps;
    else
      cell << "-";
    out << std::setw(18) << cell.str();
  }
  out << "\n# predicted time, us, NCCL's choice first:\n";
  for (const auto& [size, candidates] : costs.sizes) {
    out << "#" << std::setw(13) << format_size(size);
    for (const coll::NcclChoice& c : candidates)
      out << "  " << coll::to_string(c.algo) << "/" << coll::to_string(c.protocol) << " "
          << c.time_us;
    out << '\n';
  }
  out.unsetf(std::ios::fixed);
}

// The same as JSON (the --json report's nccl_model), the table without what does not run.
report::Json nccl_costs_json(const NcclCosts& costs) {
  const coll::NcclGraph& g = costs.graph;
  report::Json j = {{"ranks", g.ranks},
                    {"nodes", g.nodes},
                    {"channels", g.channels},
                    {"bw_intra_gbytes_per_s", g.bw_intra_gbps},
                    {"bw_inter_gbytes_per_s", g.bw_inter_gbps}};
  report::Json& table = j["table"] = report::Json::array();
  for (const NcclCosts::Cell& c : costs.table)
    if (c.bandwidth_gbps > 0)
      table.push_back({{"algo", coll::to_string(c.algo)},
                       {"protocol", coll::to_string(c.protocol)},
                       {"latency_us", c.latency_us},
                       {"bandwidth_gbytes_per_s", c.bandwidth_gbps}});
  report::Json& rows = j["sizes"] = report::Json::array();
  for (const auto& [size, candidates] : costs.sizes) {
    report::Json list = report::Json::array();
    for (const coll::NcclChoice& c : candidates)
      list.push_back({{"algo", coll::to_string(c.algo)},
                      {"protocol", coll::to_string(c.protocol)},
                      {"time_us", c.time_us}});
    rows.push_back({{"size_bytes", size}, {"candidates", std::move(list)}});
  }
  return j;
}

}  // namespace

int collective_command(const std::vector<std::string>& args, CommandIo& given_io) {
  Request req;
  po::options_description opts(
      "usage: clustersim collective --gpus N [options]\n\n"
      "Times one collective on the simulated cluster for each size, like nccl-tests: simulated\n"
      "time, algorithm bandwidth (size / time) and bus bandwidth (algbw x the op's factor).\n"
      "With --group-size, the GPUs split into groups that all run the collective at once.\n\n"
      "options");
  add_collective_options(opts, req);
  po::variables_map vm;
  if (!parse_options(args, opts, nullptr, vm, given_io.out)) return 0;
  CommandIo io = check_outputs(given_io, {{"--json", req.json}});

  ParsedRequest parsed = parse_collective_request(req);
  req.topology = canonical_preset_name("topologies", req.topology);  // "DGX-H100" too
  parsed.config.mutable_cluster()->set_topology(req.topology);
  parsed.config.mutable_cluster()->set_gpus_per_node(req.gpus_per_node);
  const world::ResolvedCluster cluster(parsed.config, "collective", "--topology");
  world::World world = build_collective_world(cluster, req);
  const net::Topology& topo = world.topology();
  const int32_t groups = req.gpus / req.group_size;
  std::vector<std::vector<net::VertexId>> members;
  for (int32_t g = 0; g < groups; ++g)
    members.push_back(group_vertices(topo, g, req.group_size, req.group_stride));

  CollectivePlanner planner(req, parsed, world, members);
  check_flow_budget(planner, req, topo, parsed.sizes, groups);
  planner.schedule_for(parsed.sizes.front());  // the key of the first size, for the header
  const CollectiveRun run{world, members,
                          coll::bus_bandwidth_factor(planner.key().op, planner.key().n)};
  print_collective_header(io.out, req, groups, planner.key().n, topo);
  std::vector<SizeResult> results;
  for (const Bytes size : parsed.sizes) {
    results.push_back(run_collective_size(run, planner, size));
    print_size_row(io.out, results.back());
  }
  report::Json model;  // --nccl-costs: the cost model beside the results
  if (req.nccl_costs && !planner.has_model()) {
    io.out << "# NCCL's cost model: none for this call (NCCL runs all-to-all and send/recv as "
              "point-to-point sends outside it, and a GPU without NCCL's figures has none)\n";
  } else if (req.nccl_costs) {
    const NcclCosts costs = nccl_costs(planner, parsed.sizes);
    print_nccl_costs(io.out, costs);
    model = nccl_costs_json(costs);
  }
  if (!req.json.empty()) write_json(io, req.json, req, topo, req.algo, groups, results, model);
  return 0;
}

}  // namespace cs::cli
