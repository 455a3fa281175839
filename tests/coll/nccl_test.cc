// NCCL's cost model (closed forms from tuning.cc), its protocol choice, and the simulated
// collectives it plans on DGX H100 servers, with each effect switched off in turn.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/fluid.h"
#include "sim/coll/nccl_model.h"
#include "sim/coll/nccl_plan.h"
#include "sim/coll/nccl_test_case.h"
#include "sim/compute/gpu_hardware.h"
#include "sim/net/topology_builder.h"

namespace cs::coll {
namespace {

// 8 H100 on one NVSwitch: 18 links x 20.6 GB/s = 370.8 GB/s, 6 rings at 60 GB/s duplicated.
NcclGraph one_h100_server() {
  return nccl_graph(GpuArch::kHopper, 8, 1, 18, 50, true);
}

TEST(NcclModel, GraphOfOneH100Server) {
  const NcclGraph g = one_h100_server();
  EXPECT_EQ(g.channels, 12);
  EXPECT_DOUBLE_EQ(g.bw_intra_gbps, 30.0);
  EXPECT_TRUE(g.nvls);
}

TEST(NcclModel, BlackwellRowsAreNcclsSm100Figures) {
  // topo.h SM100_NVLINK_BW 40.1 GB/s per NVLink 5 link (50 GB/s raw); sm100SpeedArrayIntra tops
  // at 90 GB/s: 18 x 40.1 = 721.8 GB/s carries 8 rings, doubled to 16 channels at 45 GB/s.
  EXPECT_EQ(parse_gpu_arch("blackwell"), GpuArch::kBlackwell);
  EXPECT_DOUBLE_EQ(nvlink_payload_efficiency(GpuArch::kBlackwell), 40.1 / 50.0);
  EXPECT_DOUBLE_EQ(nvls_switch_efficiency(GpuArch::kBlackwell), 0.74);
  const NcclGraph g = nccl_graph(GpuArch::kBlackwell, 8, 1, 18, 50, true);
  EXPECT_EQ(g.channels, 16);
  EXPECT_DOUBLE_EQ(g.bw_intra_gbps, 45.0);
  EXPECT_TRUE(g.nvls);
  // Across servers a 400 Gb/s NIC gets sm100SpeedArrayInter's 48 GB/s, an 800 Gb/s one its 96.
  EXPECT_DOUBLE_EQ(nccl_graph(GpuArch::kBlackwell, 16, 2, 18, 50, true).bw_inter_gbps * 16 / 8,
                   48.0);
  EXPECT_DOUBLE_EQ(nccl_graph(GpuArch::kBlackwell, 16, 2, 18, 100, true).bw_inter_gbps * 16 / 8,
                   96.0);
  EXPECT_THROW(parse_gpu_arch("rubin"), std::invalid_argument);
}

TEST(NcclModel, RingClosedForms) {
  const NcclGraph g = one_h100_server();
  const double ratio = 8.0 / 14.0;  // ranks / ring steps of an all-reduce
  EXPECT_NEAR(model_bandwidth_gbps(Op::kAllReduce, NcclAlgo::kRing, Protocol::kSimple, g),
              360 * ratio, 1e-9);
  // LL: half the bus bandwidth, capped by Hopper's one-node llMaxBw of 141 GB/s (NCCL 2.28.3).
  EXPECT_NEAR(model_bandwidth_gbps(Op::kAllReduce, NcclAlgo::kRing, Protocol::kLl, g), 141 * ratio,
              1e-9);
  EXPECT_NEAR(model_bandwidth_gbps(Op::kAllReduce, NcclAlgo::kRing, Protocol::kLl128, g),
              360 * 0.92 * ratio, 1e-9);
  // baseLat + 2(n-1) x hwLat.
  EXPECT_NEAR(model_latency_us(Op::kAllReduce, NcclAlgo::kRing, Protocol::kSimple, g),
              8.4 + 14 * 3.4, 1e-9);
  EXPECT_NEAR(model_latency_us(Op::kAllReduce, NcclAlgo::kRing, Protocol::kLl, g), 6.6 + 14 * 0.6,
              1e-9);
  EXPECT_NEAR(model_latency_us(Op::kAllGather, NcclAlgo::kRing, Protocol::kLl128, g),
              14.0 + 7 * 1.9, 1e-9);
}

// Where two protocols cost the same: lat_a + S / bw_a = lat_b + S / bw_b.
double crossover_bytes(Protocol a, Protocol b, const NcclGraph& g) {
  const auto lat = [&](Protocol p) {
    return model_latency_us(Op::kAllReduce, NcclAlgo::kRing, p, g);
  };
  const auto inv = [&](Protocol p) {
    return 1.0 / (1000.0 * model_bandwidth_gbps(Op::kAllReduce, NcclAlgo::kRing, p, g));
  };
  return (lat(b) - lat(a)) / (inv(a) - inv(b));
}

TEST(NcclModel, ProtocolBySizeFollowsTheCrossovers) {
  const NcclGraph g = one_h100_server();
  NcclRestrict ring;
  ring.fix_algo = true;
  const double ll_to_ll128 = crossover_bytes(Protocol::kLl, Protocol::kLl128, g);
  const double ll128_to_simple = crossover_bytes(Protocol::kLl128, Protocol::kSimple, g);
  ASSERT_LT(ll_to_ll128, ll128_to_simple);
  const auto pick = [&](double bytes) {
    return choose_nccl(Op::kAllReduce, g, static_cast<Bytes>(bytes), ring).protocol;
  };
  EXPECT_EQ(pick(8), Protocol::kLl);
  EXPECT_EQ(pick(ll_to_ll128 * 0.9), Protocol::kLl);
  EXPECT_EQ(pick(ll_to_ll128 * 1.1), Protocol::kLl128);
  EXPECT_EQ(pick(ll128_to_simple * 0.9), Protocol::kLl128);
  EXPECT_EQ(pick(ll128_to_simple * 1.1), Protocol::kSimple);
  EXPECT_EQ(pick(1 << 30), Protocol::kSimple);
}

TEST(NcclModel, NvlsOnlyWhereNcclRunsIt) {
  const NcclGraph g = one_h100_server();
  EXPECT_EQ(choose_nccl(Op::kAllReduce, g, Bytes{1} << 30).algo, NcclAlgo::kNvls);
  EXPECT_NE(choose_nccl(Op::kAllGather, g, Bytes{1} << 30).algo, NcclAlgo::kNvls);
  const NcclGraph a100 = nccl_graph(GpuArch::kAmpere, 8, 1, 12, 25, true);
  EXPECT_FALSE(a100.nvls);
  // Several servers: NVLS inside each, NVLS-tree between them (all-reduce only); none with two
  // GPUs or fewer per server, nor with one GPU per server.
  const NcclGraph two = nccl_graph(GpuArch::kHopper, 16, 2, 18, 50, true);
  EXPECT_TRUE(two.nvls);
  EXPECT_EQ(model_time_us(Op::kAllReduce, NcclAlgo::kNvls, Protocol::kSimple, two, 1 << 30),
            std::numeric_limits<double>::infinity());
  EXPECT_LT(model_time_us(Op::kAllReduce, NcclAlgo::kNvlsTree, Protocol::kSimple, two, 1 << 30),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(model_time_us(Op::kAllGather, NcclAlgo::kNvlsTree, Protocol::kSimple, two, 1 << 30),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(model_time_us(Op::kAllReduce, NcclAlgo::kNvlsTree, Protocol::kSimple, g, 1 << 30),
            std::numeric_limits<double>::infinity());
  EXPECT_FALSE(nccl_graph(GpuArch::kHopper, 16, 8, 18, 50, true).nvls);
  EXPECT_FALSE(nccl_graph(GpuArch::kHopper, 16, 16, 18, 50, true).nvls);
}

TEST(NcclModel, NvlsLoopsFollowNcclsChunking) {
  // 16 CTAs x 8 heads x a chunk of 128 KiB from 1 GiB, 64 KiB from 64 MiB, 32 KiB from 8 MiB
  // and 16 KiB below (calcCollChunking's cuts at 64, 8 and 2 x the concurrent ops' chunks).
  EXPECT_EQ(nvls_loop_bytes(512 * kKiB, 8), 2 * kMiB);
  EXPECT_EQ(nvls_loop_bytes(8 * kMiB - 1, 8), 2 * kMiB);
  EXPECT_EQ(nvls_loop_bytes(8 * kMiB, 8), 4 * kMiB);
  EXPECT_EQ(nvls_loop_bytes(64 * kMiB, 8), 8 * kMiB);
  EXPECT_EQ(nvls_loop_bytes(kGiB, 8), 16 * kMiB);
  EXPECT_EQ(nvls_loop_bytes(16 * kGiB, 8), 16 * kMiB);
  // Fewer heads, smaller loops and cuts: 5 GPUs at 4 GiB take 128 KiB chunks.
  EXPECT_EQ(nvls_loop_bytes(4 * kGiB, 5), 16 * 5 * 128 * kKiB);
  // Measured on Hopper only.
  EXPECT_TRUE(nvls_loop_figures(GpuArch::kHopper).has_value());
  EXPECT_FALSE(nvls_loop_figures(GpuArch::kBlackwell).has_value());
  EXPECT_FALSE(nvls_loop_figures(GpuArch::kAmpere).has_value());
}

TEST(NcclModel, NvlsTreeLoopsFollowNcclsChunking) {
  // 16 CTAs x 8 heads x a chunk of 128 KiB from 64 MiB, 64 KiB from 8 MiB and 32 KiB below on
  // two servers (calcCollChunking's cuts at 4 and 1 x the concurrent ops' chunks); from four
  // servers the chunk is at most 64 KiB.
  EXPECT_EQ(nvls_tree_loop_bytes(kMiB, 8, 2), 4 * kMiB);
  EXPECT_EQ(nvls_tree_loop_bytes(8 * kMiB - 1, 8, 2), 4 * kMiB);
  EXPECT_EQ(nvls_tree_loop_bytes(8 * kMiB, 8, 2), 8 * kMiB);
  EXPECT_EQ(nvls_tree_loop_bytes(64 * kMiB - 1, 8, 2), 8 * kMiB);
  EXPECT_EQ(nvls_tree_loop_bytes(64 * kMiB, 8, 2), 16 * kMiB);
  EXPECT_EQ(nvls_tree_loop_bytes(Bytes{16} << 30, 8, 2), 16 * kMiB);
  EXPECT_EQ(nvls_tree_loop_bytes(Bytes{16} << 30, 8, 4), 8 * kMiB);
  EXPECT_EQ(nvls_tree_loop_bytes(8 * kMiB - 1, 8, 248), 4 * kMiB);
  EXPECT_EQ(nvls_tree_loop_bytes(kMiB, 4, 2), 2 * kMiB);
}

TEST(NcclModel, OneH100ServerMovesFromTheLlRingToNvlsBetweenOneAndTwoMib) {
  // NCCL 2.28.3's terms: the LL ring at 15 us + S / 80.6 GB/s, NVLS at 25 us + S / its bandwidth.
  // NCCL 2.26.2 logs "RING LL" to 1 MB and "NVLS SIMPLE" from 2 MB on 8 H100s (nccl-tests #309),
  // and the published times agree (27.4 us at 1 MiB, where forced NVLS takes 42.0).
  const NcclGraph g = one_h100_server();
  const NcclChoice one = choose_nccl(Op::kAllReduce, g, kMiB);
  EXPECT_EQ(one.algo, NcclAlgo::kRing);
  EXPECT_EQ(one.protocol, Protocol::kLl);
  EXPECT_EQ(choose_nccl(Op::kAllReduce, g, 2 * kMiB).algo, NcclAlgo::kNvls);
  EXPECT_DOUBLE_EQ(model_latency_us(Op::kAllReduce, NcclAlgo::kNvls, Protocol::kSimple, g), 25);
  // NVLS's bandwidth: 2 x bwIntra x nvlsEfficiency x (nCh - 1) / nCh per channel, no network.
  EXPECT_DOUBLE_EQ(
      model_bandwidth_gbps(Op::kAllReduce, NcclAlgo::kNvls, Protocol::kSimple, g),
      g.channels * 2 * g.bw_intra_gbps * 0.85 * (g.channels - 1) / g.channels * 8 / 14);
}

TEST(NcclModel, SmallCallsRunOnTheChannelsTheirBytesFill) {
  // 12 channels of 512 threads; the LL ring's 8 x 8 bytes a thread on 8 ranks fill all of them
  // from 384 KiB, LL128's 8 bytes of 640 threads from 60 KiB, Simple's 64 from 384 KiB.
  EXPECT_DOUBLE_EQ(small_call_share(64 * kKiB, Protocol::kLl, 8, 12), 1.0 / 6);
  EXPECT_DOUBLE_EQ(small_call_share(256 * kKiB, Protocol::kLl, 8, 12), 2.0 / 3);
  EXPECT_DOUBLE_EQ(small_call_share(384 * kKiB, Protocol::kLl, 8, 12), 1.0);
  EXPECT_DOUBLE_EQ(small_call_share(kGiB, Protocol::kLl, 8, 12), 1.0);
  EXPECT_DOUBLE_EQ(small_call_share(30 * kKiB, Protocol::kLl128, 8, 12), 0.5);
  EXPECT_DOUBLE_EQ(small_call_share(192 * kKiB, Protocol::kSimple, 8, 12), 0.5);
  // Never below 3 warps of one channel.
  EXPECT_DOUBLE_EQ(small_call_share(8, Protocol::kLl, 8, 12), 96.0 / (12 * 512));
}

TEST(NcclModel, NvlsTreeTermsAreNcclsOwn) {
  // ncclTopoTuneModel: latency hwLat[NVLink][NVLSTree] + 2 log2(nodes) x hwLat[NET][NVLSTree]
  // = 25 (NCCL 2.28.3) + 2 x 3 x 14 us on 8 servers.
  const NcclGraph eight = nccl_graph(GpuArch::kHopper, 64, 8, 18, 50, true);
  EXPECT_DOUBLE_EQ(model_latency_us(Op::kAllReduce, NcclAlgo::kNvlsTree, Protocol::kSimple, eight),
                   25 + 2 * 3 * 14);
  // Bandwidth (src/tuning/nvls.cc of current releases): per channel the least of the switch's
  // two-phase rate 2 x bwIntra x nvlsEfficiency x (nCh - 1) / nCh, the network's (twice bwInter
  // on two servers) and perChMaxNVLSTreeBws (Hopper 57.7 on two servers, 45.5 past), to
  // algorithm bandwidth as a ring's.
  const auto switch_rate = [](const NcclGraph& g) {
    return 2 * g.bw_intra_gbps * 0.85 * (g.channels - 1) / g.channels;
  };
  EXPECT_DOUBLE_EQ(
      model_bandwidth_gbps(Op::kAllReduce, NcclAlgo::kNvlsTree, Protocol::kSimple, eight),
      eight.channels * std::min({switch_rate(eight), eight.bw_inter_gbps, 45.5}) * 64 / 126);
  const NcclGraph two = nccl_graph(GpuArch::kHopper, 16, 2, 18, 50, true);
  EXPECT_DOUBLE_EQ(
      model_bandwidth_gbps(Op::kAllReduce, NcclAlgo::kNvlsTree, Protocol::kSimple, two),
      two.channels * std::min({switch_rate(two), 2 * two.bw_inter_gbps, 57.7}) * 16 / 30);
  // Two B200 servers: NVLS-tree's network term (twice bwInter) beats the ring's NICs, so NCCL
  // picks it for large all-reduces, as it runs there (coreweave/nccl-tests pull request 92:
  // 690 GB/s bus bandwidth at 8 GiB, above the 8 NICs' ring).
  const NcclGraph b200x2 = nccl_graph(GpuArch::kBlackwell, 16, 2, 18, 50, true);
  EXPECT_EQ(choose_nccl(Op::kAllReduce, b200x2, Bytes{8} << 30).algo, NcclAlgo::kNvlsTree);
  // Log-depth latency: over 128 servers a fraction of the ring's 2 x 1023 steps.
  const NcclGraph many = nccl_graph(GpuArch::kHopper, 1024, 128, 18, 50, true);
  EXPECT_LT(model_latency_us(Op::kAllReduce, NcclAlgo::kNvlsTree, Protocol::kSimple, many),
            0.05 * model_latency_us(Op::kAllReduce, NcclAlgo::kRing, Protocol::kSimple, many));
}

TEST(NcclModel, RingsCrossServersOnAsManyNicsAsNvlinkLeavesRoomFor) {
  // One NIC per channel at the inter speed (48 GB/s for 400 Gb/s, 96 for 800), each channel
  // crossing every GPU's NVLink but its NIC's: floor(NVLink / speed) + 1, at most 32.
  EXPECT_EQ(rail_channels(GpuArch::kHopper, 18, 50), 8);      // 370.8 / 48: DGX H100's 8 NICs
  EXPECT_EQ(rail_channels(GpuArch::kBlackwell, 18, 50), 16);  // 721.8 / 48
  EXPECT_EQ(rail_channels(GpuArch::kBlackwell, 18, 100), 8);  // 721.8 / 96 (ConnectX-8)
  EXPECT_EQ(rail_channels(GpuArch::kAmpere, 12, 25), 11);     // 240 / 24
  // A GB200 NVL72 rack's ring over its 72 GPUs crosses racks on 16 NICs; NCCL's model counts
  // the bandwidth of those 16 only, and the plan runs 16 channels.
  const NcclGraph racks = nccl_graph(GpuArch::kBlackwell, 1440, 20, 18, 50, false);
  EXPECT_DOUBLE_EQ(racks.bw_inter_gbps * racks.channels, 16 * 48.0);
  const NcclTuning gb200 = compute::nccl_tuning("gb200");
  EXPECT_EQ(gb200.plan(Op::kAllReduce, 1440, 72, Bytes{1} << 30, Algorithm::kRing).channels, 16);
  EXPECT_EQ(
      compute::nccl_tuning("h100").plan(Op::kAllReduce, 64, 8, 1 << 30, Algorithm::kRing).channels,
      8);
}

TEST(NcclModel, WireFactors) {
  EXPECT_DOUBLE_EQ(protocol_wire_factor(Protocol::kLl), 2.0);
  EXPECT_DOUBLE_EQ(protocol_wire_factor(Protocol::kLl128), 128.0 / 120.0);
  EXPECT_DOUBLE_EQ(protocol_wire_factor(Protocol::kSimple), 1.0);
  EXPECT_DOUBLE_EQ(nvlink_payload_efficiency(GpuArch::kHopper), 20.6 / 25);
  EXPECT_DOUBLE_EQ(nvls_switch_efficiency(GpuArch::kHopper), 0.85);
  EXPECT_DOUBLE_EQ(nvls_switch_efficiency(GpuArch::kAmpere), 0.0);
  EXPECT_DOUBLE_EQ(net_transport_efficiency(), 0.96);
  EXPECT_THROW(parse_protocol("fast"), std::invalid_argument);
}

// A collective of `bytes` on `servers` DGX H100 servers (all their GPUs), simulated.
struct Result {
  ScheduleKey key;
  double busbw_gbytes_per_s = 0;
  double time_us = 0;
};
Result simulate(Op op, int32_t servers, Bytes bytes, NcclSettings settings = {},
                Algorithm algo = Algorithm::kAuto) {
  const net::Topology topo =
      net::build_topology(net::resolve_topology("dgx-h100"), 8 * servers, "dgx-h100");
  const NcclTestResult r =
      run_nccl_test(topo, compute::nccl_tuning(topo.gpu_type, settings), op, bytes, 0, algo);
  return {r.key, r.busbw_gbytes_per_s, r.time.as_us()};
}

constexpr Bytes kGiB = Bytes{1} << 30;

TEST(NcclSimulated, RingAllReduceOnOneH100ServerAsNcclTestsMeasure) {
  // nccl-tests issue 212: ~370 GB/s bus bandwidth with NCCL_ALGO=RING (line rate 450).
  const Result ring = simulate(Op::kAllReduce, 1, kGiB, {}, Algorithm::kRing);
  EXPECT_EQ(ring.key.protocol, Protocol::kSimple);
  EXPECT_GE(ring.busbw_gbytes_per_s, 340);
  EXPECT_LE(ring.busbw_gbytes_per_s, 400);
  // Without NVLink's packet overhead the ring runs at line rate.
  NcclSettings off;
  off.nvlink_overhead = false;
  EXPECT_GT(simulate(Op::kAllReduce, 1, kGiB, off, Algorithm::kRing).busbw_gbytes_per_s, 430);
}

TEST(NcclSimulated, NvlsBeatsTheRingAndCanBeSwitchedOff) {
  const Result nvls = simulate(Op::kAllReduce, 1, kGiB);
  EXPECT_EQ(nvls.key.algo, Algorithm::kNvls);
  EXPECT_GT(nvls.busbw_gbytes_per_s, 440);
  NcclSettings off;
  off.nvls = false;
  const Result ring = simulate(Op::kAllReduce, 1, kGiB, off);
  EXPECT_NE(ring.key.algo, Algorithm::kNvls);
  EXPECT_LT(ring.busbw_gbytes_per_s, 400);
}

TEST(NcclPlan, NvlsWireIsTheMultimemTrafficAtTheSwitchRate) {
  // Per GPU link and direction NVLS moves (n+1)/n of the buffer (multimem.ld_reduce reads every
  // shard from every GPU, multimem.st multicasts every sum to all), where the schedule's messages
  // carry 2(n-1)/n; the switch sustains nvls_switch_efficiency of the link rate (with NVLS's
  // measured loops off: NcclPlan.OneServersNvlsRunsInNcclsLoops).
  // Both only on NVLink hops: NVLS-tree's network hops carry their messages' bytes.
  NcclSettings derated;
  derated.nvls_loops = false;
  const NcclTuning tuning = compute::nccl_tuning("h100", derated);
  const double link = 20.6 / 25;
  for (int32_t n : {4, 8}) {
    const ScheduleKey key = tuning.plan(Op::kAllReduce, n, n, kGiB);
    ASSERT_EQ(key.algo, Algorithm::kNvls);
    EXPECT_DOUBLE_EQ(key.wire.byte_factor, 1.0);
    EXPECT_DOUBLE_EQ(key.wire.nvlink_efficiency, link * 0.85 / ((n + 1.0) / (2.0 * (n - 1)))) << n;
  }
  // (NVLS-tree's per-channel ceiling aside: NcclSimulated.NvlsTreeOnHopperServers...)
  NcclSettings no_ceiling;
  no_ceiling.nvls_tree_ceiling = false;
  const ScheduleKey tree = compute::nccl_tuning("h100", no_ceiling)
                               .plan(Op::kAllReduce, 16, 8, kGiB, Algorithm::kNvlsTree);
  EXPECT_DOUBLE_EQ(tree.wire.nvlink_efficiency, link * 0.85 / (9.0 / 14.0));
  EXPECT_DOUBLE_EQ(tree.wire.net_efficiency, 0.96);
  EXPECT_DOUBLE_EQ(tree.wire.byte_factor, 1.0);
  NcclSettings off = derated;
  off.nvls_efficiency = false;
  EXPECT_DOUBLE_EQ(
      compute::nccl_tuning("h100", off).plan(Op::kAllReduce, 8, 8, kGiB).wire.nvlink_efficiency,
      link / (9.0 / 14.0));
}

TEST(NcclPlan, OneServersNvlsRunsInNcclsLoops) {
  // 16 MiB on 8 H100s: 4 loops of 4 MiB through three warp groups, 6 stage-steps. The schedule
  // moves the bytes in one piece at the switch's measured 0.92 of the links; the launch latency
  // carries the call (6.2 us), each stage-step's sync (8 heads x 0.65 us) and the two extra
  // loops' bytes.
  const NcclTuning tuning = compute::nccl_tuning("h100");
  const ScheduleKey key = tuning.plan(Op::kAllReduce, 8, 8, 16 * kMiB);
  ASSERT_EQ(key.algo, Algorithm::kNvls);
  EXPECT_EQ(key.chunks, 1);
  EXPECT_EQ(key.window, 1);
  const double link = 20.6 / 25;
  EXPECT_DOUBLE_EQ(key.wire.nvlink_efficiency, link * 0.92 / (9.0 / 14.0));
  const double rate = 450e3 * key.wire.nvlink_efficiency * 8 / 14;  // bytes per us
  EXPECT_NEAR(key.wire.launch_latency.as_us(), 6.2 + 6 * 8 * 0.65 + 8.0 * kMiB / rate, 1e-6);
  EXPECT_EQ(key.wire.intra_step_latency, Time{});
  // Off: NCCL's derating and its NVLS latency, half on each phase.
  NcclSettings off;
  off.nvls_loops = false;
  const ScheduleKey derated =
      compute::nccl_tuning("h100", off).plan(Op::kAllReduce, 8, 8, 16 * kMiB);
  EXPECT_DOUBLE_EQ(derated.wire.nvlink_efficiency, link * 0.85 / (9.0 / 14.0));
  EXPECT_DOUBLE_EQ(derated.wire.intra_step_latency.as_us(), 12.5);
  // Without NCCL's latencies the loops' syncs go; their bytes stay.
  NcclSettings quiet;
  quiet.step_latency = false;
  EXPECT_NEAR(compute::nccl_tuning("h100", quiet)
                  .plan(Op::kAllReduce, 8, 8, 16 * kMiB)
                  .wire.launch_latency.as_us(),
              8.0 * kMiB / rate, 1e-6);
  // Blackwell's NVLS has no measured loops: NCCL's derating.
  const NcclTuning b200 = compute::nccl_tuning("b200");
  EXPECT_EQ(
      b200.plan(Op::kAllReduce, 8, 8, 16 * kMiB, Algorithm::kNvls).wire.intra_step_latency.as_us(),
      12.5);
}

TEST(NcclPlan, BlackwellCopiesReachTheMeasuredShareOfNcclsNvlinkFigure) {
  // A ring, a tree's NVLink chain, all-to-all and send/recv move their bytes at 0.95 of NCCL's
  // 40.1 of 50 GB/s per link on Blackwell (gpu.proto nvlink_copy_efficiency); NVLS keeps the
  // switch rate; Hopper keeps NCCL's 20.6 of 25; off with the NVLink overhead effect.
  const NcclTuning gb200 = compute::nccl_tuning("gb200");
  const double link = 40.1 / 50;
  EXPECT_DOUBLE_EQ(
      gb200.plan(Op::kAllReduce, 4, 4, 8 * kGiB, Algorithm::kRing).wire.nvlink_efficiency,
      link * 0.95);
  EXPECT_DOUBLE_EQ(gb200.plan(Op::kAllToAll, 8, 8, kGiB).wire.nvlink_efficiency, link * 0.95);
  EXPECT_DOUBLE_EQ(
      gb200.plan(Op::kAllReduce, 8, 8, 8 * kGiB, Algorithm::kNvls).wire.nvlink_efficiency,
      link * 0.74 / (9.0 / 14.0));
  EXPECT_DOUBLE_EQ(compute::nccl_tuning("h100")
                       .plan(Op::kAllReduce, 8, 8, kGiB, Algorithm::kRing)
                       .wire.nvlink_efficiency,
                   20.6 / 25);
  NcclSettings off;
  off.nvlink_overhead = false;
  EXPECT_DOUBLE_EQ(compute::nccl_tuning("gb200", off)
                       .plan(Op::kAllReduce, 4, 4, 8 * kGiB, Algorithm::kRing)
                       .wire.nvlink_efficiency,
                   1.0);
}

TEST(NcclSimulated, NvlsBusBandwidthIsTheSwitchsClosedForm) {
  // 8 x H100, 8 GiB: algbw = 18 x 20.6 GB/s x 0.85 / (9/8), busBw = algbw x 2 x 7/8 = 490 GB/s
  // (NVIDIA: ~480, nccl-tests issue 212); at full switch rate it would be 577.
  // NVLS's measured loops off (NcclSimulated.OneServersNvlsTakesItsLoopsTime has them).
  const double link = 18 * 20.6;
  NcclSettings derated;
  derated.nvls_loops = false;
  const Result nvls = simulate(Op::kAllReduce, 1, 8 * kGiB, derated);
  ASSERT_EQ(nvls.key.algo, Algorithm::kNvls);
  EXPECT_NEAR(nvls.busbw_gbytes_per_s, link * 0.85 / 1.125 * 1.75, 0.01 * 490);
  NcclSettings off = derated;
  off.nvls_efficiency = false;
  EXPECT_NEAR(simulate(Op::kAllReduce, 1, 8 * kGiB, off).busbw_gbytes_per_s, link / 1.125 * 1.75,
              0.01 * 577);
}

TEST(NcclSimulated, OneServersNvlsTakesItsLoopsTime) {
  // Published 8 x H100 all-reduce times, us (results/collectives/nccl_tests_published.csv): NVLS
  // from 2 MiB by NCCL's choice (NVIDIA's NCCL recipe, the figures' source), and forced below
  // (Azure ND H100 v5, NCCL_ALGO=NVLS), where a call shorter than a loop takes a whole one.
  EXPECT_NEAR(simulate(Op::kAllReduce, 1, 2 * kMiB).time_us, 42.21, 0.05 * 42.21);
  EXPECT_NEAR(simulate(Op::kAllReduce, 1, 16 * kMiB).time_us, 123.8, 0.05 * 123.8);
  EXPECT_NEAR(simulate(Op::kAllReduce, 1, 256 * kMiB).time_us, 1112.5, 0.05 * 1112.5);
  const double forced = simulate(Op::kAllReduce, 1, 512 * kKiB, {}, Algorithm::kNvls).time_us;
  EXPECT_NEAR(forced, 43.0, 0.05 * 43.0);
  EXPECT_NEAR(simulate(Op::kAllReduce, 1, kMiB, {}, Algorithm::kNvls).time_us, forced, 1e-3);
  // NCCL runs its LL ring at 1 MiB (27.4 us published).
  const Result one = simulate(Op::kAllReduce, 1, kMiB);
  EXPECT_EQ(one.key.algo, Algorithm::kRing);
  EXPECT_NEAR(one.time_us, 27.37, 0.1 * 27.37);
  // Off, NCCL's derating alone runs 16 MiB a third faster than measured.
  NcclSettings off;
  off.nvls_loops = false;
  EXPECT_LT(simulate(Op::kAllReduce, 1, 16 * kMiB, off).time_us, 0.7 * 123.8);
}

TEST(NcclSimulated, SmallRingCallsOnOneServerTakeTheirChannelsTime) {
  // NVIDIA's recipe on 8 H100s, NCCL's LL ring: 19.54 us at 64 KiB, 20.43 at 256 KiB. On all 12
  // channels at once the simulated calls took 15.6 and 17.5.
  EXPECT_NEAR(simulate(Op::kAllReduce, 1, 64 * kKiB).time_us, 19.54, 0.1 * 19.54);
  EXPECT_NEAR(simulate(Op::kAllReduce, 1, 256 * kKiB).time_us, 20.43, 0.1 * 20.43);
  NcclSettings off;
  off.small_calls = false;
  EXPECT_LT(simulate(Op::kAllReduce, 1, 64 * kKiB, off).time_us, 16.5);
  // Still never faster for more bytes.
  for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter}) {
    double before = 0;
    for (double size = 1 * kKiB; size < 8 * kMiB; size *= 1.3) {
      const double t = simulate(op, 1, static_cast<Bytes>(size)).time_us;
      EXPECT_GE(t, 0.99 * before) << to_string(op) << " at " << size << " B";
      before = t;
    }
  }
}

TEST(NcclSimulated, NvlsTreeOnHopperServersRunsWithinNcclsPerChannelCeiling) {
  // Two H100 servers, 8 GiB: NVLS-tree's 8 channels (one per GPU) of at most 57.7 GB/s each
  // (perChMaxNVLSTreeBws) give 461.6 GB/s of bus bandwidth (measured 430 to 470). Without the
  // ceiling the switch sets it: one server's NVLS algbw, 18 x 20.6 x 0.85 / (9/8) = 280 GB/s,
  // 525 of bus bandwidth over 16 ranks.
  const Result two = simulate(Op::kAllReduce, 2, 8 * kGiB);
  ASSERT_EQ(two.key.algo, Algorithm::kNvlsTree);
  EXPECT_NEAR(two.busbw_gbytes_per_s, 8 * 57.7, 0.01 * 461.6);
  NcclSettings off;
  off.nvls_tree_ceiling = false;
  EXPECT_NEAR(simulate(Op::kAllReduce, 2, 8 * kGiB, off).busbw_gbytes_per_s,
              18 * 20.6 * 0.85 / 1.125 * 2 * 15 / 16, 0.01 * 525);
  // Past two servers each NIC carries twice the tree traffic and binds first: the ceiling,
  // 8 x 45.5 GB/s of bus bandwidth, slows the NICs (from 4 x 48 GB/s of algbw) and not the switch.
  const NcclTuning h100 = compute::nccl_tuning("h100"),
                   h100_off = compute::nccl_tuning("h100", off);
  const ScheduleKey four = h100.plan(Op::kAllReduce, 32, 8, 8 * kGiB, Algorithm::kNvlsTree);
  const ScheduleKey four_off = h100_off.plan(Op::kAllReduce, 32, 8, 8 * kGiB, Algorithm::kNvlsTree);
  EXPECT_DOUBLE_EQ(four.wire.nvlink_efficiency, four_off.wire.nvlink_efficiency);
  EXPECT_NEAR(four.wire.net_efficiency, 0.96 * (8 * 45.5 * 32 / 62) / (4 * 48), 1e-9);
  // The ceiling in algorithm bandwidth; none on one server, nor on Blackwell.
  EXPECT_NEAR(nvls_tree_ceiling_gbps(GpuArch::kHopper, 16, 2, 8), 8 * 57.7 * 16 / 30, 1e-9);
  EXPECT_NEAR(nvls_tree_ceiling_gbps(GpuArch::kHopper, 64, 8, 8), 8 * 45.5 * 64 / 126, 1e-9);
  EXPECT_EQ(nvls_tree_ceiling_gbps(GpuArch::kHopper, 8, 1, 8), 0);
  EXPECT_EQ(nvls_tree_ceiling_gbps(GpuArch::kBlackwell, 16, 2, 8), 0);
  const NcclTuning b200 = compute::nccl_tuning("b200");
  EXPECT_DOUBLE_EQ(
      b200.plan(Op::kAllReduce, 16, 8, 8 * kGiB, Algorithm::kNvlsTree).wire.nvlink_efficiency,
      compute::nccl_tuning("b200", off)
          .plan(Op::kAllReduce, 16, 8, 8 * kGiB, Algorithm::kNvlsTree)
          .wire.nvlink_efficiency);
}

TEST(NcclPlan, NvlsTreeAcrossServersRunsInNcclsLoops) {
  // 16 MiB on two H100 servers: 2 loops of 8 MiB (64 KiB chunks), 4 loop-steps. The wire keeps
  // NCCL's per-channel ceiling, which stands for the loops at their largest chunk (16 MiB) with
  // their syncs (8 heads x 0.65 us); a loop's bytes move at the rest. The launch latency carries
  // the call (6.2 us), NCCL's network latency per tree hop (2 x 14 us) and the loop-steps beyond
  // the bytes the schedule moves at the ceiling.
  const NcclTuning tuning = compute::nccl_tuning("h100");
  const ScheduleKey key = tuning.plan(Op::kAllReduce, 16, 8, 16 * kMiB);
  ASSERT_EQ(key.algo, Algorithm::kNvlsTree);
  const double rate = nvls_tree_ceiling_gbps(GpuArch::kHopper, 16, 2, 8) * 1e3;  // bytes per us
  const double sync = 8 * 0.65, top = 16.0 * kMiB;
  const double move = top / (top / rate - sync);
  EXPECT_NEAR(key.wire.launch_latency.as_us(),
              6.2 + 2 * 14 + 4 * (8.0 * kMiB / move + sync) - 16.0 * kMiB / rate, 1e-6);
  EXPECT_EQ(key.wire.intra_step_latency, Time{});
  EXPECT_EQ(key.wire.inter_step_latency, Time{});
  // Off: NCCL's NVLS-tree latencies, the switch's half on each NVLink phase, 14 us a tree hop.
  NcclSettings off;
  off.nvls_tree_loops = false;
  const ScheduleKey plain =
      compute::nccl_tuning("h100", off).plan(Op::kAllReduce, 16, 8, 16 * kMiB);
  EXPECT_DOUBLE_EQ(plain.wire.intra_step_latency.as_us(), 12.5);
  EXPECT_DOUBLE_EQ(plain.wire.inter_step_latency.as_us(), 14);
  // Blackwell has no measured loops: NCCL's latencies.
  EXPECT_DOUBLE_EQ(compute::nccl_tuning("b200")
                       .plan(Op::kAllReduce, 16, 8, 16 * kMiB, Algorithm::kNvlsTree)
                       .wire.inter_step_latency.as_us(),
                   14);
  // A lane carries one GPU's share of a tree half, and the window is sized for its messages:
  // 2 MiB in 16 chunks is 8 KiB a chunk on a lane, 8 in flight (sized for the tree's 64 KiB
  // messages, the window was 1).
  const ScheduleKey small = tuning.plan(Op::kAllReduce, 16, 8, 2 * kMiB);
  EXPECT_EQ(small.chunks, 16);
  EXPECT_EQ(small.window, 8);
}

TEST(NcclSimulated, NvlsTreeTakesItsLoopsTime) {
  // Published two- and four-server H100 all-reduce times, us (nccl-tests #309, NCCL 2.26.2,
  // results/collectives/nccl_tests_published.csv): 185.4 at 16 MiB and 466.1 at 64 MiB on two
  // servers, 579.1 at 64 MiB on four. NCCL's latencies alone ran them 44%, 30% and 22% faster.
  EXPECT_NEAR(simulate(Op::kAllReduce, 2, 16 * kMiB).time_us, 185.4, 0.1 * 185.4);
  EXPECT_NEAR(simulate(Op::kAllReduce, 2, 64 * kMiB).time_us, 466.1, 0.1 * 466.1);
  EXPECT_NEAR(simulate(Op::kAllReduce, 4, 64 * kMiB).time_us, 579.1, 0.1 * 579.1);
  NcclSettings off;
  off.nvls_tree_loops = false;
  EXPECT_LT(simulate(Op::kAllReduce, 2, 16 * kMiB, off).time_us, 0.75 * 185.4);
  EXPECT_LT(simulate(Op::kAllReduce, 2, 64 * kMiB, off).time_us, 0.75 * 466.1);
}

TEST(NcclPlan, NvlsPastEightGpusRunsAtTheEightGpuRate) {
  // Past a server's 8 GPUs the message bytes of NVLS move at the 8-GPU group's rate: the wire
  // factor (n+1) / 2(n-1) stays at 8's 9/14 (nvls_bus_bandwidth_group; measured on GB200 NVL72:
  // 811 GB/s busBw at 8 GPUs, 839 at 72). Switched off, the link traffic of the group sets it.
  const double switch_rate = 40.1 / 50 * 0.74;
  const auto wire = [](int32_t n) { return (n + 1.0) / (2.0 * (n - 1)); };
  const NcclTuning tuning = compute::nccl_tuning("gb200");
  for (int32_t n : {4, 8, 16, 36, 72}) {
    const ScheduleKey key = tuning.plan(Op::kAllReduce, n, n, 8 * kGiB, Algorithm::kNvls);
    EXPECT_DOUBLE_EQ(key.wire.nvlink_efficiency, switch_rate / wire(std::min(n, 8))) << n;
  }
  // NVLS-tree between racks: the same rate on each rack's NVLink part.
  const ScheduleKey tree = tuning.plan(Op::kAllReduce, 144, 72, 8 * kGiB, Algorithm::kNvlsTree);
  EXPECT_DOUBLE_EQ(tree.wire.nvlink_efficiency, switch_rate / wire(8));
  NcclSettings off;
  off.nvls_bus_cap = false;
  const NcclTuning uncapped = compute::nccl_tuning("gb200", off);
  EXPECT_DOUBLE_EQ(
      uncapped.plan(Op::kAllReduce, 72, 72, 8 * kGiB, Algorithm::kNvls).wire.nvlink_efficiency,
      switch_rate / wire(72));
  // Hopper servers never pass 8 GPUs: nothing changes there.
  for (int32_t n : {4, 8})
    EXPECT_DOUBLE_EQ(
        compute::nccl_tuning("h100").plan(Op::kAllReduce, n, n, kGiB).wire.nvlink_efficiency,
        compute::nccl_tuning("h100", off).plan(Op::kAllReduce, n, n, kGiB).wire.nvlink_efficiency);
}

TEST(NcclSimulated, NvlsBusBandwidthOnAnNvl72RackStaysAtTheEightGpuFigure) {
  // 8 and 16 GPUs of a GB200 NVL72 rack, 8 GiB: 721.8 GB/s x 0.74 / (9/8) x 2 x 7/8 = 831 GB/s
  // at both (measured: 811 at 8 GPUs, 839 at 72); without the cap 16 GPUs would reach
  // 534 / (17/16) x 2 x 15/16 = 942.
  const auto busbw = [](int32_t gpus, NcclSettings settings) {
    const net::Topology topo =
        net::build_topology(net::resolve_topology("gb200-nvl72"), gpus, "gb200-nvl72");
    const NcclTestResult r = run_nccl_test(topo, compute::nccl_tuning(topo.gpu_type, settings),
                                           Op::kAllReduce, 8 * kGiB, gpus, Algorithm::kNvls);
    return r.busbw_gbytes_per_s;
  };
  const double eight = busbw(8, {});
  EXPECT_NEAR(eight, 721.8 * 0.74 / 1.125 * 1.75, 0.01 * 831);
  EXPECT_NEAR(busbw(16, {}), eight, 0.01 * eight);
  NcclSettings off;
  off.nvls_bus_cap = false;
  EXPECT_NEAR(busbw(16, off), 721.8 * 0.74 / (17.0 / 16) * 2 * 15 / 16, 0.01 * 942);
}

TEST(NcclSimulated, NetworkTransportCostsItsShareOfTheNic) {
  // Two servers, ring all-reduce, NIC-bound: 8 NICs at 96% of 50 GB/s (NVIDIA: 46-48 GB/s per
  // NDR NIC, nccl-tests issue 290); switching the effect off gives back the data rate.
  const Result with = simulate(Op::kAllReduce, 2, 8 * kGiB, {}, Algorithm::kRing);
  NcclSettings off;
  off.network_overhead = false;
  const Result without = simulate(Op::kAllReduce, 2, 8 * kGiB, off, Algorithm::kRing);
  EXPECT_NEAR(without.busbw_gbytes_per_s / with.busbw_gbytes_per_s, 1 / 0.96, 1e-3);
  EXPECT_NEAR(with.busbw_gbytes_per_s, 8 * 50 * 0.96, 0.01 * 384);
}

// NCCL's broadcast is a chain around its rings: across servers every channel leaves a server on
// its own NIC, so two servers broadcast near their eight NICs' 384 GB/s (NCCL's model: 334), not
// at one NIC's 48 (one chain over every GPU, as before).
TEST(NcclSimulated, BroadcastAcrossServersUsesEveryRail) {
  const Result two = simulate(Op::kBroadcast, 2, kGiB);
  EXPECT_EQ(two.key.channels, 8);
  EXPECT_GE(two.busbw_gbytes_per_s, 300);
  EXPECT_LE(two.busbw_gbytes_per_s, 8 * 50 * 0.96);
}

// A broadcast's time grows with its size under each protocol. Pieces cut evenly from the whole
// buffer made it fall where a piece was added (64 GH200s, LL: 349 us at 448 KiB, 288 us at
// 672 KiB, as each hop's piece halved). With one channel through each GPU, as here, what is left
// is under 1% (the last piece's rounding to 1/256 of a slice, and the even pieces of the cheapest
// count stepping up one at a time). Where several channels cross each server, their pieces meet
// on the NVLinks in patterns that move with the size, by up to 10% either way (256 H100s, Simple,
// 4.5 and 5 MB).
TEST(NcclSimulated, BroadcastTimeGrowsWithItsSize) {
  for (const auto& [name, gpus] : {std::pair{"alps-gh200", 64}, std::pair{"dgx-h100", 8}}) {
    const net::Topology topo = net::build_topology(net::resolve_topology(name), gpus, name);
    for (Protocol p : {Protocol::kLl, Protocol::kLl128, Protocol::kSimple}) {
      NcclSettings settings;
      settings.protocol = p;
      const NcclTuning tuning = compute::nccl_tuning(topo.gpu_type, settings);
      double before = 0;
      for (double size = 8 * kKiB; size < 64 * kMiB; size *= 1.3) {
        const double t =
            run_nccl_test(topo, tuning, Op::kBroadcast, static_cast<Bytes>(size)).time.as_us();
        EXPECT_GE(t, 0.99 * before) << name << " " << to_string(p) << " at " << size << " B";
        before = t;
      }
    }
  }
}

TEST(NcclSimulated, AllGatherAndReduceScatterUseEveryRail) {
  const double all_reduce = simulate(Op::kAllReduce, 8, kGiB).busbw_gbytes_per_s;
  for (Op op : {Op::kAllGather, Op::kReduceScatter}) {
    const Result rails = simulate(op, 8, kGiB);
    EXPECT_EQ(rails.key.channels, 8);
    EXPECT_GE(rails.busbw_gbytes_per_s, 0.8 * all_reduce) << to_string(op);
    NcclSettings off;
    off.rail_rings = false;
    // One ring in rank order: one NIC per server carries everything.
    EXPECT_LT(simulate(op, 8, kGiB, off).busbw_gbytes_per_s, 0.2 * rails.busbw_gbytes_per_s)
        << to_string(op);
  }
}

TEST(NcclSimulated, ProtocolFlagBytesHalveLlBandwidth) {
  NcclSettings ll;
  ll.protocol = Protocol::kLl;
  ll.step_latency = false;
  const double with = simulate(Op::kAllGather, 1, 256 << 20, ll, Algorithm::kRing).time_us;
  ll.protocol_overhead = false;
  const double without = simulate(Op::kAllGather, 1, 256 << 20, ll, Algorithm::kRing).time_us;
  EXPECT_NEAR(with / without, 2.0, 0.05);
}

TEST(NcclSimulated, StepLatencyIsNcclsHopLatency) {
  // 8 bytes: latency only. LL ring: baseLat 6.6 + 14 hops x 0.6 µs, each hop's wire latency
  // (2 x 250 ns NVLink) inside its 0.6 µs; without the effect only the wire's is left.
  NcclSettings s;
  s.protocol = Protocol::kLl;
  const double with = simulate(Op::kAllReduce, 1, 8, s, Algorithm::kRing).time_us;
  s.step_latency = false;
  const double without = simulate(Op::kAllReduce, 1, 8, s, Algorithm::kRing).time_us;
  EXPECT_NEAR(with, 6.6 + 14 * 0.6, 0.05);
  EXPECT_NEAR(without, 14 * 0.5, 0.05);
}

TEST(NcclSimulated, PointToPointCallsPayTheirKernelLaunch) {
  // All-to-all and send/recv are outside NCCL's cost model: no baseLat or hwLat, but each call
  // is a kernel, which pays the GPU's launch (h100: 2 µs) before its one NVLink hop (0.5 µs).
  for (const Op op : {Op::kAllToAll, Op::kSendRecv}) {
    NcclSettings s;
    EXPECT_EQ(compute::nccl_tuning("h100", s).plan(op, 8, 8, 128).wire.launch_latency, Time::us(2))
        << to_string(op);
    EXPECT_NEAR(simulate(op, 1, 128, s).time_us, 2.5, 0.01) << to_string(op);
    s.step_latency = false;
    EXPECT_EQ(compute::nccl_tuning("h100", s).plan(op, 8, 8, 128).wire.launch_latency, Time{});
    EXPECT_NEAR(simulate(op, 1, 128, s).time_us, 0.5, 0.01) << to_string(op);
  }
}

TEST(NcclPlan, NcclTreeAcrossFullServersRunsOverEveryNic) {
  NcclSettings no_nvls;
  no_nvls.nvls = false;
  const NcclTuning tuning = compute::nccl_tuning("h100", no_nvls);
  // 8 servers of 8 without NVLS (with it, NVLS-tree wins from 16 MiB: NcclModel tests): NCCL's
  // model picks its tree at 16 MiB; its chain-plus-tree uses all NICs,
  // a channel pair per NIC, as our chain-tree does (our tree over all ranks would not), and the
  // chain-tree is what NCCL's choice runs (our_algorithm in nccl_plan.cc), as a fluid transfer.
  EXPECT_EQ(tuning.model_choice(Op::kAllReduce, 64, 8, 16 << 20).algo, NcclAlgo::kTree);
  const ScheduleKey chain = tuning.plan(Op::kAllReduce, 64, 8, 16 << 20);
  EXPECT_EQ(chain.algo, Algorithm::kChainTree);
  EXPECT_TRUE(fluid_supported(chain));
  EXPECT_EQ(chain.channels, 8);
  EXPECT_EQ(chain.local_size, 8);
  // NCCL's Tree latencies: hwLat per NVLink and per network hop, baseLat per call.
  EXPECT_DOUBLE_EQ(chain.wire.inter_step_latency.as_us(),
                   step_latency_us(NcclAlgo::kTree, chain.protocol, true));
  EXPECT_DOUBLE_EQ(chain.wire.intra_step_latency.as_us(),
                   step_latency_us(NcclAlgo::kTree, chain.protocol, false));
  // One GPU per server: chains of one GPU, whose messages are our double binary tree's, run as
  // the chain-tree for its fluid form.
  const ScheduleKey single = tuning.plan(Op::kAllReduce, 64, 1, 64 << 10);
  EXPECT_EQ(single.algo, Algorithm::kChainTree);
  EXPECT_TRUE(fluid_supported(single));
  // The fixed size rule when NCCL's choice is off.
  NcclSettings rule;
  rule.nccl_choice = false;
  EXPECT_EQ(compute::nccl_tuning("h100", rule).plan(Op::kAllReduce, 8, 8, 1 << 30).algo,
            Algorithm::kRing);
}

// 12 GPUs of DGX H100 servers (8 + 4): rail rings cross on the short server's four NICs, half the
// bus bandwidth of two full servers' eight, not one NIC's (48 GB/s before members_per_server).
TEST(NcclSimulated, RingsOverAShortLastServerUseItsNics) {
  const net::Topology topo = net::build_topology(net::resolve_topology("dgx-h100"), 16, "dgx-h100");
  const NcclTuning tuning = compute::nccl_tuning(topo.gpu_type);
  const NcclTestResult twelve = run_nccl_test(topo, tuning, Op::kAllGather, 4 * kGiB, 12);
  const NcclTestResult sixteen = run_nccl_test(topo, tuning, Op::kAllGather, 4 * kGiB, 16);
  EXPECT_EQ(twelve.key.channels, 4);
  EXPECT_EQ(twelve.key.local_size, 8);
  EXPECT_NEAR(twelve.busbw_gbytes_per_s / sixteen.busbw_gbytes_per_s, 0.5, 0.05);
}

// 128 GPUs over a 72-GPU GB200 NVL72 rack and 56 of the next: NCCL's nodes are its hosts, two of
// them, not a node per rank, which enabled PAT (one GPU per node) and planned a 125 MiB all-gather
// as a 1-channel PAT at 5.2 ms where the rail ring takes 0.44 ms. Only the ring, which schedules a
// short last server, is planned there; with servers alike the tree and NVLS-tree stay.
TEST(NcclPlan, AShortLastServerIsOneMoreNodeAndRunsTheRing) {
  const NcclGraph even = nccl_graph(GpuArch::kBlackwell, 144, 2, 18, 50, true);
  const NcclGraph uneven = nccl_graph(GpuArch::kBlackwell, 128, 2, 18, 50, true, 56);
  EXPECT_EQ(uneven.nodes, 2);
  EXPECT_FALSE(uneven.pat || uneven.nvls || uneven.even_nodes);
  EXPECT_TRUE(even.nvls && even.even_nodes);
  EXPECT_DOUBLE_EQ(uneven.bw_inter_gbps, even.bw_inter_gbps);  // 16 NICs each way
  EXPECT_THROW(nccl_graph(GpuArch::kBlackwell, 128, 2, 18, 50, true, 73), std::invalid_argument);
  const NcclTuning gb200 = compute::nccl_tuning("gb200");
  for (const Op op : {Op::kAllGather, Op::kReduceScatter, Op::kAllReduce})
    for (const Bytes size : {Bytes{1} << 20, Bytes{125} << 20, Bytes{1} << 30}) {
      const ScheduleKey key = gb200.plan(op, 128, 72, size);
      EXPECT_EQ(key.algo, Algorithm::kRing) << to_string(op) << " " << size;
      EXPECT_EQ(key.channels, 16) << to_string(op) << " " << size;
    }
  EXPECT_EQ(gb200.plan(Op::kAllReduce, 144, 72, Bytes{1} << 30).algo, Algorithm::kNvlsTree);
}

// A quad-GH200 node joins its GPUs by direct NVLink links (6 per pair, 150 GB/s per direction)
// and has no NVSwitch: no NVLS, and NCCL's ring channels spread over every ordering of the four
// GPUs, so that a ring uses all three of a GPU's links, as 8 H100s' ring uses its NVSwitch port.
TEST(NcclSimulated, RingsOnAnNvlinkMeshUseEveryLinkAndNoNvls) {
  const net::Topology topo =
      net::build_topology(net::resolve_topology("alps-gh200"), 4, "alps-gh200");
  ASSERT_FALSE(topo.has_nvswitch());
  const NcclTuning tuning = compute::nccl_tuning(topo);
  EXPECT_FALSE(tuning.graph(4, 4).nvls);
  const NcclTestResult ring = run_nccl_test(topo, tuning, Op::kAllReduce, kGiB, 0);
  EXPECT_EQ(ring.key.algo, Algorithm::kRing);
  EXPECT_TRUE(ring.key.mesh);
  EXPECT_EQ(ring.key.channels, 6);
  // Three links of 150 GB/s at NCCL's 20.6 of 25 GB/s per link: 370.8 GB/s of bus bandwidth at
  // most, as on an 8-GPU NVSwitch server.
  EXPECT_GT(ring.busbw_gbytes_per_s, 340);
  EXPECT_LT(ring.busbw_gbytes_per_s, 371);
  // One ordering only (the channels asked for: one) gets one link's worth.
  NcclSettings one;
  one.channels = 1;
  const double single =
      run_nccl_test(topo, compute::nccl_tuning(topo, one), Op::kAllReduce, kGiB, 0)
          .busbw_gbytes_per_s;
  EXPECT_LT(single, ring.busbw_gbytes_per_s / 2.5);
  // Every ordering of the ranks after rank 0, each once.
  EXPECT_EQ(mesh_ring_count(4), 6);
  std::set<std::vector<uint32_t>> orders;
  for (uint32_t c = 0; c < 6; ++c) orders.insert(mesh_ring(4, c));
  EXPECT_EQ(orders.size(), 6u);
  // NVLS asked for by name is refused with the reason.
  try {
    tuning.plan(Op::kAllReduce, 4, 4, kGiB, Algorithm::kNvls);
    FAIL() << "NVLS on a mesh must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no NVSwitch"), std::string::npos) << e.what();
  }
}

