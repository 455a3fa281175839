// Cycles in Chakra traces converted from real PyTorch runs: the edge from a GPU kernel back to the
// CPU operator that launched it (what chakra's linker writes through sync_dep) is cut, counted and
// named; --strict-deps keeps it an error; any other cycle stays an error naming its nodes. The
// traces come from chakra_converter_fixture.h, which links and converts as chakra does.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "sim/compute/gpu_profile.h"
#include "sim/trace/chakra.h"
#include "sim/trace/launch_order.h"
#include "sim/trace/replay.h"
#include "sim/trace/trace_format.h"
#include "tests/support/test_helpers.h"
#include "tests/trace/chakra_converter_fixture.h"
#include "tests/trace/pytorch_chakra_fixture.h"

// A namespace of its own: the test folder builds as one unity source, beside other Imported's.
namespace cs::trace::cycles_test {
namespace {

using converter_fixture::Converted;
using converter_fixture::StepShape;

struct Imported {
  exec::ExplicitWorkload workload;
  ChakraSummary summary;
};

Imported import(const std::vector<ChakraRank>& ranks, const ChakraImportOptions& options = {}) {
  std::vector<std::string> files;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    files.push_back("chakra." + std::to_string(r) + ".et");
  const compute::KernelCostModel cost(compute::load_gpu_profile("h100"));
  Imported out;
  out.workload = chakra_to_workload(ranks, files, cost, {}, options, &out.summary);
  return out;
}

double seconds(const Imported& i) {
  const ReplayTarget target{"dgx-h100", "", clustersim::CONGESTION_AWARE};
  return simulate_workload(i.workload, target, "pt", "pt").iteration_time_s;
}

std::string import_error(const std::vector<ChakraRank>& ranks, const ChakraImportOptions& options) {
  try {
    import(ranks, options);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

ChakraImportOptions strict() {
  ChakraImportOptions o;
  o.strict_deps = true;
  return o;
}

std::vector<Converted> convert_ranks(const StepShape& shape) {
  std::vector<Converted> out;
  for (int r = 0; r < shape.ranks; ++r)
    out.push_back(converter_fixture::convert(converter_fixture::training_step(shape)));
  return out;
}

std::vector<ChakraRank> ranks_of(const std::vector<Converted>& c) {
  std::vector<ChakraRank> out;
  for (const auto& x : c) out.push_back(x.rank);
  return out;
}

// Edges to nodes the file does not have, counted from the file alone.
std::pair<uint64_t, uint64_t> dangling(const ChakraRank& rank) {
  std::set<uint64_t> ids;
  for (const auto& n : rank.nodes) ids.insert(n.id());
  uint64_t ctrl = 0, data = 0;
  for (const auto& n : rank.nodes) {
    for (const auto d : n.ctrl_deps()) ctrl += !ids.count(d);
    for (const auto d : n.data_deps()) data += !ids.count(d);
  }
  return {ctrl, data};
}

ChakraProtoMsg::Node& node(ChakraRank& rank, uint64_t id) {
  for (auto& n : rank.nodes)
    if (n.id() == id) return n;
  throw std::out_of_range("no node " + std::to_string(id));
}

// --- the rule alone ------------------------------------------------------------------------------

// Nodes: 0 thread root, 1 aten::mul, 2 its kernel, 3 aten::add after it, 4 aten::item.
struct Graph {
  std::vector<std::vector<uint32_t>> preds{{}, {0}, {1}, {1}, {3}};
  std::vector<uint8_t> cpu{1, 1, 0, 1, 1};
  std::vector<uint32_t> launcher{kNoLauncher, kNoLauncher, 1, kNoLauncher, kNoLauncher};
  std::vector<BackEdge> back() const { return launch_order_back_edges({preds, cpu, launcher}); }
};

TEST(LaunchOrder, AnOperatorWaitingForItsOwnKernelIsTheEdgeToCut) {
  Graph g;
  EXPECT_TRUE(g.back().empty());  // no cycle, nothing to cut
  g.preds[1].push_back(2);
  const auto b = g.back();
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].kernel, 2u);
  EXPECT_EQ(b[0].op, 1u);
  EXPECT_EQ(b[0].launcher, 1u);
}

TEST(LaunchOrder, AnOperatorBeforeTheLauncherOnTheHostCannotWaitForTheKernel) {
  Graph g;
  g.preds[1] = {3};  // reorder: root -> add -> mul -> kernel, and add waits for the kernel
  g.preds[3] = {0, 2};
  const auto b = g.back();
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].op, 3u);
  EXPECT_EQ(b[0].kernel, 2u);
}

