// Fluid collectives against their message schedules on an idle network: the same time and bytes.
#include "sim/coll/fluid.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/registry.h"
#include "sim/coll/nccl_plan.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/core/simulator.h"
#include "sim/net/analytical_network.h"
#include "sim/net/flow_network.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"

namespace cs::coll {
namespace {

net::Topology cluster(const std::string& name, int32_t gpus) {
  return net::build_topology(net::resolve_topology(name), gpus, name);
}

// One run of `key` over `vertices` (mirrors copies of key.n each), fluid or message by message
// (copies side by side, done when the last ends), over the congestion-aware network or the
// analytical one.
RunStats time_run(const net::Topology& topo, const ScheduleKey& key,
                  const std::vector<net::VertexId>& vertices, Bytes size, bool fluid,
                  int32_t mirrors = 1, bool analytical = false) {
  net::Routing routing(topo);
  Simulator sim;
  net::FlowNetwork flows(sim, topo, routing);
  net::AnalyticalNetwork alpha_beta(sim, routing);
  net::Network& network = analytical ? static_cast<net::Network&>(alpha_beta) : flows;
  RunStats total;
  std::shared_ptr<const Schedule> schedule;  // outlives the runs
  if (fluid) {
    run_fluid_collective(
        sim, network, key, vertices, size, [&](const RunStats& s) { total = s; }, mirrors);
  } else {
    schedule = build_schedule(key);
    const std::size_t n = vertices.size() / static_cast<std::size_t>(mirrors);
    for (int32_t c = 0; c < mirrors; ++c) {
      run_collective(sim, network, *schedule,
                     std::span<const net::VertexId>(vertices).subspan(c * n, n), size,
                     [&](const RunStats& s) {
                       total.start = s.start;
                       total.end = std::max(total.end, s.end);
                       total.bytes_sent += s.bytes_sent;
                     });
    }
  }
  sim.run();
  return total;
}

std::vector<net::VertexId> gpus(const net::Topology& topo, int32_t first, int32_t count,
                                int32_t stride) {
  std::vector<net::VertexId> v;
  for (int32_t i = 0; i < count; ++i) v.push_back(topo.gpu(first + i * stride));
  return v;
}

void expect_same(const net::Topology& topo, const ScheduleKey& key,
                 const std::vector<net::VertexId>& vertices, Bytes size, int32_t mirrors = 1) {
  ASSERT_TRUE(fluid_supported(key));
  const RunStats msg = time_run(topo, key, vertices, size, false, mirrors);
  const RunStats fluid = time_run(topo, key, vertices, size, true, mirrors);
  const double t_msg = (msg.end - msg.start).as_seconds();
  const double t_fluid = (fluid.end - fluid.start).as_seconds();
  // The runner rounds each message's wire bytes to whole bytes where fluid keeps them exact: half
  // a byte on the ~1 KB messages of the small cases (the network transport scales bytes by 1 /
  // 0.96).
  EXPECT_NEAR(t_fluid / t_msg, 1.0, 1e-5) << to_string(key.op) << " " << size << " bytes";
  EXPECT_EQ(fluid.bytes_sent, msg.bytes_sent);
}

// The fluid run's time over the message schedule's, whose bytes it must send exactly.
double fluid_over_message(const net::Topology& topo, const ScheduleKey& key,
                          const std::vector<net::VertexId>& vertices, Bytes size,
                          bool analytical = false) {
  const RunStats msg = time_run(topo, key, vertices, size, false, 1, analytical);
  const RunStats fluid = time_run(topo, key, vertices, size, true, 1, analytical);
  EXPECT_EQ(fluid.bytes_sent, msg.bytes_sent);
  return (fluid.end - fluid.start).as_seconds() / (msg.end - msg.start).as_seconds();
}

const auto kH100 = compute::nccl_tuning("h100");

// The same for `algo`'s all-reduce over `servers` servers of 8 / `stride` GPUs of a group (every
// stride-th GPU of each), as NCCL's tuning plans it.
double all_reduce_fluid_over_message(const net::Topology& topo, Algorithm algo, int32_t servers,
                                     int32_t stride, Bytes size, bool analytical = false) {
  const int32_t local = 8 / stride, n = servers * local;
  const auto key = kH100.plan(Op::kAllReduce, n, local, size, algo);
  EXPECT_TRUE(fluid_supported(key));
  return fluid_over_message(topo, key, gpus(topo, 0, n, stride), size, analytical);
}

std::string shape(int32_t servers, int32_t local, Bytes size) {
  return std::to_string(servers * local) + " ranks, " + std::to_string(local) + " a server, " +
         std::to_string(size) + " bytes";
}

TEST(Fluid, RingsInOneServerTakeTheirMessageScheduleTime) {
  const auto topo = cluster("dgx-h100", 8);
  for (const Op op : {Op::kReduceScatter, Op::kAllGather, Op::kAllReduce}) {
    for (const Bytes size : {Bytes{0}, 64 * kKiB, 4 * kMiB, 256 * kMiB}) {
      const auto key = kH100.plan(op, 8, 8, size, Algorithm::kRing);
      expect_same(topo, key, gpus(topo, 0, 8, 1), size);
    }
  }
}

TEST(Fluid, RingsOfOneGpuPerServerTakeTheirMessageScheduleTime) {
  // GPU 0 of each of 8 servers: every hop crosses the network (NCCL's latencies, LL to Simple).
  const auto topo = cluster("dgx-h100", 64);
  for (const Op op : {Op::kReduceScatter, Op::kAllGather, Op::kAllReduce}) {
    for (const Bytes size : {4 * kKiB, 1 * kMiB, 64 * kMiB}) {
      const auto key = kH100.plan(op, 8, 1, size, Algorithm::kRing);
      expect_same(topo, key, gpus(topo, 0, 8, 8), size);
    }
  }
}

TEST(Fluid, RingsThatMixNvlinkAndNetworkHopsTakeTheirMessageScheduleTimeWithinABound) {
  // 2, 4 or 8 members per server (the data-parallel rings of TP 4, 2 and 1), rail-aligned over
  // 2 to 16 servers: exact where bandwidth or latency rules, up to 2% (8 members: 9%) faster
  // where the two are close (ring.cc, mixed_ring_walk).
  const auto topo = cluster("dgx-h100", 128);
  int exact = 0, cases = 0;
  for (const int32_t stride : {1, 2, 4}) {
    for (const int32_t n : {8, 32}) {
      for (const Op op : {Op::kReduceScatter, Op::kAllReduce}) {
        for (const Bytes size : {64 * kKiB, 1 * kMiB, 16 * kMiB, 64 * kMiB, 256 * kMiB}) {
          SCOPED_TRACE(std::to_string(n) + " ranks, stride " + std::to_string(stride) + ", " +
                       std::string(to_string(op)) + ", " + std::to_string(size) + " bytes");
          const auto key = kH100.plan(op, n, 8 / stride, size, Algorithm::kRing);
          ASSERT_TRUE(fluid_supported(key));
          const double ratio = fluid_over_message(topo, key, gpus(topo, 0, n, stride), size);
          EXPECT_LE(ratio, 1.0 + 1e-5);
          EXPECT_GE(ratio, stride == 1 ? 0.91 : 0.98);
          exact += std::abs(ratio - 1.0) < 1e-5;
          ++cases;
        }
      }
    }
  }
  EXPECT_GE(exact, cases / 2);
}

TEST(Fluid, RingsOfH800ServersTakeTheirMessageScheduleTimeWithinAWiderBound) {
  // An H800's 8 NVLinks (200 GB/s) carry about what its 8 channels' NICs do, so the NVLink
  // messages of a GPU's channels overlap most where latency and bandwidth are close: over 4
  // servers of 8 the fluid form takes 21% less time at 16 MiB, 11% at 4 and 64 MiB, and within
  // 3% at 1 and 256 MiB (ring.cc, mixed_ring_walk).
  const auto topo = cluster("h800-cluster", 32);
  const auto tuning = compute::nccl_tuning(topo);
  for (const Op op : {Op::kReduceScatter, Op::kAllReduce}) {
    for (const Bytes size : {1 * kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB, 256 * kMiB}) {
      SCOPED_TRACE(std::string(to_string(op)) + ", " + shape(4, 8, size));
      const auto key = tuning.plan(op, 32, 8, size, Algorithm::kRing);
      ASSERT_TRUE(fluid_supported(key));
      const double ratio = fluid_over_message(topo, key, gpus(topo, 0, 32, 1), size);
      EXPECT_LE(ratio, 1.0 + 1e-5);
      EXPECT_GE(ratio, 0.77);
      if (size == kMiB || size == 256 * kMiB) {
        EXPECT_GE(ratio, 0.96);
      }
    }
  }
}

TEST(Fluid, ChainTreesTakeTheirMessageScheduleTimeWithinABound) {
  // NCCL's Tree across servers of 2, 4 or 8 GPUs of a group (the data-parallel groups of TP 4, 2
  // and 1) on 2 to 64 servers: the first chunk's trip plus chunks - 1 periods of the slowest hop
  // (chain_tree.cc) stays within 10% fast and 5.5% slow of the message schedule, within 2% in a
  // third of the cases. With one GPU a server (TP 8's groups) the chains are single GPUs: within
  // 1% fast and 9% slow, the slowest at 1 MiB, whose 4-chunk pipelines the walk's whole periods
  // overstate; within 2% in half of the cases.
  const auto topo = cluster("dgx-h100", 512);
  int close = 0, cases = 0, close_single = 0, single = 0;
  for (const int32_t stride : {1, 2, 4, 8}) {
    for (const int32_t servers : {2, 5, 16, 64}) {
      for (const Bytes size : {64 * kKiB, 1 * kMiB, 16 * kMiB, 64 * kMiB, 256 * kMiB}) {
        if (servers == 64 && (stride > 1 || size > 16 * kMiB)) continue;  // kept short
        const int32_t local = 8 / stride;
        SCOPED_TRACE(shape(servers, local, size));
        const double ratio =
            all_reduce_fluid_over_message(topo, Algorithm::kChainTree, servers, stride, size);
        const bool is_close = std::abs(ratio - 1.0) < 0.02;
        if (local == 1) {
          EXPECT_GE(ratio, 0.99);
          EXPECT_LE(ratio, 1.09);
          close_single += is_close;
          ++single;
          continue;
        }
        EXPECT_GE(ratio, 0.90);
        EXPECT_LE(ratio, 1.055);
        close += is_close;
        ++cases;
      }
    }
  }
  EXPECT_GE(close, cases / 3);
  EXPECT_GE(close_single, single / 2);
}

TEST(Fluid, ChainTreesOfSeveralChannelsANicFillTheirPipelineAsTheMessageScheduleDoes) {
  // NCCL's tree over 32 Alps nodes: 24 channels, three channel pairs a NIC, whose trees send their
  // first 512 KiB chunks over each NIC together. Filling the pipeline is most of a 16 MiB call (two
  // chunks a channel); the fluid form charges each first chunk its third of the NIC as the
  // message schedule does (a whole NIC: 38% fast at 16 MiB), and stays within 3% from 16 to 256
  // MiB.
  const auto topo = cluster("alps-gh200", 128);
  const auto tuning = compute::nccl_tuning(topo);
  for (const Bytes size : {16 * kMiB, 64 * kMiB, 256 * kMiB}) {
    SCOPED_TRACE(size);
    const auto key = tuning.plan(Op::kAllReduce, 128, 4, size, Algorithm::kChainTree);
    ASSERT_EQ(key.protocol, Protocol::kSimple);
    ASSERT_EQ(key.channels, 12);
    ASSERT_TRUE(fluid_supported(key));
    const double ratio = fluid_over_message(topo, key, gpus(topo, 0, 128, 1), size);
    EXPECT_GE(ratio, 0.97);
    EXPECT_LE(ratio, 1.03);
  }
}

TEST(Fluid, ChainTreesOfMoreThanEightGpusAServerRunMessageByMessage) {
  // Past the 8 GPUs a server its bound is tested at, the chain-tree's fluid form ran 27-32% fast
  // over the 72-GPU chains of two GB200 NVL72 racks: those keep their message schedule.
  const auto gb200 = compute::nccl_tuning("gb200");
  EXPECT_FALSE(fluid_supported(gb200.plan(Op::kAllReduce, 144, 72, kGiB, Algorithm::kChainTree)));
  EXPECT_TRUE(fluid_supported(gb200.plan(Op::kAllReduce, 24, 8, kGiB, Algorithm::kChainTree)));
}

TEST(Fluid, NvlsTreesTakeTheirMessageScheduleTimeWithinABound) {
  // NCCL's NVLS-tree over 2 to 16 servers of 4 or 8 GPUs of a group: the first chunk's trip plus
  // chunks - 1 periods of the slowest connection (nvls_tree.cc) stays within 10% fast and 5%
  // slow of the message schedule (9.6% and 3.8% now), the fast end where the pipeline still fills
  // (16 MiB), and within 2% in more than half of the cases (17 of 24). On two servers, where
  // NCCL's ceiling makes the switch side bind, the NVLink port's share sets the period: without
  // it the fluid form ran 13% fast at 16 MiB. Outside these shapes it runs faster at 16 MiB over
  // 3, 4, 6 and 8 servers of 8 (11%, 17%, 14%, 13%): its period takes the slower of a connection's
  // message with its route latency and the port's share, where the message schedule's connections
  // (one message in flight each) partly pay both; charging both, it ran up to 18% slow.
  const auto topo = cluster("dgx-h100", 128);
  int close = 0, cases = 0;
  for (const int32_t stride : {1, 2}) {
    for (const int32_t servers : {2, 5, 16}) {
      for (const Bytes size : {64 * kKiB, 1 * kMiB, 16 * kMiB, 256 * kMiB}) {
        SCOPED_TRACE(shape(servers, 8 / stride, size));
        const double ratio =
            all_reduce_fluid_over_message(topo, Algorithm::kNvlsTree, servers, stride, size);
        EXPECT_GE(ratio, 0.90);
        EXPECT_LE(ratio, 1.05);
        close += std::abs(ratio - 1.0) < 0.02;
        ++cases;
      }
    }
  }
  EXPECT_GT(close, cases / 2);
}

TEST(Fluid, NvlsAllReducesTakeTheirMessageScheduleTimeWithinABound) {
  // NVLS inside a DGX H100 (3 to 8 GPUs) and a GB200 NVL72 rack (4 to 36): the first chunk's
  // reductions, chunks - 1 periods and the last chunk's multicasts (nvls.cc) take the message
  // schedule's time within 0.1% in one chunk, within 2% from 4 chunks on (a few hundred MiB),
  // and at most 18% longer in 2 or 3 chunks (16 MiB over 3 to 5 GPUs), never shorter. Without a
  // fluid form a TP 4 all-reduce without sequence parallelism ran message by message in every
  // group: Llama 3 405B at TP 4 on 256 H100s took 200 million events and 36 s, 0.2 s with
  // sequence parallelism.
  const std::pair<std::string, std::vector<int32_t>> domains[] = {{"dgx-h100", {3, 4, 5, 8}},
                                                                  {"gb200-nvl72", {4, 16, 36}}};
  for (const auto& [name, groups] : domains) {
    const auto topo = cluster(name, 72);
    const auto tuning = compute::nccl_tuning(name == "dgx-h100" ? "h100" : "gb200");
    for (const int32_t n : groups) {
      for (const Bytes size : {Bytes{0}, 64 * kKiB, 1 * kMiB, 16 * kMiB, 256 * kMiB}) {
        SCOPED_TRACE(name + ", " + std::to_string(n) + " GPUs, " + std::to_string(size) + " bytes");
        const auto key = tuning.plan(Op::kAllReduce, n, n, size, Algorithm::kNvls);
        ASSERT_TRUE(fluid_supported(key));
        const double ratio = fluid_over_message(topo, key, gpus(topo, 0, n, 1), size);
        EXPECT_GE(ratio, 0.999);
        EXPECT_LE(ratio, key.chunks == 1 ? 1.001 : key.chunks >= 4 ? 1.02 : 1.18);
      }
    }
  }
}

TEST(Fluid, TreesOverTheAnalyticalNetworkShareTheirPortsAsTheirMessagesDo) {
  // The analytical network shares a GPU's or NIC's port among the edges of one fluid transfer,
  // and a tree's fluid form sends each channel or shard as a lane of its own: its lanes, sent at
  // one instant, share the ports too. Without that two servers' NVLS-tree ran at 1,318 GB/s of
  // bus bandwidth at 1 GiB (0.35 of its message schedule), its chain-tree at 0.64. From 256 MiB,
  // where the bandwidth terms rule, both stay within 2% fast and 6% slow of their messages.
  const auto topo = cluster("dgx-h100", 128);
  for (const Algorithm algo : {Algorithm::kNvlsTree, Algorithm::kChainTree}) {
    for (const int32_t stride : {1, 2}) {
      for (const int32_t servers : {2, 5, 16}) {
        for (const Bytes size : {256 * kMiB, kGiB}) {
          SCOPED_TRACE(std::string(to_string(algo)) + ", " + shape(servers, 8 / stride, size));
          const double ratio =
              all_reduce_fluid_over_message(topo, algo, servers, stride, size, true);
          EXPECT_GE(ratio, 0.98);
          EXPECT_LE(ratio, 1.06);
        }
      }
    }
  }
}

TEST(Fluid, SendRecvTakesItsMessageScheduleTime) {
  // Ring attention's hop: every rank sends its buffer to the next, inside a server or across.
  const auto topo = cluster("dgx-h100", 64);
  for (const Bytes size : {Bytes{0}, 64 * kKiB, 64 * kMiB}) {
    expect_same(topo, kH100.plan(Op::kSendRecv, 8, 8, size), gpus(topo, 0, 8, 1), size);
    expect_same(topo, kH100.plan(Op::kSendRecv, 8, 1, size), gpus(topo, 0, 8, 8), size);
  }
}

TEST(Fluid, HierarchicalAllReduceTakesItsMessageScheduleTime) {
  for (const int32_t servers : {2, 8, 16}) {
    const auto topo = cluster("dgx-h100", 8 * servers);
    for (const Bytes size : {64 * kKiB, 1 * kMiB, 16 * kMiB}) {
      const auto key = kH100.plan(Op::kAllReduce, 8 * servers, 8, size, Algorithm::kHierarchical);
      expect_same(topo, key, gpus(topo, 0, 8 * servers, 1), size);
    }
  }
}

TEST(Fluid, MirroredCopiesTakeTheTimeOfSeparateRuns) {
  // GPU k of 8 servers, for k = 0..7: the members of eight folded TP groups, each on its rail.
  const auto topo = cluster("dgx-h100", 64);
  const auto key = kH100.plan(Op::kReduceScatter, 8, 1, 64 * kMiB, Algorithm::kRing);
  std::vector<net::VertexId> all;
  for (int32_t k = 0; k < 8; ++k)
    for (const auto v : gpus(topo, k, 8, 8)) all.push_back(v);
  expect_same(topo, key, all, 64 * kMiB, 8);
}

TEST(Fluid, EveryFluidFormTakesItsMessageScheduleTimeWhereItFits) {
  // Inside one server, one GPU per server, and two whole servers: every fluid form in the table
  // fits some of these and takes its message schedule's time wherever it fits.
  const auto topo = cluster("dgx-h100", 64);
  struct Shape {
    int32_t n, members_per_node, stride;
  };
  for (const AlgorithmInfo& a : algorithm_table()) {
    for (const OpForm& f : a.ops) {
      // Chain-trees, NVLS and NVLS-trees: their own bounds above.
      if (f.fluid.fits == nullptr || a.value == Algorithm::kChainTree ||
          a.value == Algorithm::kNvls || a.value == Algorithm::kNvlsTree)
        continue;
      SCOPED_TRACE(std::string(a.name) + " " + std::string(to_string(f.op)));
      int fitted = 0;
      for (const Shape s : {Shape{8, 8, 1}, Shape{8, 1, 8}, Shape{16, 8, 1}}) {
        // Rings over servers of several members: their own bound above.
        if (a.value == Algorithm::kRing && s.members_per_node > 1 && s.members_per_node < s.n)
          continue;
        for (const Bytes size : {64 * kKiB, 16 * kMiB}) {
          const ScheduleKey key = kH100.plan(f.op, s.n, s.members_per_node, size, a.value);
          if (!fluid_supported(key)) continue;
          ++fitted;
          expect_same(topo, key, gpus(topo, 0, s.n, s.stride), size);
        }
      }
      EXPECT_GT(fitted, 0);
    }
  }
}

TEST(Fluid, ThePlanCacheReusesAPlanOnlyForTheSameCall) {
  const auto topo = cluster("dgx-h100", 32);
  net::Routing routing(topo);
  Simulator sim;
  net::FlowNetwork network(sim, topo, routing);
  const auto key = kH100.plan(Op::kReduceScatter, 8, 2, 16 * kMiB, Algorithm::kRing);
  const auto even = gpus(topo, 0, 8, 4), odd = gpus(topo, 1, 8, 4);
  FluidPlanCache cache;
  const auto first = cache.plan(network, key, even, 16 * kMiB, 1);
  EXPECT_EQ(cache.plan(network, key, even, 16 * kMiB, 1), first);
  EXPECT_NE(cache.plan(network, key, odd, 16 * kMiB, 1), first);
  EXPECT_NE(cache.plan(network, key, even, 8 * kMiB, 1), first);
  // The cached plan is the one a fresh call builds.
  const FluidPlan fresh = plan_fluid_collective(network, key, even, 16 * kMiB);
  ASSERT_EQ(fresh.phases.size(), first->phases.size());
  EXPECT_EQ(fresh.phases[0][0].walk, first->phases[0][0].walk);
  EXPECT_EQ(fresh.stats.bytes_sent, first->stats.bytes_sent);
}

TEST(Fluid, SchedulesWithoutAFluidFormAreRefused) {
  const auto topo = cluster("dgx-h100", 16);
  // A rail-aligned ring in chunks through a window; a tree and all-to-all are not rings;
  // hierarchical chunks pipeline through the phases; a chain-tree inside one server is a chain
  // whose NVLink hops set its pace, which its fluid form leaves to the network.
  ScheduleKey chunked = kH100.plan(Op::kReduceScatter, 16, 8, 64 * kMiB, Algorithm::kRing);
  chunked.chunks = 4;
  chunked.window = 2;
  const std::vector<ScheduleKey> keys = {
      chunked,
      kH100.plan(Op::kAllReduce, 16, 1, 64 * kKiB, Algorithm::kTree),
      kH100.plan(Op::kAllToAll, 8, 8, 64 * kMiB),
      kH100.plan(Op::kAllReduce, 16, 8, 1 * kGiB, Algorithm::kHierarchical),
      kH100.plan(Op::kAllReduce, 8, 8, 64 * kMiB, Algorithm::kChainTree),
  };
  net::Routing routing(topo);
  Simulator sim;
  net::FlowNetwork network(sim, topo, routing);
  for (const auto& key : keys) {
    EXPECT_FALSE(fluid_supported(key)) << to_string(key.algo) << " " << to_string(key.op);
    const auto vertices = gpus(topo, 0, key.n, 1);
    EXPECT_THROW(run_fluid_collective(sim, network, key, vertices, 64 * kMiB, {}),
                 std::invalid_argument);
  }
}

TEST(Fluid, AVertexCountThatDoesNotMatchTheGroupIsRefused) {
  const auto topo = cluster("dgx-h100", 8);
  net::Routing routing(topo);
  Simulator sim;
  net::FlowNetwork network(sim, topo, routing);
  const auto key = kH100.plan(Op::kAllGather, 8, 8, kMiB, Algorithm::kRing);
  EXPECT_THROW(run_fluid_collective(sim, network, key, gpus(topo, 0, 7, 1), kMiB, {}),
               std::invalid_argument);
  EXPECT_THROW(run_fluid_collective(sim, network, key, gpus(topo, 0, 8, 1), -1, {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace cs::coll