// Quad-GH200 nodes have no NVSwitch, and NCCL's search gives their trees one GPU per channel to
// the network (NCCL_TOPO_PATTERN_TREE), which its model takes at .85 of the tree's bandwidth: on
// 128 Alps nodes NCCL ran its tree at 1 GiB and a ring at 2 and 4 GiB, whose trees measure 0.8 of
// the ring's bus bandwidth (validation nccl-gh200-alps-*).
TEST(NcclPlan, TreesThroughOneGpuPerServerRunAtNcclsShare) {
  const net::Topology topo =
      net::build_topology(net::resolve_topology("alps-gh200"), 512, "alps-gh200");
  const NcclTuning tuning = compute::nccl_tuning(topo);
  NcclSettings off;
  off.tree_pattern = false;
  const NcclTuning whole = compute::nccl_tuning(topo, off);
  EXPECT_TRUE(tuning.graph(512, 4).tree_one_gpu);
  EXPECT_FALSE(whole.graph(512, 4).tree_one_gpu);
  EXPECT_FALSE(tuning.graph(4, 4).tree_one_gpu);  // one server: no tree across servers
  // NCCL's model: the tree at .85, the ring as before.
  const NcclGraph g = tuning.graph(512, 4), w = whole.graph(512, 4);
  for (const Protocol p : {Protocol::kSimple, Protocol::kLl128}) {
    EXPECT_DOUBLE_EQ(
        model_bandwidth_gbps(Op::kAllReduce, NcclAlgo::kTree, p, g),
        tree_one_gpu_share() * model_bandwidth_gbps(Op::kAllReduce, NcclAlgo::kTree, p, w));
    EXPECT_DOUBLE_EQ(model_bandwidth_gbps(Op::kAllReduce, NcclAlgo::kRing, p, g),
                     model_bandwidth_gbps(Op::kAllReduce, NcclAlgo::kRing, p, w));
  }
  // At 4 GiB the ring now wins, as NCCL's did; with the effect off the tree still would.
  EXPECT_EQ(tuning.plan(Op::kAllReduce, 512, 4, 4 * kGiB).algo, Algorithm::kRing);
  EXPECT_EQ(whole.plan(Op::kAllReduce, 512, 4, 4 * kGiB).algo, Algorithm::kChainTree);
  // The tree itself moves its data at the share, on NVLink and on the network.
  const ScheduleKey tree = tuning.plan(Op::kAllReduce, 512, 4, kGiB, Algorithm::kChainTree);
  const ScheduleKey full = whole.plan(Op::kAllReduce, 512, 4, kGiB, Algorithm::kChainTree);
  EXPECT_DOUBLE_EQ(tree.wire.net_efficiency, tree_one_gpu_share() * full.wire.net_efficiency);
  EXPECT_DOUBLE_EQ(tree.wire.nvlink_efficiency, tree_one_gpu_share() * full.wire.nvlink_efficiency);
  net::Routing routing(topo);
  const auto busbw = [&](const NcclTuning& t) {
    return run_nccl_test(topo, routing, t, Op::kAllReduce, kGiB, 512, Algorithm::kChainTree,
                         net::NetworkMode::kCongestionAware, /*fluid=*/true)
        .busbw_gbytes_per_s;
  };
  EXPECT_NEAR(busbw(tuning) / busbw(whole), tree_one_gpu_share(), 0.03);
  // NVSwitch servers keep the balanced tree.
  EXPECT_FALSE(compute::nccl_tuning("h100").graph(64, 8).tree_one_gpu);
}

