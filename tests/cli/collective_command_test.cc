#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cli/commands.h"
#include "sim/cli/size_list.h"
#include "sim/config/embedded_presets.h"
#include "tests/support/test_helpers.h"

namespace cs::cli {
namespace {

using testing_support::Outcome;
using testing_support::run_cli;
using testing_support::temp_file;

TEST(SizeList, ParsesBinaryMultiples) {
  EXPECT_EQ(parse_size_list("1K,1M,1G,3"), (std::vector<Bytes>{1024, 1 << 20, 1 << 30, 3}));
  EXPECT_EQ(parse_size("4KiB"), 4096);
  EXPECT_EQ(parse_size("2TB"), Bytes{2} << 40);
  EXPECT_THROW(parse_size("1X"), std::invalid_argument);
  EXPECT_THROW(parse_size("-1"), std::invalid_argument);
  EXPECT_THROW(parse_size_list(""), std::invalid_argument);
  EXPECT_EQ(format_size(Bytes{1} << 30), "1G");
  EXPECT_EQ(format_size(1536), "1536");
}

TEST(Cli, HelpListsCommands) {
  const auto r = run_cli({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("collective"), std::string::npos);
  const auto sub = run_cli({"collective", "--help"});
  EXPECT_EQ(sub.code, 0);
  EXPECT_NE(sub.out.find("--sizes"), std::string::npos);
  // --topology names every embedded topology preset (help wraps lines, so each name alone).
  for (const auto& name : preset_names("topologies"))
    EXPECT_NE(sub.out.find(name), std::string::npos) << name;
}

TEST(Cli, UnknownCommandAndMissingOptionsFail) {
  EXPECT_EQ(run_cli({"frobnicate"}).code, 2);
  const auto r = run_cli({"collective"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--gpus"), std::string::npos);
}

TEST(Cli, ImpossibleRequestsGetOneLineErrors) {
  const auto too_many = run_cli({"collective", "--gpus", "3000000", "--topology", "dgx-h100"});
  EXPECT_EQ(too_many.code, 1);
  EXPECT_NE(too_many.err.find("holds at most"), std::string::npos);
  // Past the largest cluster this simulator builds (2^20 GPUs): refused before anything is built.
  const auto two_million =
      run_cli({"collective", "--gpus", "2097152", "--sizes", "1K", "--topology", "dgx-h100"});
  EXPECT_EQ(two_million.code, 1);
  EXPECT_NE(two_million.err.find("holds at most 1048576"), std::string::npos) << two_million.err;
  // 128 trees of 128 servers on a 16-flow ECMP fabric, message by message: refused up front,
  // naming the way to run it; as fluid transfers it runs.
  const std::vector<std::string> trees = {
      "collective", "--op",           "all_reduce", "--gpus",     "16384",      "--group-size",
      "128",        "--group-stride", "128",        "--topology", "llama3-24k", "--sizes",
      "1G"};
  const auto messages = run_cli(trees);
  EXPECT_EQ(messages.code, 2);
  EXPECT_NE(messages.err.find("add --fluid"), std::string::npos) << messages.err;
  auto fluid = trees;
  fluid.push_back("--fluid");
  EXPECT_EQ(run_cli(fluid).code, 0);
  const auto algo = run_cli({"collective", "--gpus", "8", "--algo", "bogus"});
  EXPECT_EQ(algo.code, 2);
  EXPECT_NE(algo.err.find("bogus"), std::string::npos);
  EXPECT_EQ(std::count(algo.err.begin(), algo.err.end(), '\n'), 1);
}

// The README's 16,384-GPU ring example says what happens without --fluid: it is refused up front
// (it once claimed the ring ran message by message, 18 M events in over a minute).
TEST(Cli, TheReadmesRingExampleWithoutFluidIsRefusedAsItSays) {
  const char* src = std::getenv("CLUSTERSIM_SOURCE_DIR");
  const std::string readme =
      testing_support::read_file(std::string(src ? src : ".") + "/README.md");
  ASSERT_FALSE(readme.empty()) << "README.md not found; set CLUSTERSIM_SOURCE_DIR";
  const std::string command =
      "build/clustersim collective --op all_reduce --algo ring --gpus 16384 --group-size 128 \\\n"
      "  --group-stride 128 --topology llama3-24k --sizes 1G --fluid";
  const auto at = readme.find(command);
  ASSERT_NE(at, std::string::npos) << "the README's example changed";
  const auto start = readme.rfind("\n# 128 concurrent", at);
  ASSERT_NE(start, std::string::npos);
  const std::string comment = readme.substr(start, at - start);
  EXPECT_NE(comment.find("without --fluid it is refused"), std::string::npos) << comment;
  EXPECT_NE(comment.find("8,388,608 flows"), std::string::npos) << comment;
  const auto r = run_cli({"collective", "--op", "all_reduce", "--algo", "ring", "--gpus", "16384",
                          "--group-size", "128", "--group-stride", "128", "--topology",
                          "llama3-24k", "--sizes", "1G"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("more than the 8388608 flows run message by message; add --fluid"),
            std::string::npos)
      << r.err;
}

TEST(Cli, MalformedTopologyFileNamesFileLineAndColumn) {
  const std::string path = temp_file("bad_topology.textproto",
                                     "name: \"bad\"\ntiered {\n  node { gpus_per_node: 8 }\n"
                                     "  tiers { group_size: twelve }\n}\n");
  const auto r = run_cli({"collective", "--gpus", "8", "--topology", path});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(path + ":4:"), std::string::npos) << r.err;
}

double busbw_of(const std::vector<std::string>& args, const std::string& json) {
  std::vector<std::string> all = args;
  all.insert(all.end(), {"--json", json});
  const auto r = run_cli(all);
  EXPECT_EQ(r.code, 0) << r.err;
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string key = "\"busbw_gbytes_per_s\": ";
  const auto pos = text.find(key);
  if (pos == std::string::npos) return 0;
  return std::stod(text.substr(pos + key.size()));
}

TEST(Cli, CollectiveReportsBusBandwidthAsNcclAchievesIt) {
  // 1 GiB ring all-reduce inside one H100 server: NCCL's ~370 GB/s (nccl-tests issue 212), not
  // NVLink's 450 GB/s line rate; NVLS (the default choice there) goes beyond it.
  const std::string json = testing_support::temp_path("coll.json");
  const std::vector<std::string> ring{"collective", "--gpus", "8",      "--topology", "dgx-h100",
                                      "--sizes",    "1G",     "--algo", "ring"};
  const double busbw = busbw_of(ring, json);
  EXPECT_GE(busbw, 340);
  EXPECT_LE(busbw, 400);
  std::vector<std::string> line_rate = ring;
  line_rate.push_back("--no-nvlink-overhead");
  EXPECT_GT(busbw_of(line_rate, json), 0.95 * 450);
  const double nvls =
      busbw_of({"collective", "--gpus", "8", "--topology", "dgx-h100", "--sizes", "1G"}, json);
  EXPECT_GT(nvls, busbw);
  EXPECT_LT(busbw_of({"collective", "--gpus", "8", "--topology", "dgx-h100", "--sizes", "1G",
                      "--nvls", "off"},
                     json),
            nvls);
}

// Every --no-FLAG the help lists switches an effect the command runs with.
TEST(Cli, EveryEffectFlagOfTheHelpRuns) {
  const std::string help = run_cli({"collective", "--help"}).out;
  int flags = 0;
  for (std::size_t at = help.find("--no-"); at != std::string::npos;
       at = help.find("--no-", at + 1)) {
    const std::string flag = help.substr(at, help.find_first_of(" \n", at) - at);
    const auto r = run_cli({"collective", "--gpus", "16", "--sizes", "1M", flag});
    EXPECT_EQ(r.code, 0) << flag << ": " << r.err;
    ++flags;
  }
  EXPECT_GE(flags, 13);
}

// llama3-24k's pods of 3,072 GPUs have a seventh of their NICs' rate above them. 96 PAT
// all-gathers over 256 servers, one GPU of each, cross pods in their longer steps. With the
// fabric's paths pooled (--no-hashed-paths), on the analytical network they drain at the pods'
// trunks (5.5 GB/s of bus bandwidth), and without the trunks at their NICs' rate (32.6). As the
// fabric hashes each connection's 16 flows onto links, the links they collide on drain slower
// still: 4.7 (congestion-aware 4.3), with the trunks or without.
TEST(Cli, TheAnalyticalNetworkQueuesTrafficAcrossAnOversubscribedTier) {
  const std::string json = testing_support::temp_path("trunks.json");
  const std::vector<std::string> pat{"collective", "--op",           "all_gather", "--topology",
                                     "llama3-24k", "--gpus",         "24576",      "--group-size",
                                     "256",        "--group-stride", "96",         "--sizes",
                                     "256M",       "--network",      "analytical", "--fluid"};
  const auto with = [&](std::vector<std::string> flags) {
    std::vector<std::string> args = pat;
    args.insert(args.end(), flags.begin(), flags.end());
    return busbw_of(args, json);
  };
  const double trunked = with({"--no-hashed-paths"});
  const double free = with({"--no-hashed-paths", "--no-trunks"});
  EXPECT_LT(trunked, free / 4) << trunked << " vs " << free;
  EXPECT_GT(trunked, free / 7 / 2);  // the trunk's seventh, and no less than half of it
  const double hashed = busbw_of(pat, json);
  EXPECT_LT(hashed, 0.95 * trunked) << hashed << " vs " << trunked;
  EXPECT_GT(hashed, trunked / 2);
  EXPECT_EQ(with({"--no-trunks"}), hashed);
}

// Issue 25's table: 128-rank (and 336-rank) reduce-scatters, one member per server, spread over
// more and more scalable units of a grown full-bisection fat tree with adaptive routing. Where a
// server sits must not cost bandwidth: as rings (NCCL 2.20, --pat off) every row is within 10%
// of the 4,096-GPU stride-8 case (31 GB/s, its own NCCL latency term: 127 network steps of
// 14 us); as NCCL 2.23's PAT, which NCCL's model picks here, too once PAT's linear latency
// (2.8 us a rank: 0.36 ms at 128 ranks, 0.94 ms at 336) is taken out. Before the core tier was
// cabled in whole ports and adaptive routing sprayed, the rings read 16.0, 5.6 and 5.3 GB/s.
TEST(Cli, CollectivesOnAGrownFabricKeepTheirBandwidthWhereverTheirServersSit) {
  const std::string json = testing_support::temp_path("grown.json");
  struct Row {
    std::string gpus, group, stride;
  };
  const auto run = [&](const Row& row, const std::string& pat,
                       const std::string& network = "congestion_aware") {
    const auto r = run_cli({"collective",     "--op",     "reduce_scatter", "--topology",
                            "dgx-h100",       "--sizes",  "160M",           "--fluid",
                            "--gpus",         row.gpus,   "--group-size",   row.group,
                            "--group-stride", row.stride, "--network",      network,
                            "--pat",          pat,        "--json",         json});
    EXPECT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(testing_support::read_file(json))["results"][0];
    const double t = j["time_us"].get<double>();
    // Without PAT's linear latency term, which grows with the group, not with where it sits.
    const double linear = j["algo"] == "pat" ? std::stod(row.group) * 2.8 : 0.0;
    return j["busbw_gbytes_per_s"].get<double>() * t / (t - linear);
  };
  const Row reference{"4096", "128", "8"};
  const std::vector<Row> rows{{"2048", "128", "16"},
                              {"4096", "128", "32"},
                              {"16384", "128", "128"},
                              {"10752", "336", "32"}};
  for (const std::string pat : {"off", "on"}) {
    const double base = run(reference, pat);
    EXPECT_GT(base, 25) << pat;
    for (const Row& row : rows) {
      SCOPED_TRACE(row.gpus + " GPUs, stride " + row.stride + ", PAT " + pat);
      EXPECT_NEAR(run(row, pat), base, 0.1 * base);
    }
  }
  EXPECT_NEAR(run(rows[1], "off", "analytical"), run(reference, "off"), 3.1);
}

// NCCL's ring across servers is rail-aligned channels through every GPU, as --algo ring runs it:
// 8 NICs x 48 GB/s on 8 DGX H100 servers at 4 GiB. The hierarchical schedule that used to stand
// in for it runs its three phases one after another (319 GB/s).
TEST(Cli, NcclsChoiceOfRingAcrossServersRunsAsTheRing) {
  // With NVLS off (NCCL_NVLS_ENABLE=0) NCCL's model picks the ring over 8 servers at 4 GiB.
  const std::string json = testing_support::temp_path("auto_ring.json");
  const std::vector<std::string> args{"collective", "--op", "all_reduce", "--gpus", "64",
                                      "--sizes",    "4G",   "--nvls",     "off"};
  std::vector<std::string> ring = args;
  ring.insert(ring.end(), {"--algo", "ring"});
  const double chosen = busbw_of(args, json);
  EXPECT_DOUBLE_EQ(chosen, busbw_of(ring, json));
  EXPECT_GT(chosen, 370);
}

// Over several Hopper servers NCCL weighs NVLS-tree (NVLS inside each server, a tree per rail
// between them) and picks it where its model says it wins: here over two servers at 1 GiB. Off
// with NVLS, on A100s and with one GPU per server.
TEST(Cli, CollectivePicksNvlsTreeWhereNcclWould) {
  const auto algo_of = [](std::vector<std::string> args) {
    const auto r = testing_support::run_cli(args);
    EXPECT_EQ(r.code, 0) << r.err;
    std::istringstream lines(r.out);
    std::string line, last;
    while (std::getline(lines, line)) last = line;
    std::istringstream words(last);
    std::string size, algo;
    words >> size >> algo;
    return algo;
  };
  const std::vector<std::string> two{"collective", "--gpus", "16", "--sizes", "1G"};
  std::vector<std::string> h100 = two;
  h100.insert(h100.end(), {"--topology", "dgx-h100"});
  EXPECT_EQ(algo_of(h100), "nvls_tree");
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--nvls", "off", "--topology", "dgx-h100"},
        {"--topology", "dgx-a100"}}) {
    std::vector<std::string> args = two;
    args.insert(args.end(), extra.begin(), extra.end());
    EXPECT_NE(algo_of(args), "nvls_tree") << extra[1];
  }
  EXPECT_NE(algo_of({"collective", "--gpus", "16", "--group-size", "2", "--group-stride", "8",
                     "--topology", "dgx-h100", "--sizes", "1G"}),
            "nvls_tree");
}

// --nccl-costs prints NCCL's cost model beside the run: the latency / bandwidth table its TUNING
// log prints and each size's candidates, fastest first. The first is the algorithm the run takes
// (NCCL's tree is our chain-tree across servers), every time is at least its latency, and a
// forced protocol leaves only its own candidates.
TEST(Cli, CollectivePrintsNcclsCostModelWhenAsked) {
  const auto r = run_cli({"collective", "--gpus", "32", "--topology", "dgx-h100", "--sizes",
                          "1M,64M", "--nccl-costs", "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("NCCL's cost model (tuning.cc): 32 ranks on 4 server(s)"), std::string::npos)
      << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& model = j.at("nccl_model");
  EXPECT_EQ(model.at("nodes"), 4);
  std::map<std::string, double> latency;
  for (const auto& row : model.at("table")) {
    EXPECT_GT(row.at("bandwidth_gbytes_per_s").get<double>(), 0);
    latency[row.at("algo").get<std::string>() + "/" + row.at("protocol").get<std::string>()] =
        row.at("latency_us").get<double>();
  }
  // NVLS-tree runs Simple only; one-server NVLS and PAT (one GPU a server) do not run here.
  EXPECT_TRUE(latency.count("nvls_tree/simple"));
  EXPECT_FALSE(latency.count("nvls_tree/ll"));
  EXPECT_FALSE(latency.count("nvls/simple"));
  EXPECT_FALSE(latency.count("pat/simple"));
  ASSERT_EQ(model.at("sizes").size(), 2u);
  for (std::size_t s = 0; s < 2; ++s) {
    const auto& candidates = model.at("sizes")[s].at("candidates");
    ASSERT_GE(candidates.size(), 3u);
    double previous = 0;
    for (const auto& c : candidates) {
      const double t = c.at("time_us").get<double>();
      EXPECT_GE(t, previous);
      previous = t;
      const std::string name =
          c.at("algo").get<std::string>() + "/" + c.at("protocol").get<std::string>();
      ASSERT_TRUE(latency.count(name)) << name;
      EXPECT_GE(t, latency[name]) << name;
    }
    const std::string ran = j.at("results")[s].at("algo");
    const std::string chosen = candidates[0].at("algo");
    EXPECT_EQ(ran, chosen == "tree" ? "chain_tree" : chosen);
    EXPECT_EQ(j.at("results")[s].at("protocol"), candidates[0].at("protocol"));
  }
  EXPECT_EQ(model.at("sizes")[1].at("candidates")[0].at("algo"), "nvls_tree");

  const auto forced = run_cli({"collective", "--gpus", "32", "--topology", "dgx-h100", "--sizes",
                               "1M", "--protocol", "ll", "--nccl-costs", "--json", "-"});
  ASSERT_EQ(forced.code, 0) << forced.err;
  const auto f = nlohmann::json::parse(forced.out);
  for (const auto& c : f.at("nccl_model").at("sizes")[0].at("candidates"))
    EXPECT_EQ(c.at("protocol"), "ll");

  // NCCL times all-to-all outside its cost model: the section says so, and the JSON has none.
  const auto a2a = run_cli({"collective", "--gpus", "8", "--op", "all_to_all", "--sizes", "1M",
                            "--nccl-costs", "--json", "-"});
  ASSERT_EQ(a2a.code, 0) << a2a.err;
  EXPECT_NE(a2a.err.find("NCCL's cost model: none for this call"), std::string::npos) << a2a.err;
  EXPECT_FALSE(nlohmann::json::parse(a2a.out).contains("nccl_model"));
}

// 12 GPUs fill one 8-GPU server and half of another. NCCL's choice runs there (its tree over
// the group, servers taken as single members, as a training step's uneven groups are); the
// server-chained forms asked for by name are refused with the reason.
TEST(Cli, CollectiveOnUnevenServersRunsNcclsChoice) {
  for (const char* topology : {"dgx-h100", "dgx-b200", "dgx-b300"}) {
    const auto r = run_cli({"collective", "--gpus", "12", "--topology", topology, "--sizes",
                            "1K,1M,1G", "--op", "all_reduce"});
    EXPECT_EQ(r.code, 0) << topology << ": " << r.err;
    EXPECT_NE(r.out.find("1G"), std::string::npos) << r.out;
  }
  const auto chained = run_cli({"collective", "--gpus", "12", "--topology", "dgx-h100", "--sizes",
                                "1M", "--algo", "chain_tree"});
  EXPECT_EQ(chained.code, 2);
  EXPECT_NE(chained.err.find("dividing the group size (n = 12, local_size = 8)"), std::string::npos)
      << chained.err;
}

// 16 groups of 8 with stride 8 over 128 GB200 NVL72 GPUs: groups 0-7 sit in the first rack, the
// others hold one member in it (64 + i) and seven in the next. One plan serves all, so it is the
// plan of members spread over servers, a ring NCCL's model and the run agree on; it was group 0's
// NVLS, run across the racks at 46 GB/s where NCCL's model gave 1,037.
TEST(Cli, CollectiveGroupsLaidOutUnlikeTheFirstShareTheSpreadPlan) {
  const auto r =
      run_cli({"collective", "--op", "all_reduce", "--gpus", "128", "--group-size", "8",
               "--group-stride", "8", "--topology", "gb200-nvl72", "--sizes", "1G", "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto row = nlohmann::json::parse(r.out)["results"][0];
  EXPECT_EQ(row["algo"], "ring");
  EXPECT_NEAR(
      row["busbw_gbytes_per_s"].get<double>() / row["nccl_model_busbw_gbytes_per_s"].get<double>(),
      1.0, 0.05);
}

// NCCL keeps at most NCCL_STEPS = 8 sends in flight per connection: a wider window (once
// accepted, 100 ran and reported window 100) is refused, naming the option and the bound.
TEST(Cli, CollectiveRefusesAWindowOutsideNcclSteps) {
  for (const std::string window : {"100", "9", "-1"}) {
    const auto r = run_cli(
        {"collective", "--op", "all_reduce", "--gpus", "8", "--sizes", "1M", "--window", window});
    EXPECT_EQ(r.code, 2) << window << ": " << r.out;
    EXPECT_NE(r.err.find("--window must be in [0, 8] (sends in flight per connection, at most "
                         "NCCL_STEPS = 8 in NCCL; 0: by size), got " +
                         window),
              std::string::npos)
        << r.err;
  }
  EXPECT_EQ(run_cli({"collective", "--gpus", "8", "--sizes", "1M", "--window", "8"}).code, 0);
}

// NCCL opens at most MAXCHANNELS = 64 channels: more (once accepted, 1,000 rings ran and were
// reported) are refused as nccl.channels is in a config.
TEST(Cli, CollectiveRefusesMoreChannelsThanNcclOpens) {
  const auto r = run_cli({"collective", "--op", "all_reduce", "--algo", "ring", "--gpus", "16",
                          "--sizes", "1M", "--channels", "1000"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("--channels must be at most 64 (NCCL's MAXCHANNELS), got 1000"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(
      run_cli({"collective", "--algo", "ring", "--gpus", "16", "--sizes", "1M", "--channels", "64"})
          .code,
      0);
}

TEST(Cli, CollectiveRejectsBadNcclKnobs) {
  // Usage errors: exit 2 with the reason.
  const auto proto = run_cli({"collective", "--gpus", "8", "--protocol", "fast"});
  EXPECT_EQ(proto.code, 2);
  EXPECT_NE(proto.err.find("unknown NCCL protocol 'fast'"), std::string::npos) << proto.err;
  EXPECT_EQ(run_cli({"collective", "--gpus", "8", "--nvls", "maybe"}).code, 2);
  EXPECT_EQ(run_cli({"collective", "--gpus", "8", "--channels", "-1"}).code, 2);
  // The ideal network's free transfers have no time to report (once: 0 us and 0 GB/s).
  const auto ideal = run_cli({"collective", "--gpus", "8", "--network", "ideal"});
  EXPECT_EQ(ideal.code, 2);
  EXPECT_NE(ideal.err.find("--network ideal makes communication free"), std::string::npos)
      << ideal.err;
  const auto negative = run_cli({"collective", "--gpus", "8", "--gpus-per-node", "-1"});
  EXPECT_EQ(negative.code, 2);
  EXPECT_NE(negative.err.find("--gpus-per-node"), std::string::npos) << negative.err;
  // More GPUs of a node than it has: refused, naming the bound.
  const auto too_many = run_cli({"collective", "--gpus", "16", "--gpus-per-node", "9"});
  EXPECT_NE(too_many.code, 0);
  EXPECT_NE(too_many.err.find("gpus_per_node must be in [0, 8]"), std::string::npos)
      << too_many.err;
}

TEST(Cli, SameInputSameOutput) {
  const std::vector<std::string> args{"collective",   "--gpus", "32",      "--topology", "dgx-h100",
                                      "--group-size", "8",      "--sizes", "1M,64M"};
  auto strip_wall = [](std::string s) {
    // The last column is host wall time, the only thing allowed to differ.
    std::string out;
    std::istringstream lines(s);
    for (std::string line; std::getline(lines, line);)
      out += line.substr(0, line.rfind(' ')) + '\n';
    return out;
  };
  EXPECT_EQ(strip_wall(run_cli(args).out), strip_wall(run_cli(args).out));
}

}  // namespace
}  // namespace cs::cli
