// All-to-all-v and expert times by EP rank in our traces and in Chakra exports: exact round trips
// against direct runs, and malformed tables rejected naming the file, program, op and field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "sim/config/run_config.h"
#include "sim/run/step_simulation.h"
#include "sim/trace/chakra.h"
#include "sim/trace/comm_groups.h"
#include "sim/trace/replay.h"
#include "sim/trace/trace_format.h"
#include "sim/workload/layout.h"
#include "sim/workload/layout_config.h"
#include "tests/support/chakra_nodes.h"
#include "tests/support/moe_fixtures.h"
#include "tests/support/run_fixtures.h"
#include "tests/support/test_helpers.h"
#include "tests/support/trace_fixtures.h"

namespace cs::trace {
namespace {

using testing_support::read_file;
using testing_support::report_json;
using testing_support::round_trip;

namespace pb = clustersim::trace;
using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::Node;

clustersim::RunConfig mixtral(std::vector<std::string> more = {}) {
  return testing_support::small_mixtral(std::move(more));
}

// DeepSeek-V3's layers (MLA, 256 experts top-8, node-limited routing, FP8 dispatch) cut to 4
// layers on 16 GPUs; with PP innermost after TP an EP group of 8 spans two servers, so tokens
// cross the network once per server through relays.
clustersim::RunConfig deepseek(std::vector<std::string> more = {}) {
  std::vector<std::string> o = {"model.num_layers=4",
                                "model.moe.first_k_dense=1",
                                "model.mtp_layers=0",
                                "model.seq_length=1024",
                                "parallel.pp=2",
                                "parallel.virtual_stages=1",
                                "parallel.schedule=ONE_F_ONE_B",
                                "parallel.layers_per_stage=2,2",
                                "parallel.rank_order=TP_CP_PP_DP",
                                "parallel.tp=1",
                                "parallel.dp=8",
                                "parallel.ep=8",
                                "parallel.global_batch_size=16",
                                "cluster.num_gpus=16"};
  o.insert(o.end(), more.begin(), more.end());
  return load_run_config("", "deepseek-v3", o).config;
}

std::string load_error(const pb::Trace& t) {
  try {
    round_trip(t);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

// `"key": value` as a JSON report file prints it (the first such key).
std::string json_field(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const auto at = s.find("\"" + key + "\"");
  EXPECT_NE(at, std::string::npos) << key << " in " << path;
  return at == std::string::npos ? "" : s.substr(at, s.find_first_of(",}", at) - at);
}

// The first op of `program` whose varies is set, on a compute op when `compute`.
int first_varying(const pb::Program& program, bool compute) {
  for (int i = 0; i < program.ops_size(); ++i)
    if (program.ops(i).has_varies() && (program.ops(i).kind() == pb::COMPUTE) == compute) return i;
  return -1;
}

TEST(MoeTrace, GenerateThenReplayEqualsRunBitForBit) {
  const std::vector<clustersim::RunConfig> configs = {
      mixtral(), mixtral({"model.moe.routing.kind=SKEWED", "model.moe.routing.skew=1"}),
      mixtral({"model.moe.routing.kind=SKEWED", "model.moe.routing.skew=1",
               "model.moe.capacity_factor=1.25"}),
      // DualPipe's overlapped pairs put their all-to-alls on the expert stream.
      mixtral({"parallel.schedule=DUALPIPE", "parallel.virtual_stages=2"}), deepseek()};
  for (const auto& config : configs) {
    const auto step = run::prepare_step(config, "test");
    if (config.parallel().schedule() == clustersim::ParallelConfig::DUALPIPE) {
      std::size_t on_expert_stream = 0;
      for (const auto& p : step.programs)
        on_expert_stream += p.streams[static_cast<int>(workload::Stream::kEp)].size();
      EXPECT_GT(on_expert_stream, 0u);
    }
    const auto t = to_trace(step);
    EXPECT_EQ(t.metadata().format_version(), 3u);
    int varying = 0;
    for (const auto& p : t.programs()) varying += p.rank_times_size() + p.all_to_alls_size();
    EXPECT_GT(varying, 0);
    auto loaded = round_trip(t);
    ASSERT_TRUE(loaded.step.has_value());
    for (std::size_t s = 0; s < step.programs.size(); ++s) {
      EXPECT_EQ(loaded.step->programs[s].rank_times, step.programs[s].rank_times);
      EXPECT_EQ(loaded.step->programs[s].all_to_alls, step.programs[s].all_to_alls);
    }
    for (std::size_t s = 0; s < step.programs.size(); ++s)
      EXPECT_EQ(loaded.step->programs[s].streams, step.programs[s].streams);
    const auto replayed = run::simulate_prepared(*loaded.step, "test");
    EXPECT_EQ(report_json(replayed), report_json(run::simulate_step(config, "test")));
    EXPECT_GT(replayed.moe.all_to_all_s, 0);
  }
}

TEST(MoeTrace, NodeLimitedRoutingIsCarried) {
  const auto t = to_trace(run::prepare_step(deepseek(), "test"));
  ASSERT_GT(t.programs(0).all_to_alls_size(), 0);
  const auto& v = t.programs(0).all_to_alls(0);
  EXPECT_EQ(v.share_size(), 8);
  EXPECT_EQ(v.top_k(), 8);
  EXPECT_EQ(v.max_nodes(), 4);
  EXPECT_NEAR(v.copies_per_token(), 8.0, 1e-9);
  EXPECT_TRUE(v.deduplicated());  // DeepEP's kernels (the preset's dispatcher)
  EXPECT_EQ(v.tokens(), 1024);    // one 1,024-token sequence a microbatch, for DeepEP's token cost
  EXPECT_EQ(round_trip(t).step->programs[0].all_to_alls[0].tokens, 1024);
  // Megatron's all-to-all dispatcher sends the permuted copies through NCCL, one by one.
  const auto nccl =
      to_trace(run::prepare_step(deepseek({"model.moe.dispatcher=ALL_TO_ALL"}), "test"));
  EXPECT_FALSE(nccl.programs(0).all_to_alls(0).deduplicated());
}

TEST(MoeTrace, DenseTracesStayVersionOneAndUnknownVersionsAreRefused) {
  auto dense = to_trace(
      run::prepare_step(load_run_config("", "llama3-8b",
                                        {"model.num_layers=2", "parallel.tp=2", "parallel.pp=1",
                                         "parallel.dp=2", "parallel.global_batch_size=4"})
                            .config,
                        "test"));
  EXPECT_EQ(dense.metadata().format_version(), 1u);
  EXPECT_TRUE(round_trip(dense).step.has_value());
  dense.mutable_metadata()->set_format_version(4);
  EXPECT_NE(load_error(dense).find("format version 4, this build reads 1 to 3"), std::string::npos)
      << load_error(dense);
}

// A version-2 trace wrote no deduplicated flag: its node-limited all-to-alls were DeepEP-like
// then, and are read back so; those without a limit stay NCCL's.
TEST(MoeTrace, VersionTwoNodeLimitedAllToAllsReadAsDeepEp) {
  auto t = to_trace(run::prepare_step(deepseek(), "test"));
  for (auto& p : *t.mutable_programs())
    for (auto& a : *p.mutable_all_to_alls()) a.clear_deduplicated();
  t.mutable_metadata()->set_format_version(2);
  auto& free = *t.mutable_programs(0)->mutable_all_to_alls(1);
  free.clear_max_nodes();
  const auto loaded = round_trip(t);
  ASSERT_TRUE(loaded.step.has_value());
  const auto& v = loaded.step->programs[0].all_to_alls;
  EXPECT_TRUE(v[0].deduplicated);
  EXPECT_FALSE(v[1].deduplicated);
}

TEST(MoeTrace, CliGenerateThenReplayPrintsTheRunsStepTime) {
  const std::string pb = testing_support::temp_path("moe_cli.pb");
  const std::string run_json = testing_support::temp_path("moe_run.json");
  const std::string replay_json = testing_support::temp_path("moe_replay.json");
  const std::vector<std::string> sets = {"--set", "model.num_layers=4",
                                         "--set", "model.seq_length=1024",
                                         "--set", "parallel.pp=2",
                                         "--set", "parallel.virtual_stages=1",
                                         "--set", "parallel.schedule=ONE_F_ONE_B",
                                         "--set", "parallel.dp=8",
                                         "--set", "parallel.ep=4",
                                         "--set", "parallel.global_batch_size=32",
                                         "--set", "cluster.num_gpus=16"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), sets.begin(), sets.end());
    return args;
  };
  const auto gen =
      testing_support::run_cli(with({"generate", "--preset", "mixtral-8x7b", "-o", pb}));
  ASSERT_EQ(gen.code, 0) << gen.err;
  const auto run =
      testing_support::run_cli(with({"run", "--preset", "mixtral-8x7b", "--json", run_json}));
  ASSERT_EQ(run.code, 0) << run.err;
  const auto replay = testing_support::run_cli({"replay", pb, "--json", replay_json});
  ASSERT_EQ(replay.code, 0) << replay.err;
  EXPECT_EQ(json_field(replay_json, "iteration_time_s"), json_field(run_json, "iteration_time_s"));
  // Expert times by EP rank were timed for the trace's GPU: another one is refused, not mixed.
  const auto other_gpu = testing_support::run_cli({"replay", pb, "--gpu", "a100"});
  EXPECT_NE(other_gpu.code, 0);
  EXPECT_NE(other_gpu.err.find("cannot be re-timed for 'a100'"), std::string::npos)
      << other_gpu.err;
}

// --- bad input ----------------------------------------------------------------------------------

pb::Trace mixtral_trace() {
  return to_trace(run::prepare_step(mixtral(), "test"));
}

TEST(MoeTraceErrors, ShareListOfTheWrongLengthNamesTheOpAndTheGroup) {
  auto t = mixtral_trace();
  // One more member with a zero share: still sums to 1, but the EP group has 4.
  t.mutable_programs(0)->mutable_all_to_alls(0)->add_share(0.0);
  const std::string e = load_error(t);
  EXPECT_NE(e.find("mem.pb: program 0"), std::string::npos) << e;
  EXPECT_NE(e.find("all_to_alls[0].share has 5 entries for a group of 4"), std::string::npos) << e;
  EXPECT_NE(e.find("op "), std::string::npos) << e;
}

TEST(MoeTraceErrors, VariesIndexOutOfRangeIsNamed) {
  auto t = mixtral_trace();
  auto* p = t.mutable_programs(1);
  const int coll = first_varying(*p, false);
  ASSERT_GE(coll, 0);
  p->mutable_ops(coll)->set_varies(999);
  std::string e = load_error(t);
  EXPECT_NE(e.find("mem.pb: program 1: op " + std::to_string(coll)), std::string::npos) << e;
  EXPECT_NE(e.find("varies 999 is out of range"), std::string::npos) << e;
  EXPECT_NE(e.find("all_to_alls entries"), std::string::npos) << e;
  t = mixtral_trace();
  p = t.mutable_programs(0);
  const int comp = first_varying(*p, true);
  ASSERT_GE(comp, 0);
  p->mutable_ops(comp)->set_varies(static_cast<uint32_t>(p->rank_times_size()));
  e = load_error(t);
  EXPECT_NE(e.find("op " + std::to_string(comp)), std::string::npos) << e;
  EXPECT_NE(e.find("rank_times rows"), std::string::npos) << e;
}

TEST(MoeTraceErrors, VariesOnASendOrOnAnotherCollectiveIsRefused) {
  auto t = mixtral_trace();
  auto* p = t.mutable_programs(0);
  for (auto& op : *p->mutable_ops())
    if (op.kind() == pb::SEND) {
      op.set_varies(0);
      break;
    }
  EXPECT_NE(load_error(t).find("on a send or receive"), std::string::npos) << load_error(t);
  t = mixtral_trace();
  p = t.mutable_programs(0);
  const int coll = first_varying(*p, false);
  p->mutable_ops(coll)->set_collective(pb::ALL_REDUCE);
  EXPECT_NE(load_error(t).find("only an ALL_TO_ALL runs as all-to-all-v"), std::string::npos)
      << load_error(t);
}

TEST(MoeTraceErrors, MalformedEntriesNameTheirField) {
  auto expect = [](const std::function<void(pb::Program&)>& spoil, const std::string& what) {
    auto t = mixtral_trace();
    spoil(*t.mutable_programs(0));
    const std::string e = load_error(t);
    EXPECT_NE(e.find("mem.pb: program 0: "), std::string::npos) << e;
    EXPECT_NE(e.find(what), std::string::npos) << e;
  };
  expect([](pb::Program& p) { p.mutable_all_to_alls(0)->set_share(0, 0.0); },
         "all_to_alls[0].share sums to");
  expect([](pb::Program& p) { p.mutable_all_to_alls(1)->set_share(1, -0.5); },
         "all_to_alls[1].share[1] is -0.5");
  expect([](pb::Program& p) { p.mutable_all_to_alls(0)->clear_share(); },
         "all_to_alls[0].share is empty");
  expect([](pb::Program& p) { p.mutable_all_to_alls(0)->set_top_k(0); },
         "all_to_alls[0].top_k is 0");
  expect([](pb::Program& p) { p.mutable_all_to_alls(0)->set_copies_per_token(0); },
         "all_to_alls[0].copies_per_token");
  expect([](pb::Program& p) { p.mutable_all_to_alls(0)->set_max_nodes(-1); },
         "all_to_alls[0].max_nodes is -1");
  expect([](pb::Program& p) { p.mutable_rank_times(0)->add_duration_ps(5); },
         "rank_times[0] has 5 durations, not 4 (one per EP rank)");
  expect([](pb::Program& p) { p.mutable_rank_times(2)->set_duration_ps(0, -1); },
         "rank_times[2].duration_ps holds -1");
  expect([](pb::Program& p) { p.mutable_rank_times(0)->clear_duration_ps(); },
         "rank_times[0] is empty");
}

// --- explicit workloads: Chakra all-to-all-v through our format ---------------------------------

using testing_support::attr_i64;
using testing_support::coll;
using testing_support::comp;
using testing_support::node;

// Four ranks: uneven compute, an ALL_TO_ALL whose in_split_size differs by rank (what MoE
// dispatch records), a GATHER to rank 2 and a SCATTER from rank 1.
std::vector<ChakraRank> uneven_ranks() {
  std::vector<ChakraRank> ranks(4);
  for (int r = 0; r < 4; ++r) {
    Node a2a = coll(1, ChakraProtoMsg::ALL_TO_ALL, (4 + r) << 20, {0});
    auto* split = a2a.add_attr();
    split->set_name("in_split_size");
    for (int d = 0; d < 4; ++d) split->mutable_int64_list()->add_values(1 + ((r + 3 * d) % 5));
    Node gather = coll(3, ChakraProtoMsg::GATHER, 1 << 20, {2});
    attr_i64(gather, "root_rank", 2);
    Node scatter = coll(4, ChakraProtoMsg::SCATTER, 3 << 20, {3});
    attr_i64(scatter, "root_rank", 1);
    ranks[static_cast<std::size_t>(r)].nodes = {comp(0, 1'000'000 * (r + 1)), a2a,
                                                comp(2, 500'000 * (4 - r), {1}), gather, scatter};
  }
  return ranks;
}

exec::ExplicitWorkload uneven_all_to_alls() {
  std::vector<std::string> files;
  for (int r = 0; r < 4; ++r) files.push_back("u." + std::to_string(r) + ".et");
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  return chakra_to_workload(uneven_ranks(), files, cost, {});
}

// Writes `ranks` as PREFIX.<r>.et: varint-length-prefixed GlobalMetadata, then the nodes.
void write_ranks(const std::vector<ChakraRank>& ranks, const std::string& prefix) {
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::string bytes;
    auto append = [&](const google::protobuf::Message& m) {
      const std::string body = m.SerializeAsString();
      for (uint64_t n = body.size();; n >>= 7) {  // varint
        bytes.push_back(static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0)));
        if (n < 0x80) break;
      }
      bytes += body;
    };
    ChakraProtoMsg::GlobalMetadata meta;
    meta.set_version("0.0.4");
    append(meta);
    for (const auto& n : ranks[r].nodes) append(n);
    std::ofstream(prefix + "." + std::to_string(r) + ".et", std::ios::binary) << bytes;
  }
}

const ReplayTarget kTarget{"dgx-h100", "", clustersim::CONGESTION_AWARE};

// A Chakra node keeps a kernel's time, not its kind, HBM bytes or CTAs, which the interference of
// communication with compute depends on (exec/interference.h): a layout program and its Chakra
// export replay alike only with that effect off.
ReplayTarget without_interference() {
  ReplayTarget target = kTarget;
  target.effects.set_comm_compute_interference(false);
  return target;
}

TEST(MoeTrace, ChakraAllToAllVConvertedToOurFormatReplaysTheSame) {
  const auto w = uneven_all_to_alls();
  ASSERT_EQ(w.programs[0].all_to_alls.size(), 3u);
  const auto t = to_trace(w, "u");
  EXPECT_EQ(t.metadata().format_version(), 3u);
  auto loaded = round_trip(t);
  ASSERT_TRUE(loaded.workload.has_value());
  for (std::size_t p = 0; p < w.programs.size(); ++p)
    EXPECT_EQ(loaded.workload->programs[p].all_to_alls, w.programs[p].all_to_alls);
  const auto direct = simulate_workload(w, kTarget, "t", "x");
  EXPECT_EQ(report_json(simulate_workload(*loaded.workload, kTarget, "t", "x")),
            report_json(direct));
  // Uneven shares are not equal blocks: with equal ones the step takes another time.
  auto flat = w;
  for (auto& p : flat.programs)
    for (auto& v : p.all_to_alls)
      if (!v.reverse) v.share.assign(v.share.size(), 1.0 / static_cast<double>(v.share.size()));
  EXPECT_NE(simulate_workload(flat, kTarget, "t", "x").iteration_time_s, direct.iteration_time_s);
}

TEST(MoeTrace, CliConvertOfPerPeerAllToAllReplaysLikeTheChakraFiles) {
  const std::string prefix = testing_support::temp_path("pytorch_a2a");
  write_ranks(uneven_ranks(), prefix);
  const std::string pb = testing_support::temp_path("pytorch_a2a.pb");
  const auto conv = testing_support::run_cli({"convert", "--chakra", prefix, "-o", pb});
  ASSERT_EQ(conv.code, 0) << conv.err;
  const std::string direct_json = testing_support::temp_path("a2a_direct.json");
  const std::string ours_json = testing_support::temp_path("a2a_ours.json");
  const auto direct =
      testing_support::run_cli({"replay", "--chakra", prefix, "--json", direct_json});
  ASSERT_EQ(direct.code, 0) << direct.err;
  const auto ours = testing_support::run_cli({"replay", pb, "--json", ours_json});
  ASSERT_EQ(ours.code, 0) << ours.err;
  EXPECT_EQ(json_field(ours_json, "iteration_time_s"), json_field(direct_json, "iteration_time_s"));
  EXPECT_EQ(json_field(ours_json, "all_to_all"), json_field(direct_json, "all_to_all"));
}

TEST(MoeTraceErrors, ExplicitShareListMustMatchItsCommunicator) {
  auto t = to_trace(uneven_all_to_alls(), "u");
  t.mutable_programs(0)->mutable_all_to_alls(0)->add_share(0.0);
  const std::string e = load_error(t);
  EXPECT_NE(e.find("mem.pb: program 0: op "), std::string::npos) << e;
  EXPECT_NE(e.find("share has 5 entries for a group of 4"), std::string::npos) << e;
  t = to_trace(uneven_all_to_alls(), "u");
  t.mutable_programs(0)->add_rank_times()->add_duration_ps(5);
  t.mutable_programs(0)->mutable_rank_times(0)->add_duration_ps(5);
  EXPECT_NE(load_error(t).find("rank_times[0] has 2 durations, not 1"), std::string::npos)
      << load_error(t);
}

// --- Chakra export ------------------------------------------------------------------------------

exec::ExplicitWorkload export_and_import(const exec::ExplicitWorkload& w, const std::string& name,
                                         ChakraFiles* files = nullptr) {
  const std::string prefix = testing_support::temp_path(name);
  write_chakra(w, prefix);
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  const auto groups = parse_comm_groups(read_file(prefix + ".comm_groups.json"), "g");
  if (files) *files = read_chakra_files(prefix);
  return read_chakra(prefix, cost, groups);
}

const AttributeProto* attr(const Node& n, const std::string& name) {
  for (const auto& a : n.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

TEST(MoeChakraExport, LayoutStepRoundTripsToTheSameExplicitRun) {
  for (const auto& config :
       {mixtral({"model.moe.routing.kind=SKEWED", "model.moe.routing.skew=1"}), deepseek()}) {
    const auto step = run::prepare_step(config, "test");
    const auto expanded = expand_layout(step);
    // Per rank: expert ops take that rank's time, and only all-to-all-v entries stay.
    for (const auto& p : expanded.programs) {
      EXPECT_TRUE(p.rank_times.empty());
      EXPECT_FALSE(p.all_to_alls.empty());
    }
    ChakraFiles files;
    const auto back = export_and_import(expanded, "moe_export", &files);
    const auto a = simulate_workload(expanded, without_interference(), "t", "x");
    const auto b = simulate_workload(back, without_interference(), "t", "x");
    // Chakra has no parallel dimensions (imports count every collective as DP): the step time and
    // the bytes by collective must agree exactly.
    EXPECT_EQ(b.iteration_time_s, a.iteration_time_s);
    EXPECT_EQ(b.comm_bytes_by_op, a.comm_bytes_by_op);
    EXPECT_GT(a.comm_bytes_by_op[static_cast<int>(coll::Op::kAllToAll)], 0);
    // Skewed or uneven routing gives EP ranks different expert times, so their step differs from
    // the mean's; the layout run and its expansion stay close (explicit sends are eager).
    const auto run = run::simulate_step(config, "test");
    EXPECT_NEAR(a.iteration_time_s, run.iteration_time_s, 0.1 * run.iteration_time_s);
    // PyTorch's split sizes: what rank r sends to d is what d receives from r.
    const auto& groups = expanded.groups;
    int checked = 0;
    for (std::size_t r = 0; r < files.ranks.size() && checked < 50; ++r)
      for (const auto& n : files.ranks[r].nodes) {
        const auto* in = attr(n, "in_split_size");
        if (!in) continue;
        const auto& members = groups[std::stoul(attr(n, "pg_name")->string_val())];
        const auto* out = attr(n, "out_split_size");
        ASSERT_NE(out, nullptr);
        ASSERT_EQ(in->int64_list().values_size(), static_cast<int>(members.size()));
        int64_t sum = 0;
        for (const auto b : in->int64_list().values()) sum += b;
        EXPECT_NEAR(static_cast<double>(sum),
                    static_cast<double>(attr(n, "comm_size")->int64_val()),
                    static_cast<double>(members.size()));
        // The same op in a peer's file (EP peers run one stage's program) lists the transpose.
        const auto self = static_cast<std::size_t>(
            std::find(members.begin(), members.end(), static_cast<int32_t>(r)) - members.begin());
        const std::size_t peer = (self + 1) % members.size();
        const auto& theirs = files.ranks[static_cast<std::size_t>(members[peer])].nodes[n.id()];
        EXPECT_EQ(attr(theirs, "out_split_size")->int64_list().values(static_cast<int>(self)),
                  in->int64_list().values(static_cast<int>(peer)));
        ++checked;
      }
    EXPECT_GT(checked, 0);
  }
}

TEST(MoeChakraExport, ExpertOpsTakeTheirEpRanksDuration) {
  const auto config = mixtral({"model.moe.routing.kind=SKEWED", "model.moe.routing.skew=1"});
  const auto step = run::prepare_step(config, "test");
  const auto expanded = expand_layout(step);
  const workload::Layout layout = workload::layout_of(config.parallel());
  int differing = 0;
  for (int32_t r = 0; r < layout.world(); ++r) {
    const auto& stage =
        step.programs[static_cast<std::size_t>(layout.coord(r, workload::Dim::kPp))];
    const auto& mine = expanded.programs[expanded.program_of_rank[static_cast<std::size_t>(r)]];
    const auto ep = static_cast<std::size_t>(layout.coord(r, workload::Dim::kEp));
    for (std::size_t i = 0; i < stage.ops.size(); ++i) {
      const auto& o = stage.ops[i];
      if (o.kind != workload::OpKind::kCompute || o.varies == UINT32_MAX) continue;
      EXPECT_EQ(mine.ops[i].duration, stage.rank_times[o.varies][ep]);
      differing += mine.ops[i].duration != o.duration;
    }
  }
  EXPECT_GT(differing, 0);  // skewed routing: EP ranks' experts differ from the mean
}

TEST(MoeChakraExport, SplitSizesAloneReplayCloseToTheExactEntries) {
  // A reader without our all_to_all_v_* attributes (PyTorch's converter, ASTRA-sim) has the
  // in_split_size bytes and comm_size: the same transfers to within whole-byte rounding (a few
  // picoseconds on this step).
  const auto expanded = expand_layout(run::prepare_step(
      mixtral({"model.moe.routing.kind=SKEWED", "model.moe.routing.skew=1"}), "test"));
  const std::string prefix = testing_support::temp_path("moe_pytorch_view");
  write_chakra(expanded, prefix);
  ChakraFiles files = read_chakra_files(prefix);
  for (auto& rank : files.ranks)
    for (auto& n : rank.nodes) {
      auto* attrs = n.mutable_attr();
      for (int i = attrs->size() - 1; i >= 0; --i)
        if (attrs->Get(i).name().starts_with("all_to_all_v_")) attrs->DeleteSubrange(i, 1);
    }
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  const auto groups = parse_comm_groups(read_file(prefix + ".comm_groups.json"), "g");
  const auto plain = chakra_to_workload(files.ranks, files.files, cost, groups);
  const ReplayTarget target = without_interference();
  const double exact = simulate_workload(expanded, target, "t", "x").iteration_time_s;
  EXPECT_NEAR(simulate_workload(plain, target, "t", "x").iteration_time_s, exact, 1e-6 * exact);
}

TEST(MoeChakraExport, ImportedAllToAllVExportsAndReadsBackExactly) {
  const auto w = uneven_all_to_alls();
  const auto back = export_and_import(w, "uneven_export");
  for (std::size_t p = 0; p < w.programs.size(); ++p)
    EXPECT_EQ(back.programs[p].all_to_alls, w.programs[p].all_to_alls);
  EXPECT_EQ(report_json(simulate_workload(back, kTarget, "t", "x")),
            report_json(simulate_workload(w, kTarget, "t", "x")));
}

// Exports the uneven all-to-alls, applies `spoil` to every attribute `name` of rank 1, and
// returns the import's error ("" if it was accepted).
std::string import_error_with_spoiled(const std::string& file, const std::string& name,
                                      const std::function<void(AttributeProto&)>& spoil) {
  const std::string prefix = testing_support::temp_path(file);
  write_chakra(uneven_all_to_alls(), prefix);
  ChakraFiles files = read_chakra_files(prefix);
  for (auto& n : files.ranks[1].nodes)
    for (auto& a : *n.mutable_attr())
      if (a.name() == name) spoil(a);
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  const auto groups = parse_comm_groups(read_file(prefix + ".comm_groups.json"), "g");
  try {
    chakra_to_workload(files.ranks, files.files, cost, groups);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

TEST(MoeChakraExport, MalformedExactAttributesNameTheNode) {
  const std::string s = import_error_with_spoiled(
      "bad_exact", "all_to_all_v_share",
      [](AttributeProto& a) { a.mutable_double_list()->add_values(0.0); });
  EXPECT_NE(s.find("bad_exact.1.et: rank 1: node "), std::string::npos) << s;
  EXPECT_NE(s.find("all_to_all_v_share has 5 entries for a group of 4"), std::string::npos) << s;
}

// A negative token count is refused by its attribute's name.
TEST(MoeChakraExport, ANegativeTokenCountIsRefused) {
  const std::string s = import_error_with_spoiled("bad_tokens", "all_to_all_v_tokens",
                                                  [](AttributeProto& a) { a.set_int64_val(-1); });
  EXPECT_NE(s.find("all_to_all_v_tokens is -1, not >= 0"), std::string::npos) << s;
}

// A flag of another type than bool is refused by its name, as the other exact attributes are.
TEST(MoeChakraExport, ANonBoolDeduplicatedFlagIsRefused) {
  const std::string s = import_error_with_spoiled("bad_flag", "all_to_all_v_deduplicated",
                                                  [](AttributeProto& a) { a.set_int64_val(1); });
  EXPECT_NE(s.find("all_to_all_v_deduplicated is not a bool"), std::string::npos) << s;
}

}  // namespace
}  // namespace cs::trace