TEST(NcclPlan, NicsBehindTheCpuRunNoLl128BetweenServers) {
  // GH200's NICs hang off the Grace CPU, a path that does not keep LL128's lines in order: LL and
  // Simple across Alps nodes (LL128 only when forced), and LL128 inside one node, where no NIC is
  // on the path.
  const net::Topology topo =
      net::build_topology(net::resolve_topology("alps-gh200"), 512, "alps-gh200");
  const NcclTuning tuning = compute::nccl_tuning(topo);
  EXPECT_FALSE(tuning.graph(512, 4).ll128_between_servers);
  for (Bytes size = kKiB; size <= 4 * kGiB; size *= 4) {
    SCOPED_TRACE(size);
    EXPECT_NE(tuning.plan(Op::kAllReduce, 512, 4, size).protocol, Protocol::kLl128);
    EXPECT_NE(tuning.plan(Op::kAllGather, 512, 4, size).protocol, Protocol::kLl128);
  }
  EXPECT_EQ(tuning.plan(Op::kAllReduce, 512, 4, 16 * kMiB).protocol, Protocol::kSimple);
  NcclSettings forced;
  forced.protocol = Protocol::kLl128;
  EXPECT_EQ(compute::nccl_tuning(topo, forced).plan(Op::kAllReduce, 512, 4, 16 * kMiB).protocol,
            Protocol::kLl128);
  bool ll128_in_a_node = false;
  for (Bytes size = kKiB; size <= kGiB; size *= 4)
    ll128_in_a_node |= tuning.plan(Op::kAllReduce, 4, 4, size).protocol == Protocol::kLl128;
  EXPECT_TRUE(ll128_in_a_node);
  // Servers whose NICs sit beside the GPUs keep it.
  const NcclTuning h100 = compute::nccl_tuning("h100");
  EXPECT_TRUE(h100.graph(512, 8).ll128_between_servers);
  EXPECT_EQ(h100.plan(Op::kAllReduce, 512, 8, 16 * kMiB).protocol, Protocol::kLl128);
}