TEST(LaunchOrder, AWaitAfterTheLaunchIsKeptAndCyclesWithoutAKernelAreNotCut) {
  Graph g;
  g.preds[4].push_back(2);  // aten::item after the launch waits for the kernel: a real sync
  EXPECT_TRUE(g.back().empty());
  Graph host;
  host.preds[1].push_back(4);  // aten::mul waits for the later aten::item: a host-only cycle
  EXPECT_TRUE(host.back().empty());
  // mul launches kernel 2, add waits for it and launches kernel 5, and mul waits for kernel 5:
  // the order runs through a kernel, not host order alone, so the cycle is left for the error.
  Graph h;
  h.preds = {{}, {0, 5}, {1}, {2}, {3}, {3}};
  h.cpu = {1, 1, 0, 1, 1, 0};
  h.launcher = {kNoLauncher, kNoLauncher, 1, kNoLauncher, kNoLauncher, 3};
  EXPECT_TRUE(h.back().empty());
  h.preds[3] = {1};  // add now follows mul on the host: mul waiting for add's kernel is cut
  ASSERT_EQ(h.back().size(), 1u);
  EXPECT_EQ(h.back()[0].op, 1u);
  EXPECT_EQ(h.back()[0].launcher, 3u);
}

// --- the cut edge is the right one
// -----------------------------------------------------------------

// aten::mul (10 us) launches a 20 us kernel and, through the linker, also waits for it; aten::add
// (5 us) follows it on the host. Cutting the back edge: mul 0..10, kernel 10..30, add 10..15.
// Cutting the launch edge instead would run the kernel 0..20, mul 20..30, add 30..35.
TEST(ChakraCycles, TheKernelStillWaitsForItsLauncherAfterTheCut) {
  pytorch_fixture::PtRank r;
  const auto root = r.thread_root();
  const auto mul = r.cpu_op("aten::mul", 10, {root});
  const auto k = r.kernel("void at::native::vectorized_elementwise_kernel<4, MulFunctor>", mul, 20);
  r.node(mul).add_data_deps(k);
  r.cpu_op("aten::add", 5, {mul});
  const Imported i = import({r.rank()});
  EXPECT_EQ(i.summary.launch_edges_cut, 1u);
  EXPECT_NEAR(seconds(i), 30e-6, 1e-9);
  ChakraImportOptions skip;
  skip.cpu_ops = CpuOps::kSkip;
  EXPECT_NEAR(seconds(import({r.rank()}, skip)), 20e-6, 1e-9);

  const std::string e = import_error({r.rank()}, strict());
  EXPECT_NE(e.find("chakra.0.et: rank 0: dependency cycle"), std::string::npos) << e;
  EXPECT_NE(e.find("node " + std::to_string(k) + " void at::native"), std::string::npos) << e;
  EXPECT_NE(e.find("node " + std::to_string(mul) + " aten::mul"), std::string::npos) << e;
  EXPECT_NE(e.find("without --strict-deps they are cut"), std::string::npos) << e;
}

// --- traces as chakra's converter writes them ---------------------------------------------------

StepShape issue_shape() {
  StepShape s;
  s.layers = 4;
  s.mul_waits_on_own_kernel = {0, 2};
  return s;
}

