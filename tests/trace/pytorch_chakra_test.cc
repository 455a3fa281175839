// Chakra traces as PyTorch's execution-trace observer + Kineto + chakra's converter write them:
// dangling edges, CPU operators, comm wrappers, process groups, every collective type, one rank,
// the import summary and bad input. Fixtures come from pytorch_chakra_fixture.h.
#include <gtest/gtest.h>

#include <sstream>

#include "sim/coll/nccl_test_case.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/compute/gpu_profile.h"
#include "sim/net/topology_builder.h"
#include "sim/trace/chakra.h"
#include "sim/trace/replay.h"
#include "sim/trace/trace_format.h"
#include "tests/support/test_helpers.h"
#include "tests/trace/pytorch_chakra_fixture.h"

namespace cs::trace {
namespace {

using pytorch_fixture::PtRank;
using pytorch_fixture::write_et;

struct Imported {
  exec::ExplicitWorkload workload;
  ChakraSummary summary;
};

Imported import(const std::vector<PtRank>& ranks, const ChakraImportOptions& options = {},
                const CommGroups& groups = {}) {
  std::vector<ChakraRank> in;
  std::vector<std::string> files;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    in.push_back(ranks[r].rank());
    files.push_back("pt." + std::to_string(r) + ".et");
  }
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  Imported out;
  out.workload = chakra_to_workload(in, files, cost, groups, options, &out.summary);
  return out;
}

report::StepReport replay(const Imported& i) {
  const ReplayTarget target{"dgx-h100", "", clustersim::CONGESTION_AWARE};
  return simulate_workload(i.workload, target, "pt", "pt");
}

std::string error_of(const std::vector<PtRank>& ranks, const ChakraImportOptions& options = {},
                     const CommGroups& groups = {}) {
  try {
    replay(import(ranks, options, groups));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// What `clustersim collective` measures for `op` on the first n GPUs of dgx-h100.
double nccl_seconds(coll::Op op, int n, Bytes size) {
  const auto desc = net::resolve_topology("dgx-h100");
  const net::Topology topo = net::build_topology(desc, n, "dgx-h100");
  return coll::run_nccl_test(topo, compute::nccl_tuning(topo.gpu_type), op, size, n)
      .time.as_seconds();
}

// n ranks that each run one collective the way PyTorch launches it: the thread root calls
// c10d::<op>, which calls record_param_comms, which launches the NCCL kernel.
std::vector<PtRank> one_collective(int n, int64_t type, int64_t bytes,
                                   const std::string& split = "") {
  std::vector<PtRank> ranks(static_cast<std::size_t>(n));
  for (auto& r : ranks) {
    const auto root = r.thread_root();
    const auto c10d = r.cpu_op("c10d::allreduce_", 0, {root});
    const auto record = r.cpu_op("record_param_comms", 0, {c10d});
    if (!split.empty()) pytorch_fixture::set_string(r.node(record), "in_split_size", split);
    r.nccl(type, bytes, record);
  }
  return ranks;
}

constexpr double kNvlink = 450e9;  // dgx-h100: per GPU per direction, NVSwitch in between

// --- dangling dependencies
// ------------------------------------------------------------------------

TEST(PyTorchChakra, DanglingDependenciesAreDroppedAndCountedOrAreErrorsWhenStrict) {
  PtRank r;
  const auto root = r.thread_root();
  const auto gone_parent = r.missing(), gone_data = r.missing();
  const auto op = r.cpu_op("aten::add", 5, {});
  r.node(op).add_ctrl_deps(gone_parent);
  r.node(op).add_data_deps(gone_data);
  r.kernel("vectorized_elementwise_kernel", op, 20);
  r.cpu_op("aten::mul", 3, {root});
  const Imported i = import({r});
  EXPECT_EQ(i.summary.dangling_ctrl_deps, 1u);
  EXPECT_EQ(i.summary.dangling_data_deps, 1u);
  ASSERT_EQ(i.summary.examples.size(), 2u);
  EXPECT_NE(i.summary.examples[0].find("node " + std::to_string(gone_data)), std::string::npos)
      << i.summary.examples[0];
  // Host thread: root 0, aten::add 5 us then aten::mul 3 us; the kernel runs 5..25 us.
  EXPECT_NEAR(replay(i).iteration_time_s, 25e-6, 1e-9);

  ChakraImportOptions strict;
  strict.strict_deps = true;
  const std::string e = error_of({r}, strict);
  EXPECT_NE(e.find("pt.0.et: rank 0: node " + std::to_string(op)), std::string::npos) << e;
  EXPECT_NE(e.find("depends on node " + std::to_string(gone_data)), std::string::npos) << e;
  EXPECT_NE(e.find("--strict-deps"), std::string::npos) << e;
}

// --- CPU operators
// --------------------------------------------------------------------------------

// Two CPU ops with no edge between them (30 us each) and a 50 us kernel launched by the second.
// That one also carries num_ops that the GPU roofline would turn into seconds, were it counted.
PtRank host_and_kernel() {
  PtRank r;
  const auto root = r.thread_root();
  r.cpu_op("aten::copy_", 30, {root});
  const auto mm = r.cpu_op("aten::mm", 30, {root});
  pytorch_fixture::set_int(r.node(mm), "num_ops", 1'000'000'000'000'000);
  r.kernel("sm90_xmma_gemm_bf16", mm, 50);
  return r;
}

TEST(PyTorchChakra, CpuOpsRunInOrderOnOneHostThreadAndTheirKernelsCountOnce) {
  const Imported i = import({host_and_kernel()});
  EXPECT_EQ(i.summary.cpu_ops, 3u);
  EXPECT_EQ(i.summary.gpu_kernels, 1u);
  EXPECT_EQ(i.summary.host_time, Time::us(60));
  const auto& p = i.workload.programs[0];
  EXPECT_EQ(p.streams[0].size(), 1u);  // only the GPU kernel is on the compute stream
  EXPECT_TRUE(p.kernels.empty());      // nothing timed by the roofline
  // aten::copy_ 0..30, then aten::mm 30..60 on the same thread, the kernel 60..110.
  EXPECT_NEAR(replay(i).iteration_time_s, 110e-6, 1e-9);
}

TEST(PyTorchChakra, SkippedCpuOpsTakeNoTimeAndKeepTheirEdges) {
  ChakraImportOptions skip;
  skip.cpu_ops = CpuOps::kSkip;
  const Imported i = import({host_and_kernel()}, skip);
  EXPECT_EQ(i.summary.cpu_ops_skipped, 3u);
  EXPECT_EQ(i.summary.host_time, Time{});
  EXPECT_NEAR(replay(i).iteration_time_s, 50e-6, 1e-9);
}

// --- communication wrappers
// -----------------------------------------------------------------------

TEST(PyTorchChakra, WrappersArePairedWithTheirGpuCollectiveAndNotCountedTwice) {
  const Bytes size = 4 << 20;
  // Old converters typed the c10d op COMM_COLL_NODE without attributes; give one wrapper comm
  // attributes too: the GPU kernel is still the one collective that runs.
  // Two pairs, each on its own pg_name, which only the wrapper carries.
  std::vector<PtRank> ranks(4);
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    auto& r = ranks[k];
    const auto root = r.thread_root();
    const auto c10d = r.cpu_op("c10d::allreduce_", 0, {root}, ChakraProtoMsg::COMM_COLL_NODE);
    const auto record = r.cpu_op("record_param_comms", 0, {c10d});
    pytorch_fixture::set_int(r.node(record), "comm_type", ChakraProtoMsg::ALL_REDUCE);
    pytorch_fixture::set_int(r.node(record), "comm_size", size);
    pytorch_fixture::set_string(r.node(record), "pg_name", k < 2 ? "0" : "1");
    r.nccl(ChakraProtoMsg::ALL_REDUCE, size, record);  // no pg_name: takes the wrapper's
    // A record_param_comms whose collective the profiler lost: dropped.
    r.cpu_op("record_param_comms", 0, {root});
  }
  const CommGroups groups{{"0", {0, 1}}, {"1", {2, 3}}};
  const Imported i = import(ranks, {}, groups);
  EXPECT_EQ(i.summary.wrappers_paired, 8u);
  EXPECT_EQ(i.summary.wrappers_dropped, 4u);
  EXPECT_EQ(i.summary.collectives.at("ALL_REDUCE"), 4u);  // one per rank
  const auto r = replay(i);
  // Ring all-reduce over each pair: each rank sends 2 (n - 1) / n x S = S, once (one 4-rank
  // ring would send 6 S in all).
  EXPECT_NEAR(r.comm_bytes_by_op[0], 4.0 * size, 0.01 * size);
  EXPECT_NEAR(r.iteration_time_s, nccl_seconds(coll::Op::kAllReduce, 2, size),
              0.01 * r.iteration_time_s);
}

TEST(PyTorchChakra, UnpairedWrapperWithCommAttributesIsTheCollective) {
  // An execution trace without Kineto: the c10d node carries the attributes, no GPU kernel.
  std::vector<PtRank> ranks(2);
  for (auto& r : ranks) {
    const auto c10d =
        r.cpu_op("c10d::allreduce_", 0, {r.thread_root()}, ChakraProtoMsg::COMM_COLL_NODE);
    pytorch_fixture::set_int(r.node(c10d), "comm_type", ChakraProtoMsg::ALL_REDUCE);
    pytorch_fixture::set_int(r.node(c10d), "comm_size", 1 << 20);
  }
  const auto r = replay(import(ranks));
  EXPECT_NEAR(r.comm_bytes_by_op[0], 2.0 * (1 << 20), 0.01 * (1 << 20));
}

// --- process groups
// -------------------------------------------------------------------------------

// Each rank's pg_config lists the groups it belongs to; "ranks": [] is the world.
std::string pg_config(int pair) {
  const std::string a = std::to_string(2 * pair), b = std::to_string(2 * pair + 1);
  return R"([{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", )"
         R"("ranks": [], "group_size": 4, "group_count": 3}, {"pg_name": ")" +
         std::to_string(pair + 1) +
         R"(", "pg_desc": "tp", "backend_config": "cuda:nccl", )"
         R"("ranks": [)" +
         a + ", " + b + R"(], "group_size": 2, "group_count": 3}])";
}