TEST(NcclPlan, TopologiesGiveNcclsChannelsAndTransportWhereTheyDiffer) {
  // Alps: NCCL's 24 channels are three tree channel pairs a NIC (rings keep one a NIC), at the
  // 92.5% of line rate its libfabric transport carries there.
  const net::Topology alps =
      net::build_topology(net::resolve_topology("alps-gh200"), 64, "alps-gh200");
  const NcclTuning tuning = compute::nccl_tuning(alps);
  EXPECT_EQ(tuning.nic_channels(4, Algorithm::kChainTree), 12);
  EXPECT_EQ(tuning.nic_channels(1, Algorithm::kChainTree), 3);
  EXPECT_EQ(tuning.nic_channels(4, Algorithm::kRing), 4);
  EXPECT_EQ(tuning.plan(Op::kAllReduce, 64, 4, kGiB, Algorithm::kChainTree).channels, 12);
  EXPECT_EQ(tuning.plan(Op::kAllReduce, 64, 4, kGiB, Algorithm::kRing).channels, 4);
  EXPECT_DOUBLE_EQ(tuning.plan(Op::kAllReduce, 64, 4, kGiB, Algorithm::kRing).wire.net_efficiency,
                   0.925);
  // The default: a pair a NIC, at NCCL-over-InfiniBand's share.
  const net::Topology dgx = net::build_topology(net::resolve_topology("dgx-h100"), 64, "dgx-h100");
  const NcclTuning h100 = compute::nccl_tuning(dgx);
  EXPECT_EQ(h100.nic_channels(8, Algorithm::kChainTree), 8);
  EXPECT_DOUBLE_EQ(h100.plan(Op::kAllReduce, 64, 8, kGiB, Algorithm::kRing).wire.net_efficiency,
                   net_transport_efficiency());
}

TEST(NcclPlan, UnknownGpuIsRefusedWithTheKnownOnes) {
  try {
    compute::nccl_tuning("tpu");
    FAIL() << "an unknown GPU must be refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown GPU 'tpu'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("h100"), std::string::npos) << e.what();
  }
}

TEST(NcclPlan, TopologyWithoutGpuTypeKeepsTheIdealWire) {
  const NcclTuning none = compute::nccl_tuning("");
  EXPECT_FALSE(none.has_hardware());
  const ScheduleKey key = none.plan(Op::kAllReduce, 8, 8, kGiB);
  EXPECT_EQ(key.wire, WireModel{});
}

}  // namespace
}  // namespace cs::coll