TEST(ChakraCycles, ConverterOutputReplaysWithTheBackEdgesCutCountedAndNamed) {
  const auto converted = convert_ranks(issue_shape());
  const auto ranks = ranks_of(converted);
  // The fixture has what the issue's trace has: the kernel <-> operator cycle (ctrl and data
  // deps from the kernel to its launcher, a data dep back), dangling ctrl deps, collectives.
  for (const auto& c : converted)
    for (const auto& [k, op] : c.sync_on_own_kernel) {
      ChakraRank rank = c.rank;
      const auto& kn = node(rank, k);
      const auto& on = node(rank, op);
      EXPECT_EQ(std::vector<uint64_t>(kn.ctrl_deps().begin(), kn.ctrl_deps().end()),
                std::vector<uint64_t>{op});
      EXPECT_NE(std::find(kn.data_deps().begin(), kn.data_deps().end(), op), kn.data_deps().end());
      EXPECT_NE(std::find(on.data_deps().begin(), on.data_deps().end(), k), on.data_deps().end());
    }
  const Imported i = import(ranks);
  uint64_t own = 0, ctrl = 0, data = 0;
  for (const auto& c : converted) {
    own += c.sync_on_own_kernel.size();
    ctrl += dangling(c.rank).first;
    data += dangling(c.rank).second;
  }
  ASSERT_EQ(own, 2u * 3u);  // two aten::mul and one aten::_local_scalar_dense per rank
  EXPECT_EQ(i.summary.launch_edges_cut, own);
  EXPECT_GT(ctrl, 0u);
  EXPECT_EQ(i.summary.dangling_ctrl_deps, ctrl);
  EXPECT_EQ(i.summary.dangling_data_deps, data);
  EXPECT_EQ(i.summary.collectives.at("ALL_REDUCE"), 2u * 2u);
  // Each cut edge is named: kernel -> the aten::mul that launched it, with file and rank.
  const Converted& c0 = converted[0];
  const auto [kernel, op] = c0.sync_on_own_kernel[0];
  const std::string head = "chakra.0.et: rank 0: node " + std::to_string(kernel) +
                           " (void at::native::vectorized_elementwise_kernel<4, ";
  const std::string tail = "...) -> node " + std::to_string(op) + " (aten::mul), which launched it";
  ASSERT_FALSE(i.summary.cut_edges.empty());
  const std::string& first = i.summary.cut_edges[0];
  EXPECT_EQ(first.rfind(head, 0), 0u) << first;
  EXPECT_EQ(first.size() - first.rfind(tail), tail.size()) << first;
  std::ostringstream text;
  print_chakra_summary(text, i.summary);
  EXPECT_NE(text.str().find("launch cycles         6 edges cut"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find(first), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("... and 1 more"), std::string::npos) << text.str();
  EXPECT_GT(seconds(i), 0);
}

TEST(ChakraCycles, AWaitOnAnEarlierKernelStaysADependency) {
  const auto converted = convert_ranks(issue_shape());
  const Imported i = import(ranks_of(converted));
  // aten::_local_scalar_dense waits for aten::sum's reduction, launched before it: kept.
  const auto& t = converted[0];
  const converter_fixture::HostTrace trace = converter_fixture::training_step(issue_shape());
  const auto& host = trace.ops();
  uint64_t sum = 0, dense = 0;
  for (const auto& o : host) {
    if (o.name == "aten::sum") sum = o.id;
    if (o.name == "aten::_local_scalar_dense") dense = o.id;
  }
  const std::string reduce = "node " + std::to_string(t.kernel_id.at({sum, 0})) + " ";
  const std::string reader = "node " + std::to_string(t.op_id.at(dense)) + " ";
  const auto& p = i.workload.programs[0];
  auto find = [&](const std::string& prefix) {
    for (uint32_t k = 0; k < p.ops.size(); ++k)
      if (p.labels[p.ops[k].label].rfind(prefix, 0) == 0) return k;
    return UINT32_MAX;
  };
  const uint32_t r = find(reader), k = find(reduce);
  ASSERT_NE(r, UINT32_MAX);
  ASSERT_NE(k, UINT32_MAX);
  const auto& o = p.ops[r];
  EXPECT_NE(std::find(p.deps.begin() + o.deps_begin, p.deps.begin() + o.deps_end, k),
            p.deps.begin() + o.deps_end);
}

TEST(ChakraCycles, StrictDepsKeepsTheBackEdgeAnErrorNamingTheCycle) {
  const auto converted = convert_ranks(issue_shape());
  const std::string e = import_error(ranks_of(converted), strict());
  // The first rank fails first, on its first dangling ctrl dep (the removed process annotation)...
  EXPECT_NE(e.find("chakra.0.et: rank 0: node"), std::string::npos) << e;
  EXPECT_NE(e.find("--strict-deps"), std::string::npos) << e;
  // ...and without dangling edges, on the cycle: kernel and aten::mul named.
  auto ranks = ranks_of(converted);
  for (auto& rank : ranks) {
    std::set<uint64_t> ids;
    for (const auto& n : rank.nodes) ids.insert(n.id());
    for (auto& n : rank.nodes) {
      auto* deps = n.mutable_ctrl_deps();
      deps->erase(
          std::remove_if(deps->begin(), deps->end(), [&](uint64_t d) { return !ids.count(d); }),
          deps->end());
    }
  }
  const std::string c = import_error(ranks, strict());
  const auto [kernel, op] = converted[0].sync_on_own_kernel[0];
  EXPECT_NE(c.find("chakra.0.et: rank 0: dependency cycle: "), std::string::npos) << c;
  EXPECT_NE(c.find("(node " + std::to_string(kernel) + " void at::native::vectorized"),
            std::string::npos)
      << c;
  EXPECT_NE(c.find("(node " + std::to_string(op) + " aten::mul)"), std::string::npos) << c;
  EXPECT_NE(c.find("the first node " + std::to_string(kernel)), std::string::npos) << c;
}

TEST(ChakraCycles, AGenuineCycleIsStillAnErrorNamingItsNodes) {
  const auto converted = convert_ranks(issue_shape());
  auto ranks = ranks_of(converted);
  // The first aten::linear is made to wait for the optimizer's aten::_foreach_add_, which runs
  // after it on the same thread: a host-only cycle no launch explains.
  const converter_fixture::HostTrace trace = converter_fixture::training_step(issue_shape());
  const auto& host = trace.ops();
  uint64_t linear = 0, foreach = 0;
  for (const auto& o : host) {
    if (o.name == "aten::linear" && linear == 0) linear = o.id;
    if (o.name == "aten::_foreach_add_")
      foreach
        = o.id;
  }
  const uint64_t a = converted[1].op_id.at(linear), b = converted[1].op_id.at(foreach);
  node(ranks[1], a).add_data_deps(b);
  const std::string e = import_error(ranks, {});
  EXPECT_NE(e.find("chakra.1.et: rank 1: dependency cycle: "), std::string::npos) << e;
  EXPECT_NE(e.find("(node " + std::to_string(a) + " aten::linear)"), std::string::npos) << e;
  EXPECT_NE(e.find("(node " + std::to_string(b) + " aten::_foreach_add_)"), std::string::npos) << e;
  EXPECT_NE(e.find("after cutting the edges above, no edge of it runs from a GPU kernel"),
            std::string::npos)
      << e;
}

TEST(ChakraCycles, ResultsAreDeterministic) {
  const auto a = convert_ranks(issue_shape()), b = convert_ranks(issue_shape());
  for (std::size_t r = 0; r < a.size(); ++r)
    for (std::size_t n = 0; n < a[r].rank.nodes.size(); ++n)
      ASSERT_EQ(a[r].rank.nodes[n].SerializeAsString(), b[r].rank.nodes[n].SerializeAsString());
  const Imported x = import(ranks_of(a)), y = import(ranks_of(a));
  EXPECT_EQ(x.summary.cut_edges, y.summary.cut_edges);
  for (std::size_t p = 0; p < x.workload.programs.size(); ++p) {
    EXPECT_EQ(x.workload.programs[p].deps, y.workload.programs[p].deps);
    EXPECT_EQ(x.workload.programs[p].labels, y.workload.programs[p].labels);
  }
  EXPECT_EQ(seconds(x), seconds(y));
  // The edges cut do not depend on the order of nodes in the file.
  auto reversed = ranks_of(a);
  for (auto& rank : reversed) std::reverse(rank.nodes.begin(), rank.nodes.end());
  const Imported z = import(reversed);
  EXPECT_EQ(z.summary.launch_edges_cut, x.summary.launch_edges_cut);
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  StepShape few = issue_shape();
  few.ranks = 1;  // at most kMaxExamples names: all of them are listed, whatever the order
  const auto one = convert_ranks(few);
  auto back = ranks_of(one);
  std::reverse(back[0].nodes.begin(), back[0].nodes.end());
  EXPECT_EQ(sorted(import(ranks_of(one)).summary.cut_edges),
            sorted(import(back).summary.cut_edges));
}

// A trace the size of the issue's (about 3,600 nodes a rank, 21 all-reduces), end to end through
// files and the command line.
TEST(ChakraCycles, ReplayCommandOnAnIssueSizedTrace) {
  StepShape big;
  big.layers = 200;
  for (int l = 0; l < big.layers; l += 10) big.mul_waits_on_own_kernel.insert(l);
  big.all_reduce_buckets = 21;
  const auto converted = convert_ranks(big);
  EXPECT_GT(converted[0].rank.nodes.size(), 3600u);
  const std::string prefix = testing_support::temp_path("converter_cycles");
  for (std::size_t r = 0; r < converted.size(); ++r)
    pytorch_fixture::write_et(converted[r].rank, prefix + "." + std::to_string(r) + ".et");
  const uint64_t cut = converted[0].sync_on_own_kernel.size() * converted.size();
  for (const char* cpu_ops : {"host", "skip"}) {
    const auto run = testing_support::run_cli(
        {"replay", "--chakra", prefix, "--cpu-ops", cpu_ops, "--network", "analytical"});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_NE(run.out.find("launch cycles         " + std::to_string(cut) + " edges cut"),
              std::string::npos)
        << run.out;
    EXPECT_NE(run.out.find("ALL_REDUCE 42"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("iteration time"), std::string::npos) << run.out;
  }
  const auto run = testing_support::run_cli({"replay", "--chakra", prefix, "--strict-deps"});
  EXPECT_NE(run.code, 0);
  EXPECT_NE(run.err.find(prefix + ".0.et: rank 0: node"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace cs::trace::cycles_test