std::vector<PtRank> pairs_all_reduce(Bytes size, bool with_metadata) {
  std::vector<PtRank> ranks(4);
  for (int r = 0; r < 4; ++r) {
    auto& t = ranks[static_cast<std::size_t>(r)];
    const auto root = t.thread_root();
    if (with_metadata) t.pg_init(pg_config(r / 2), root);
    const auto record = t.cpu_op("record_param_comms", 0, {root});
    t.nccl(ChakraProtoMsg::ALL_REDUCE, size, record, std::to_string(r / 2 + 1));
  }
  return ranks;
}

TEST(PyTorchChakra, ProcessGroupsComeFromTheTracesOwnMetadata) {
  const Bytes size = 8 << 20;
  const Imported i = import(pairs_all_reduce(size, true));
  EXPECT_EQ(i.summary.groups, 3u);
  EXPECT_EQ(i.summary.groups_from, "process_group:init metadata");
  const auto& g = i.workload.groups;
  ASSERT_EQ(g.size(), 4u);  // all ranks, then "0" (the world), "1", "2"
  EXPECT_EQ(g[1], (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(g[2], (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(g[3], (std::vector<int32_t>{2, 3}));
  // Two pairs at once on one server: each as fast as a 2-GPU all-reduce alone.
  const auto r = replay(i);
  EXPECT_NEAR(r.iteration_time_s, nccl_seconds(coll::Op::kAllReduce, 2, size),
              0.01 * r.iteration_time_s);
  EXPECT_NEAR(r.comm_bytes_by_op[0], 4.0 * size, 0.01 * size);
}

TEST(PyTorchChakra, ProcessGroupsFromAJsonFileInEitherForm) {
  const Bytes size = 1 << 20;
  const auto ranks = pairs_all_reduce(size, false);
  // Without groups every collective spans all ranks: one 4-rank ring, 2 (n - 1) S on the wire.
  EXPECT_NEAR(replay(import(ranks)).comm_bytes_by_op[0], 6.0 * size, 0.01 * size);
  const CommGroups object = parse_comm_groups(R"({"1": [0, 1], "2": [2, 3]})", "g.json");
  const CommGroups list = parse_comm_groups(
      R"([{"pg_name": "1", "ranks": [0, 1]}, {"pg_name": "2", "ranks": [2, 3], "group_size": 2}])",
      "pg.json");
  EXPECT_EQ(object, list);
  ChakraImportOptions o;
  o.groups_source = "g.json";
  const Imported i = import(ranks, o, object);
  EXPECT_EQ(i.summary.groups_from, "g.json");
  // Two pairs: 2 S each.
  EXPECT_NEAR(replay(i).comm_bytes_by_op[0], 4.0 * size, 0.01 * size);
}

TEST(PyTorchChakra, GroupNamingMissingRanksIsAnErrorNamingTheSource) {
  ChakraImportOptions o;
  o.groups_source = "groups.json";
  const std::string e = error_of(pairs_all_reduce(1024, false), o, {{"1", {0, 1}}, {"2", {2, 7}}});
  EXPECT_NE(e.find("groups.json"), std::string::npos) << e;
  EXPECT_NE(e.find("\"2\""), std::string::npos) << e;
  EXPECT_NE(e.find("rank 7"), std::string::npos) << e;
  EXPECT_NE(e.find("4 rank files"), std::string::npos) << e;
  // A pg_name no group has.
  const std::string p = error_of(pairs_all_reduce(1024, false), o, {{"1", {0, 1}}});
  EXPECT_NE(p.find("pt.2.et: rank 2: node"), std::string::npos) << p;
  EXPECT_NE(p.find("pg_name \"2\" is not in groups.json"), std::string::npos) << p;
  // Metadata that is not a pg_config.
  PtRank bad;
  bad.pg_init("not json", bad.thread_root());
  const std::string m = error_of({bad});
  EXPECT_NE(m.find("pt.0.et: rank 0: node 2 (## process_group:init ##)"), std::string::npos) << m;
  EXPECT_THROW(parse_comm_groups(R"([{"ranks": [0]}])", "x.json"), TraceError);
  EXPECT_THROW(parse_comm_groups(R"({"a": [0, -1]})", "x.json"), TraceError);
  EXPECT_THROW(parse_comm_groups(R"({"a": [0, 1], "a": [2]})", "x.json"), TraceError);
}

// --- every collective type
// ------------------------------------------------------------------------

constexpr int kRanks = 8;
constexpr Bytes kSize = 8 << 20;

double time_of(int64_t type, Bytes size = kSize, const std::string& split = "") {
  return replay(import(one_collective(kRanks, type, size, split))).iteration_time_s;
}

TEST(PyTorchChakra, RingCollectivesReplayAsTheCollectiveCommandTimesThem) {
  const std::pair<int64_t, coll::Op> cases[] = {
      {ChakraProtoMsg::ALL_REDUCE, coll::Op::kAllReduce},
      {ChakraProtoMsg::ALL_GATHER, coll::Op::kAllGather},
      {ChakraProtoMsg::REDUCE_SCATTER, coll::Op::kReduceScatter},
      {ChakraProtoMsg::BROADCAST, coll::Op::kBroadcast},
      {ChakraProtoMsg::ALL_TO_ALL, coll::Op::kAllToAll}};
  for (const auto& [type, op] : cases) {
    const double t = time_of(type);
    EXPECT_NEAR(t, nccl_seconds(op, kRanks, kSize), 0.01 * t) << type;
  }
  // REDUCE runs the broadcast's chain, REDUCE_SCATTER_BLOCK is a reduce-scatter, BARRIER a
  // 4-byte all-reduce.
  EXPECT_DOUBLE_EQ(time_of(ChakraProtoMsg::REDUCE), time_of(ChakraProtoMsg::BROADCAST));
  EXPECT_DOUBLE_EQ(time_of(ChakraProtoMsg::REDUCE_SCATTER_BLOCK),
                   time_of(ChakraProtoMsg::REDUCE_SCATTER));
  const double barrier = time_of(ChakraProtoMsg::BARRIER);
  EXPECT_NEAR(barrier, nccl_seconds(coll::Op::kAllReduce, kRanks, 4), 0.01 * barrier);
  EXPECT_LT(barrier, 50e-6);
}

TEST(PyTorchChakra, GatherAndScatterMoveEveryBlockThroughTheRootsLink) {
  for (const int64_t type : {ChakraProtoMsg::GATHER, ChakraProtoMsg::SCATTER}) {
    const auto r = replay(import(one_collective(kRanks, type, kSize)));
    // Seven blocks of S through the root's one NVLink port.
    const double wire = (kRanks - 1.0) * kSize / kNvlink;
    EXPECT_NEAR(r.iteration_time_s, wire, 0.05 * wire) << type;
    EXPECT_NEAR(r.comm_bytes_by_op[3], (kRanks - 1.0) * kSize, 1.0) << type;
    // The analytical model sees the blocks of one collective share the root's port as well;
    // ideal makes communication free.
    auto on = [&](clustersim::NetworkMode mode) {
      const ReplayTarget target{"dgx-h100", "", mode};
      return simulate_workload(import(one_collective(kRanks, type, kSize)).workload, target, "pt",
                               "pt");
    };
    EXPECT_NEAR(on(clustersim::ANALYTICAL).iteration_time_s, wire, 0.05 * wire) << type;
    const auto ideal = on(clustersim::IDEAL);
    EXPECT_EQ(ideal.iteration_time_s, 0) << type;
    EXPECT_NEAR(ideal.comm_bytes_by_op[3], (kRanks - 1.0) * kSize, 1.0) << type;
  }
}

TEST(PyTorchChakra, AllToAllWithSplitSizesSendsEachPeerItsOwnShare) {
  // Every rank sends everything to rank 0 (split sizes as record_param_comms writes them): rank
  // 0's port takes 7 S, against 7/8 S for equal blocks.
  const std::string to_zero = "[1024, 0, 0, 0, 0, 0, 0, 0]";
  const auto i = import(one_collective(kRanks, ChakraProtoMsg::ALL_TO_ALL, kSize, to_zero));
  EXPECT_EQ(i.summary.per_peer_all_to_alls, 8u);
  const auto r = replay(i);
  const double hot = (kRanks - 1.0) * kSize / kNvlink;
  EXPECT_NEAR(r.iteration_time_s, hot, 0.05 * hot);
  EXPECT_NEAR(r.comm_bytes_by_op[3], (kRanks - 1.0) * kSize, 8.0);
  // Equal split sizes are the plain all-to-all's bytes.
  const auto even = replay(import(
      one_collective(kRanks, ChakraProtoMsg::ALL_TO_ALL, kSize, "[1, 1, 1, 1, 1, 1, 1, 1]")));
  EXPECT_NEAR(even.comm_bytes_by_op[3], kRanks * (kRanks - 1.0) / kRanks * kSize, 8.0);
  const double uniform = (kRanks - 1.0) / kRanks * kSize / kNvlink;
  EXPECT_GT(even.iteration_time_s, uniform);
  EXPECT_LT(even.iteration_time_s, hot / 4);
  // A split of the wrong length names the node.
  const std::string e = error_of(one_collective(2, ChakraProtoMsg::ALL_TO_ALL, 64, "[1, 2, 3]"));
  EXPECT_NE(e.find("in_split_size has 3 entries for a group of 2"), std::string::npos) << e;
}

// --- one rank
// -------------------------------------------------------------------------------------

TEST(PyTorchChakra, SingleRankTraceReplays) {
  PtRank r = host_and_kernel();
  const auto record = r.cpu_op("record_param_comms", 0, {1});
  r.nccl(ChakraProtoMsg::ALL_REDUCE, 1 << 20, record, "0");
  r.pg_init(R"([{"pg_name": "0", "pg_desc": "default_pg", "ranks": [], "group_size": 1}])", 1);
  const Imported i = import({r});
  EXPECT_EQ(i.summary.single_rank_collectives, 1u);
  const auto rep = replay(i);
  EXPECT_NEAR(rep.iteration_time_s, 110e-6, 1e-9);
  EXPECT_EQ(rep.comm_bytes_by_op[0], 0);
}

// --- summary and CLI
// ------------------------------------------------------------------------------

TEST(PyTorchChakra, SummarySaysWhatWasReadAndWhatWasDroppedAndWhy) {
  PtRank r = host_and_kernel();
  r.node(4).add_ctrl_deps(r.missing());
  r.cpu_op("record_param_comms", 0, {1});
  const Imported i = import({r});
  std::ostringstream out;
  print_chakra_summary(out, i.summary);
  const std::string s = out.str();
  for (const char* want :
       {"Chakra trace: 1 rank, 5 nodes, schema 1.0.2-chakra.0.0.4", "1 kernels",
        "4 on host threads, 0.060 ms", "1 dropped (1 ctrl, 0 data", "depends on node 5",
        "0 paired with a GPU collective, 1 dropped", "pt.0.et: rank 0: node 6"})
    EXPECT_NE(s.find(want), std::string::npos) << want << "\n" << s;
  EXPECT_LE(std::count(s.begin(), s.end(), '\n'), 25);  // one screen
}

TEST(PyTorchChakra, ReplayCommandReadsFilesPrintsTheSummaryAndTakesTheOptions) {
  const auto ranks = pairs_all_reduce(1 << 20, true);
  const std::string prefix = testing_support::temp_path("pt_cli");
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    PtRank t = ranks[r];
    t.node(2).add_ctrl_deps(t.missing());  // the pg_init node's parent was removed
    write_et(t.rank(), prefix + "." + std::to_string(r) + ".et");
  }
  auto run = testing_support::run_cli({"replay", "--chakra", prefix, "--network", "analytical"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("Chakra trace: 4 ranks"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("3 from process_group:init metadata"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("4 dropped (4 ctrl"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("iteration time"), std::string::npos) << run.out;
  run = testing_support::run_cli({"replay", "--chakra", prefix, "--strict-deps"});
  EXPECT_NE(run.code, 0);
  EXPECT_NE(run.err.find(prefix + ".0.et: rank 0: node 2"), std::string::npos) << run.err;
  run = testing_support::run_cli({"replay", "--chakra", prefix, "--cpu-ops", "sometimes"});
  EXPECT_NE(run.code, 0);
  EXPECT_NE(run.err.find("--cpu-ops must be host or skip"), std::string::npos) << run.err;
  const auto help = testing_support::run_cli({"replay", "--help"});
  for (const char* opt : {"--cpu-ops", "--strict-deps", "--comm-groups"})
    EXPECT_NE(help.out.find(opt), std::string::npos) << opt;
}

// --- bad input
// ------------------------------------------------------------------------------------

TEST(PyTorchChakra, TruncatedFileAndUnknownNodeTypeAreErrorsNamingFileRankAndNode) {
  const std::string prefix = testing_support::temp_path("pt_cut");
  PtRank r = host_and_kernel();
  write_et(r.rank(), prefix + ".0.et");
  std::string bytes;
  {
    std::ifstream in(prefix + ".0.et", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(prefix + ".0.et", std::ios::binary) << bytes.substr(0, bytes.size() - 5);
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  try {
    read_chakra(prefix, cost, {});
    FAIL();
  } catch (const TraceError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(prefix + ".0.et: rank 0: node #4"), std::string::npos) << m;
    EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  }
  PtRank odd;
  odd.cpu_op("x", 1, {}, static_cast<ChakraProtoMsg::NodeType>(12));
  const std::string e = error_of({odd});
  EXPECT_NE(e.find("pt.0.et: rank 0: node 1 (x): unknown node type 12"), std::string::npos) << e;
  const std::string c = error_of(one_collective(2, 77, 64));
  EXPECT_NE(c.find("comm_type 77"), std::string::npos) << c;
}

}  // namespace
}  // namespace cs::trace
