// Workload traces: exact round trips, retargeting, Chakra import against closed forms, bad input.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "sim/coll/nccl_test_case.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/config/config_error.h"
#include "sim/config/run_config.h"
#include "sim/net/topology_builder.h"
#include "sim/run/step_simulation.h"
#include "sim/trace/chakra.h"
#include "sim/trace/replay.h"
#include "sim/trace/trace_format.h"
#include "tests/support/chakra_nodes.h"
#include "tests/support/run_fixtures.h"
#include "tests/support/test_helpers.h"
#include "tests/support/trace_fixtures.h"

namespace cs::trace {
namespace {

using testing_support::read_file;
using testing_support::report_json;
using testing_support::round_trip;
using testing_support::small_llama;

namespace fs = std::filesystem;
using ChakraProtoMsg::Node;

TEST(TraceRoundTrip, ReplayEqualsRunBitForBit) {
  const std::vector<std::vector<std::string>> configs = {
      {"parallel.tp=2", "parallel.pp=2", "parallel.dp=2", "parallel.global_batch_size=8"},
      {"parallel.tp=2", "parallel.pp=2", "parallel.dp=2", "parallel.global_batch_size=8",
       "parallel.schedule=GPIPE"},
      {"parallel.tp=1", "parallel.pp=2", "parallel.dp=2", "parallel.global_batch_size=8",
       "parallel.schedule=INTERLEAVED", "parallel.virtual_stages=2"},
      {"parallel.tp=2", "parallel.pp=4", "parallel.dp=1", "parallel.global_batch_size=8",
       "parallel.schedule=ZB_H1"},
      {"parallel.tp=4", "parallel.pp=1", "parallel.dp=4", "parallel.global_batch_size=8",
       "parallel.zero_stage=3", "parallel.sequence_parallel=false"},
      {"parallel.tp=8", "parallel.pp=2", "parallel.dp=2", "parallel.global_batch_size=4",
       "parallel.zero_stage=0"},
      // Every kernel kind and group around the GEMMs: unfused attention, biases, dropout,
      // LayerNorm, learned positions, FP8 casts (the breakdown by group is in the JSON).
      {"parallel.tp=2", "parallel.pp=2", "parallel.dp=2", "parallel.global_batch_size=8",
       "model.attention=UNFUSED", "model.add_bias=true", "model.hidden_dropout=0.1",
       "model.attention_dropout=0.1", "model.norm=LAYERNORM", "model.position_embedding=LEARNED",
       "precision=FP8"},
      // TP collectives overlapped with their GEMMs, on the TP stream (the last stream number).
      {"parallel.tp=2", "parallel.pp=2", "parallel.dp=2", "parallel.global_batch_size=8",
       "parallel.tp_comm_overlap=true"},
  };
  for (const auto& overrides : configs) {
    const auto config = small_llama(overrides);
    const std::string run = report_json(run::simulate_step(config, "test"));
    auto loaded = round_trip(to_trace(run::prepare_step(config, "test")));
    ASSERT_TRUE(loaded.step.has_value());
    EXPECT_EQ(report_json(run::simulate_prepared(*loaded.step, "test")), run) << overrides.back();
  }
}

TEST(TraceRoundTrip, KernelsSurviveSoRetargetingMatchesARunOnTheOtherGpu) {
  const auto config = small_llama(
      {"parallel.tp=2", "parallel.pp=2", "parallel.dp=2", "parallel.global_batch_size=8"});
  auto loaded = round_trip(to_trace(run::prepare_step(config, "test")));
  loaded.step->config.mutable_cluster()->set_gpu("a100");
  const auto replayed = run::simulate_prepared(*loaded.step, "test");
  auto on_a100 = config;
  on_a100.mutable_cluster()->set_gpu("a100");
  const auto run = run::simulate_step(on_a100, "test");
  EXPECT_EQ(replayed.gpu, run.gpu);
  EXPECT_DOUBLE_EQ(replayed.iteration_time_s, run.iteration_time_s);
  EXPECT_GT(replayed.iteration_time_s, run::simulate_step(config, "test").iteration_time_s);
}

TEST(TraceRoundTrip, RetargetedTopologyMustStillFit) {
  const auto config = small_llama(
      {"parallel.tp=8", "parallel.pp=1", "parallel.dp=2", "parallel.global_batch_size=2"});
  auto loaded = round_trip(to_trace(run::prepare_step(config, "test")));
  loaded.step->config.mutable_cluster()->set_topology("dgx-a100");
  EXPECT_GT(run::simulate_prepared(*loaded.step, "test").iteration_time_s, 0);
  fs::path dir = fs::temp_directory_path() / ("cs_trace_topo_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tiny.textproto") << "name: \"tiny\" gpu: \"h100\" tiered { node { "
                                           "gpus_per_node: 8 nvlink_bandwidth_gbytes: 450 "
                                           "nics_per_gpu: 1 nic_bandwidth_gbits: 400 } }";
  loaded.step->config.mutable_cluster()->set_topology((dir / "tiny.textproto").string());
  EXPECT_THROW(run::simulate_prepared(*loaded.step, "test"), std::exception);
  fs::remove_all(dir);
}

TEST(TraceFormat, LayoutTraceSharesOneProgramPerStage) {
  const auto config = small_llama(
      {"parallel.tp=2", "parallel.pp=2", "parallel.dp=4", "parallel.global_batch_size=8"});
  const auto t = to_trace(run::prepare_step(config, "test"));
  EXPECT_EQ(t.programs_size(), 2);
  EXPECT_EQ(t.rank_program_size(), 16);
  EXPECT_EQ(t.metadata().time_unit(), "ps");
  // TP groups (8 of 2), PP groups (8 of 2), DP groups (4 of 4).
  EXPECT_EQ(t.communicators_size(), 8 + 8 + 4);
}

TEST(TraceFormat, CorruptOrForeignBytesAreErrorsNamingTheFile) {
  const auto config =
      small_llama({"parallel.tp=2", "parallel.dp=1", "parallel.global_batch_size=2"});
  std::string bytes;
  to_trace(run::prepare_step(config, "test")).SerializeToString(&bytes);
  for (const std::size_t cut : {bytes.size() / 2, bytes.size() - 1, std::size_t{3}}) {
    try {
      from_trace(parse_trace(std::string_view(bytes).substr(0, cut), "cut.pb"), "cut.pb");
      ADD_FAILURE() << "truncated at " << cut << " parsed";
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("cut.pb"), std::string::npos);
    }
  }
  EXPECT_THROW(from_trace(parse_trace("\xff\xff\xff garbage", "bad.pb"), "bad.pb"), TraceError);
  EXPECT_THROW(from_trace(parse_trace("", "empty.pb"), "empty.pb"), TraceError);
}

TEST(TraceFormat, CycleThroughDependenciesAndStreamOrderIsNamed) {
  const auto config =
      small_llama({"parallel.tp=2", "parallel.dp=1", "parallel.global_batch_size=2"});
  auto t = to_trace(run::prepare_step(config, "test"));
  // Op 0 now waits for op 2, which runs after it on the compute stream.
  auto* program = t.mutable_programs(0);
  ASSERT_GT(program->ops_size(), 3);
  program->mutable_ops(0)->add_deps(2);
  try {
    round_trip(t);
    FAIL() << "cycle accepted";
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cycle"), std::string::npos) << what;
    EXPECT_NE(what.find("op 0"), std::string::npos) << what;
    EXPECT_NE(what.find("op 2"), std::string::npos) << what;
  }
}

// --- Chakra -------------------------------------------------------------------------------------

std::string chakra_dir() {
  const char* src = std::getenv("CLUSTERSIM_SOURCE_DIR");
  const fs::path dir = fs::path(src ? src : ".") / ".." / "shared" / "chakra-traces" / "astra-sim";
  return fs::exists(dir) ? dir.string() : "";
}

report::StepReport replay_chakra(const std::string& prefix,
                                 const std::string& topology = "dgx-h100") {
  ReplayTarget target;
  target.topology = topology;
  const compute::KernelCostModel cost(compute::load_gpu_profile(target_gpu(target)));
  return simulate_workload(read_chakra(prefix, cost, {}), target, "t", prefix);
}

// What `clustersim collective` measures for the same collective on the first n GPUs of dgx-h100:
// NCCL's plan (protocol, channels, per-hop latency) over the flow model.
double nccl_test_seconds(const std::string& op, int n, double size) {
  const auto desc = net::resolve_topology("dgx-h100");
  const net::Topology topo = net::build_topology(desc, n, "dgx-h100");
  return coll::run_nccl_test(topo, compute::nccl_tuning(topo.gpu_type), coll::parse_op(op),
                             static_cast<Bytes>(size), n)
      .time.as_seconds();
}

TEST(ChakraImport, RingCollectivesOnOneServerMatchTheCollectiveCommand) {
  const std::string dir = chakra_dir();
  if (dir.empty()) GTEST_SKIP() << "shared/chakra-traces not found";
  const double size = 1 << 20;
  for (const int n : {4, 8}) {
    const std::string base = dir + "/microbenchmarks/";
    const std::string sz = std::to_string(n) + "npus_1MB/";
    for (const std::string op : {"all_reduce", "all_gather", "reduce_scatter"}) {
      const double t = replay_chakra(base + op + "/" + sz + op).iteration_time_s;
      EXPECT_NEAR(t, nccl_test_seconds(op, n, size), 0.01 * t) << op << n;
    }
    const auto a2a = replay_chakra(base + "all_to_all/" + sz + "all_to_all");
    EXPECT_GT(a2a.iteration_time_s, 0);
    EXPECT_NEAR(a2a.comm_bytes_by_op[3], n * (n - 1.0) / n * size, 0.01 * size * n);
  }
}

// One NVLink hop on dgx-h100: GPU -> NVSwitch -> GPU at 250 ns each, 450 GB/s; point-to-point
// sends are plain flows, without NCCL's collective protocols, each after its kernel's launch
// (h100 kernel_launch_overhead_us).
constexpr double kAlpha = 0.5e-6, kBandwidth = 450e9, kLaunch = 2e-6;

TEST(ChakraImport, CustomRingAllReduceIsItsChainOfTransfersAndReductions) {
  const std::string dir = chakra_dir();
  if (dir.empty()) GTEST_SKIP() << "shared/chakra-traces not found";
  const auto r = replay_chakra(dir + "/custom_ring_allreduce_8npus_1MB/custom_allreduce");
  const double expected = 14 * (kLaunch + kAlpha + 131072 / kBandwidth) + 7 * 7e-6;
  EXPECT_NEAR(r.iteration_time_s, expected, 0.02 * expected);
  EXPECT_DOUBLE_EQ(r.comm_bytes_by_op[5], 112.0 * 131072);
}

std::string gzip(const std::string& raw) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, raw.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(ChakraImport, GzipFilesReadTheSame) {
  const std::string dir = chakra_dir();
  if (dir.empty()) GTEST_SKIP() << "shared/chakra-traces not found";
  const std::string raw = read_file(dir + "/custom_ring_allreduce_8npus_1MB/custom_allreduce.3.et");
  const auto plain = parse_chakra_rank(raw, "a.et", 3);
  const auto zipped = parse_chakra_rank(gzip(raw), "a.et.gz", 3);
  ASSERT_EQ(plain.nodes.size(), 35u);
  ASSERT_EQ(zipped.nodes.size(), plain.nodes.size());
  for (std::size_t i = 0; i < plain.nodes.size(); ++i)
    EXPECT_EQ(plain.nodes[i].SerializeAsString(), zipped.nodes[i].SerializeAsString());
  EXPECT_THROW(parse_chakra_rank(gzip(raw).substr(0, 40), "cut.gz", 3), TraceError);
}

TEST(ChakraImport, ConvertedToOurFormatReplaysTheSame) {
  const std::string dir = chakra_dir();
  if (dir.empty()) GTEST_SKIP() << "shared/chakra-traces not found";
  const std::string prefix = dir + "/custom_ring_allreduce_8npus_1MB/custom_allreduce";
  ReplayTarget target{"dgx-h100", "", clustersim::CONGESTION_AWARE};
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  const auto w = read_chakra(prefix, cost, {});
  auto loaded = round_trip(to_trace(w, prefix));
  ASSERT_TRUE(loaded.workload.has_value());
  EXPECT_EQ(report_json(simulate_workload(*loaded.workload, target, "t", "x")),
            report_json(simulate_workload(w, target, "t", "x")));
}

// Synthetic ranks.
using testing_support::attr_i64;
using testing_support::attr_u32;
using testing_support::coll;
using testing_support::node;
using testing_support::p2p;

std::string simulate_error(const std::vector<std::vector<Node>>& nodes,
                           const CommGroups& groups = {}) {
  std::vector<ChakraRank> ranks(nodes.size());
  std::vector<std::string> files;
  for (std::size_t r = 0; r < nodes.size(); ++r) {
    ranks[r].nodes = nodes[r];
    files.push_back("x." + std::to_string(r) + ".et");
  }
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  try {
    const auto w = chakra_to_workload(ranks, files, cost, groups);
    simulate_workload(w, ReplayTarget{"dgx-h100", "", clustersim::CONGESTION_AWARE}, "t", "x");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(ChakraImport, RooflineTimesComputeWithoutADuration) {
  Node comp = node(0, ChakraProtoMsg::COMP_NODE);
  attr_i64(comp, "num_ops", 989'400'000'000);  // a millisecond at H100's BF16 peak
  attr_u32(comp, "tensor_size", 1024);
  ChakraRank rank;
  rank.nodes = {comp};
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  const auto w = chakra_to_workload({rank}, {"c.0.et"}, cost, {});
  const Time t = w.programs[0].ops[0].duration;
  EXPECT_NEAR(t.as_seconds(), 1e-3, 1e-5);  // plus a few microseconds of launch
}

TEST(ChakraImport, BadNodesAreErrorsNamingFileRankAndNode) {
  auto bad_type = node(7, static_cast<ChakraProtoMsg::NodeType>(42));
  std::string e = simulate_error({{bad_type}});
  EXPECT_NE(e.find("x.0.et"), std::string::npos) << e;
  EXPECT_NE(e.find("node 7"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown node type 42"), std::string::npos) << e;
  e = simulate_error({{coll(3, 42, 64)}});
  EXPECT_NE(e.find("node 3"), std::string::npos) << e;
  EXPECT_NE(e.find("comm_type 42"), std::string::npos) << e;
  e = simulate_error({{p2p(0, true, 5, 64)}, {}});
  EXPECT_NE(e.find("comm_dst = 5"), std::string::npos) << e;
  // A dependency on an absent node is dropped by default (pytorch_chakra_test.cc), an error with
  // strict_deps.
  EXPECT_EQ(simulate_error({{node(0, ChakraProtoMsg::COMP_NODE, {9})}}), "");
  ChakraImportOptions strict;
  strict.strict_deps = true;
  ChakraRank rank;
  rank.nodes = {node(0, ChakraProtoMsg::COMP_NODE, {9})};
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  try {
    chakra_to_workload({rank}, {"x.0.et"}, cost, {}, strict, nullptr);
    ADD_FAILURE();
  } catch (const TraceError& err) {
    EXPECT_NE(std::string(err.what()).find("node 9"), std::string::npos) << err.what();
  }
}

TEST(ChakraImport, CycleIsFoundBeforeSimulatingAndNamesItsNodes) {
  const std::string e = simulate_error(
      {{node(1, ChakraProtoMsg::COMP_NODE, {3}), node(2, ChakraProtoMsg::COMP_NODE, {1}),
        node(3, ChakraProtoMsg::COMP_NODE, {2})}});
  EXPECT_NE(e.find("cycle"), std::string::npos) << e;
  for (const char* n : {"node 1", "node 2", "node 3"}) EXPECT_NE(e.find(n), std::string::npos) << e;
}

TEST(ChakraImport, SendWithoutReceiveIsReportedStuck) {
  const std::string e =
      simulate_error({{p2p(0, true, 1, 4096)}, {node(0, ChakraProtoMsg::COMP_NODE)}});
  EXPECT_NE(e.find("rank 0"), std::string::npos) << e;
  EXPECT_NE(e.find("no matching receive"), std::string::npos) << e;
  const std::string r = simulate_error({{p2p(0, false, 1, 4096)}, {}});
  EXPECT_NE(r.find("recv of 4096 bytes from rank 1"), std::string::npos) << r;
}

TEST(ChakraImport, CollectiveNotAllMembersReachIsReportedStuck) {
  const std::string e = simulate_error({{coll(0, ChakraProtoMsg::ALL_REDUCE, 1 << 20)},
                                        {coll(0, ChakraProtoMsg::ALL_REDUCE, 1 << 20)},
                                        {}});
  EXPECT_NE(e.find("stuck"), std::string::npos) << e;
  EXPECT_NE(e.find("rank 0"), std::string::npos) << e;
  EXPECT_NE(e.find("waiting for its peers"), std::string::npos) << e;
}

TEST(ChakraImport, MembersDisagreeingOnSizeAreDetectedAtRendezvous) {
  const std::string e = simulate_error({{coll(0, ChakraProtoMsg::ALL_REDUCE, 1 << 20)},
                                        {coll(0, ChakraProtoMsg::ALL_REDUCE, 1 << 21)}});
  EXPECT_NE(e.find("rank 1"), std::string::npos) << e;
  EXPECT_NE(e.find("2097152"), std::string::npos) << e;
  EXPECT_NE(e.find("1048576"), std::string::npos) << e;
  const std::string p = simulate_error({{p2p(0, true, 1, 100)}, {p2p(0, false, 0, 200)}});
  EXPECT_NE(p.find("met a receive of 200"), std::string::npos) << p;
}

TEST(ChakraImport, GroupsFileLimitsCollectivesToTheirMembers) {
  auto a = coll(0, ChakraProtoMsg::ALL_REDUCE, 1 << 20);
  auto* pg = a.add_attr();
  pg->set_name("pg_name");
  pg->set_string_val("pair");
  const CommGroups groups = parse_comm_groups(R"({"pair": [0, 1], "all": [0,1,2,3]})", "g.json");
  ASSERT_EQ(groups.at("pair").size(), 2u);
  // Ranks 2 and 3 have nothing to do; the pair's all-reduce completes on its own.
  EXPECT_EQ(simulate_error({{a}, {a}, {}, {}}, groups), "");
  EXPECT_THROW(parse_comm_groups("{\"a\": [0,", "g.json"), TraceError);
}

TEST(ChakraImport, FifoMatchingOfSameTagMessages) {
  // Two messages with one tag: the first receive takes the first send, sizes agree in order.
  const std::string e = simulate_error({{p2p(0, true, 1, 100), p2p(1, true, 1, 200, {0})},
                                        {p2p(0, false, 0, 100), p2p(1, false, 0, 200)}});
  EXPECT_EQ(e, "");
}

TEST(ChakraStream, TruncatedCorruptAndWrongTypeAreErrors) {
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version("0.0.4");
  std::string good;
  auto append = [&](const google::protobuf::Message& m) {
    const std::string body = m.SerializeAsString();
    good.push_back(static_cast<char>(body.size()));  // all below 128 bytes here
    good += body;
  };
  append(meta);
  append(coll(0, 0, 1024));
  EXPECT_EQ(parse_chakra_rank(good, "f.0.et", 0).nodes.size(), 1u);
  try {
    parse_chakra_rank(good.substr(0, good.size() - 3), "f.0.et", 0);
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("f.0.et: rank 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  // A Node where the GlobalMetadata belongs.
  std::string wrong;
  const std::string body = coll(0, 0, 1024).SerializeAsString();
  wrong.push_back(static_cast<char>(body.size()));
  wrong += body;
  EXPECT_THROW(parse_chakra_rank(wrong, "w.0.et", 0), TraceError);
  EXPECT_THROW(parse_chakra_rank("", "e.0.et", 0), TraceError);
  EXPECT_THROW(parse_chakra_rank("\x05\xff\xff\xff\xff\xff", "c.0.et", 0), TraceError);
}

TEST(ChakraExport, LayoutTraceWrittenAsChakraReadsBackToTheSameExplicitRun) {
  const auto config = small_llama(
      {"parallel.tp=2", "parallel.pp=2", "parallel.dp=2", "parallel.global_batch_size=4"});
  const auto step = run::prepare_step(config, "test");
  const auto expanded = expand_layout(step);
  const fs::path dir = fs::temp_directory_path() / ("cs_chakra_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string prefix = (dir / "step").string();
  write_chakra(expanded, prefix);
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  const auto back =
      read_chakra(prefix, cost, parse_comm_groups(read_file(prefix + ".comm_groups.json"), "g"));
  fs::remove_all(dir);
  ReplayTarget target{"dgx-h100", "", clustersim::CONGESTION_AWARE};
  // A Chakra node keeps a kernel's time, not its kind, HBM bytes or CTAs, which interference
  // depends on: the two replay alike only with that effect off.
  target.effects.set_comm_compute_interference(false);
  const auto a = simulate_workload(expanded, target, "t", "x");
  const auto b = simulate_workload(back, target, "t", "x");
  EXPECT_DOUBLE_EQ(a.iteration_time_s, b.iteration_time_s);
  // Close to the layout run (explicit sends are eager, layout ones rendezvous).
  const auto run = run::simulate_step(config, "test");
  EXPECT_NEAR(a.iteration_time_s, run.iteration_time_s, 0.05 * run.iteration_time_s);
}

}  // namespace
}  // namespace cs::trace
