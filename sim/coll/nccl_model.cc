#include "sim/coll/nccl_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

// Every number below is NCCL 2.20.3's (github.com/NVIDIA/nccl, commit b6475625,
// makefiles/version.mk 2.20.3): src/graph/tuning.cc unless said otherwise. PAT came in NCCL 2.23;
// its terms are from tuning.cc of the releases that have it (ncclTunerConstantsDefaults: baseLat
// 8.0, hwLat 4.0 NVLink / 14 network, Simple only; ncclTopoTuneModel: busBw x .75, latency
// log2(nNodes) x interLat / 3.5 + nRanks x 2.8, enabled only with one GPU per node). NVLS's and
// NVLS-tree's bandwidth is that of the releases with src/tuning/nvls.cc (nvls_bandwidth_gbps).
// The terms that decide between the LL ring and NVLS on one server are NCCL 2.28.3's, the model
// of the releases the published single-server runs used (2.26.2 to 2.28.3): the LL ring at half
// the channels' bandwidth up to llMaxBws (Hopper 141 GB/s on one node, where 2.20.3 has a
// quarter, up to 87.7), and NVLS's hwLat of 25 us (23 in 2.20.3). With 2.20.3's, NCCL's model
// moves from the LL ring to NVLS at 512 KiB on 8 H100s; with these between 1 and 2 MiB, as NCCL
// 2.26.2 logs it there ("8B~1MB: uses Algo RING proto LL ... 2MB~16GB uses Algo NVLS proto
// SIMPLE", NCCL_DEBUG_SUBSYS=TUNING: NVIDIA/nccl-tests issue 309, qoofyk, 2025-05) and the
// published times show (an LL ring's 20.7 us at 512 KiB and 27.4 at 1 MiB, against NVLS's 43.0
// and 42.0 when it is forced: results/collectives/README.md). Values are read from there and
// re-expressed as data; the formulas are re-derived, not copied.

namespace cs::coll {
namespace {

constexpr int kProtos = 3;  // LL, LL128, Simple: NCCL's protocol index order
int proto_index(Protocol p) {
  switch (p) {
    case Protocol::kLl:
      return 0;
    case Protocol::kLl128:
      return 1;
    case Protocol::kSimple:
    case Protocol::kAuto:
      break;
  }
  return 2;
}

// baseLat [algo][LL, LL128, Simple] in µs: tree, ring, NVLS, NVLS-tree (NVLS and NVLS-tree
// start from 0 and take their latency from hwLat alone).
constexpr int kAlgos = 5;
constexpr std::array<std::array<double, kProtos>, kAlgos> kBaseLat{
    {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 8.0}}};
// hwLat [NVLink | network][algo][LL, LL128, Simple] in µs (tuning.cc hwLat, NCCL_HW_NVLINK and
// NCCL_HW_NET rows; NVLS and NVLS-tree are Simple only; their NVLink 25 is 2.28.3's). The tree's
// Simple terms stay 2.20.3's (baseLat 0, 28 a hop): releases from 2.24 on have baseLat 8.4 and 4.0
// / 14 a hop, but as the simulated hop's latency too those run the Alps 128-node all-reduce 12%
// fast at 16 MiB and 5% at 1 GiB, and twenty GB200 racks 11% fast at 16 GiB (validate), where
// these meet all three. Taken for the ranking alone (the simulated hop kept at 28 us), they move
// the twenty racks from the Tree's LL128 to its Simple protocol: 498 GB/s, 23% over the run.
constexpr std::array<std::array<std::array<double, kProtos>, kAlgos>, 2> kHwLat{{
    {{{.6, 1.25, 28}, {.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}}},
    {{{5.0, 8.5, 28}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 14}, {0, 0, 14}}},
}};
// [arch][nodes 1 | 2 | >2] tables (llMaxBws, perChMaxRingLL128Bws, perChMaxTreeLL128Bws,
// perChMaxTreeBws), GB/s. llMaxBws rows past one node are by CPU vendor in NCCL; Intel's row
// (index 0) is taken for every multi-node system here. Hopper's row is 2.28.3's (2.20.3 gave it
// Ampere's, 87.7 on one node). NCCL 2.20.3 has no Blackwell row; the
// Blackwell rows are those of the releases that support SM100 (2.25 on; tuning.cc, "Blackwell
// (N1/N2/N4)" rows, written there as twice the Hopper rows of the same releases: llMaxBws
// 2 x {141, 45, 35}, ring LL128 2 x 36.7, tree LL128 2 x {36.7, 36.7, 29.0}, tree 2 x {38.7,
// 41.4, 36.0}). Later releases cut the Blackwell tree rows (tree LL128 {55.6, 31.67, 20}, tree
// {70, 42.8, 24}); with those, NCCL's model would pick the ring for twenty GB200 racks, where
// with these, the rows of the measured run's 2.26.2, it picks its Tree, whose bandwidth the run
// matches (nccl-gb200-nvl72-20rack-1440gpu-allreduce-default-16g).
constexpr int kArchs = 4;
using ArchTable = std::array<std::array<double, 3>, kArchs>;
constexpr ArchTable kLlMaxBw{
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}}};
constexpr ArchTable kRingLl128PerCh{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {73.4, 73.4, 73.4}}};
constexpr ArchTable kTreeLl128PerCh{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {73.4, 73.4, 58.0}}};
constexpr ArchTable kTreePerCh{
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {77.4, 82.8, 72.0}}};
// perChMaxNVLSTreeBws of the releases with src/tuning/nvls.cc (ncclTunerConstantsDefaults; 0:
// no cap; one server runs no NVLS-tree). Volta and Ampere have no NVLS.
constexpr ArchTable kNvlsTreePerCh{
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}}};

// What else NCCL's topology search and tuning know per GPU generation, one row per GpuArch.
struct ArchFigures {
  std::string_view name;  // gpu.proto GpuProfile.architecture
  // NCCL's NVLink bandwidth per link (src/graph/topo.h SMxx_NVLINK_BW) and the link's raw rate
  // per direction, GB/s.
  double nvlink_link_gbps;
  double nvlink_raw_gbps;
  // The first (top) speed of the search's intra-node speed array, GB/s.
  double intra_top_gbps;
  // The search's inter-node speeds, GB/s, fastest first (zeros pad the shorter lists).
  std::array<double, 10> inter_gbps;
  // NVLink SHARP in the NVSwitch, and NCCL's derating of it (nvlsEfficiency).
  bool nvls;
  double nvls_efficiency;
  // Whether NVLS-tree runs within kNvlsTreePerCh on the wire (nvls_tree_ceiling_gbps). Hopper's
  // row is the same in the releases read here, and two H100 servers measure within it: 440.6,
  // 430 and 470 GB/s of bus bandwidth against its 8 x 57.7 = 461.6 (coreweave/nccl-tests #92,
  // NVIDIA/nccl #1221, nccl-tests #309). Blackwell's row changed between releases (80 or 43.8
  // past two servers), and two B300 servers run NVLS-tree at "800GBps +" (NCCL 2.29.7,
  // NVIDIA/nccl #2035), above its 8 x 96: there it ranks algorithms only.
  bool nvls_tree_ceiling;
  // NVLS all-reduce on one server as measured (nvls_loop_figures); zeros: not measured.
  NvlsLoopFigures nvls_loop;
};
// Volta and Ampere: SM70/SM80_NVLINK_BW 20.0 of NVLink 2/3's 25 GB/s per link, speedArrayIntra
// top 40, speedArrayInter; no NVLS. Hopper: SM90_NVLINK_BW 20.6 of NVLink 4's 25 GB/s,
// sm90SpeedArrayIntra top 60, sm90SpeedArrayInter (NCCL 2.20.3). Blackwell: SM100_NVLINK_BW 40.1
// of NVLink 5's 50 GB/s per link (NVIDIA: 18 links, 900 GB/s per direction per GPU),
// sm100SpeedArrayIntra top 90 and sm100SpeedArrayInter 96, 48, 45.1, ... (search.cc of the
// releases with SM100; later ones insert 86 and 80 after 96, which only 800 Gb/s NICs reach).
// NVLS derating: 0.85 Hopper, 0.74 Blackwell (see nvls_switch_efficiency). Hopper's NVLS loop
// figures: see nvls_loop_figures.
constexpr std::array<double, 10> kInterBeforeBlackwell{48.0, 45.0, 42.0, 40.0, 30.0,
                                                       24.0, 20.0, 15.0, 12.0, 6.0};
constexpr std::array<ArchFigures, kArchs> kArchFigures{{
    {"volta", 20.0, 25.0, 40.0, kInterBeforeBlackwell, false, 0.0, false, {}},
    {"ampere", 20.0, 25.0, 40.0, kInterBeforeBlackwell, false, 0.0, false, {}},
    {"hopper", 20.6, 25.0, 60.0, kInterBeforeBlackwell, true, 0.85, true, {0.92, 0.65, 6.2}},
    {"blackwell",
     40.1,
     50.0,
     90.0,
     {96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5},
     true,
     0.74,
     false,
     {}},
}};
const ArchFigures& figures(GpuArch arch) {
  return kArchFigures[static_cast<std::size_t>(arch)];
}
// Across servers the search runs its rings at the first sm90SpeedArrayInter / speedArrayInter
// speed (48, 45, 42, 40, 30, 24, ... GB/s; sm100SpeedArrayInter from 96) within the NIC's
// bandwidth.
double inter_speed(const ArchFigures& f, double nic_gbps) {
  for (double s : f.inter_gbps)
    if (s > 0 && s <= nic_gbps) return s;
  return 3.0;
}
// ncclTopoGetAlgoTime's treeCorrectionFactor [LL, LL128, Simple][log2(bytes / 64)], 64 B..256 MB.
constexpr std::array<std::array<double, 23>, kProtos> kTreeCorrection{{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};
// PAT: its share of the channels' bandwidth, the divisor of its per-step network latency.
constexpr double kPatBandwidthShare = 0.75;
constexpr double kPatStepDivisor = 3.5;
// A tree of NCCL_TOPO_PATTERN_TREE: its share of the tree's bandwidth (tree_one_gpu_share).
constexpr double kTreeOneGpuShare = 0.85;
// Network post overhead, µs per ring step (getNetOverhead: 1.0 on Intel CPUs; Simple pays it 3x).
constexpr double kNetOverheadUs = 1.0;

int algo_index(NcclAlgo a) {
  return static_cast<int>(a);
}
int nodes_index(int32_t nodes) {
  return nodes <= 2 ? nodes - 1 : 2;
}
int log2i(int64_t v) {
  int l = 0;
  while (v > 1) {
    v >>= 1;
    ++l;
  }
  return l;
}

// Ring steps of the op (nsteps) and those that cross servers (nInterSteps).
std::pair<int32_t, int32_t> ring_steps(Op op, const NcclGraph& g) {
  if (op == Op::kAllReduce) return {2 * (g.ranks - 1), g.nodes > 1 ? 2 * g.nodes : 0};
  if (op == Op::kAllGather || op == Op::kReduceScatter) return {g.ranks - 1, g.nodes - 1};
  return {g.ranks, g.nodes};
}

}  // namespace

bool simple_protocol_only(NcclAlgo algo) {
  return algo == NcclAlgo::kNvls || algo == NcclAlgo::kNvlsTree || algo == NcclAlgo::kPat;
}

namespace {

bool runs(Op op, NcclAlgo algo, Protocol p, const NcclGraph& g) {
  if (g.ranks <= 1) return algo == NcclAlgo::kRing;
  if (simple_protocol_only(algo) && p != Protocol::kSimple) return false;
  if (algo == NcclAlgo::kNvls) {
    // NVLS: Simple only, Hopper NVSwitch, one server (multi-node NVLS needs CollNet), all-reduce
    // (NCCL 2.20 also offers it for all-gather / reduce-scatter, where it does not beat the ring
    // on bandwidth: nccl issue 1506).
    return g.nvls && g.nodes == 1 && op == Op::kAllReduce;
  }
  if (algo == NcclAlgo::kNvlsTree) {
    // NVLS-tree: Simple only, all-reduce, NVLS in every server and more than one server
    // (ncclTopoTuneModel disables it when nNodes == 1).
    return g.nvls && g.nodes > 1 && op == Op::kAllReduce;
  }
  if (algo == NcclAlgo::kPat) return g.pat && (op == Op::kAllGather || op == Op::kReduceScatter);
  if (algo == NcclAlgo::kTree) return op == Op::kAllReduce && g.even_nodes;
  return true;
}

// NVLS and NVLS-tree all-reduce bandwidth as NCCL's tuning model of current releases gives it
// (src/tuning/nvls.cc, ncclTuningNvlsModelInit; tuning.cc of 2.28.3). NCCL 2.20.3 took
// min(intra, inter) x 5/6 and halved the network past two servers, which ranks NVLS-tree below
// the ring on two B200 servers, where it measures 1.8x the ring's NICs (coreweave/nccl-tests
// #92). Per channel: the switch reduces at nvlsEfficiency of the links, less one channel's share,
// both halves of the all-reduce at once (x 2); for NVLS-tree the network carries the tree's
// traffic once each way on two servers (x 2), up and down past two, and perChMaxNVLSTreeBws caps
// it. One server's NVLS has no network term ("no inter traffic": src/tuning/pipeline_model/
// nvls.cc). To algorithm bandwidth as a ring's, nRanks / (2 (nRanks - 1)).
// NCCL takes these terms from its NVLS graph (nvls_tree_channels: 8 channels of 40 GB/s on H100
// servers, NVIDIA/nccl #1197); the ring graph's stand in here (12 of 30). The NVLS graph's network
// speed comes from the search's second pass, which the model does not follow, and past two
// servers NCCL's ranking of NVLS-tree against the ring turns on it (8 x 45.5 against the ring's
// 384 at 48 GB/s, 8 x 40 at 40), so the ranking keeps the ring graph's terms.
double nvls_bandwidth_gbps(Op op, const NcclGraph& g) {
  const double channels = g.channels;
  double bw = 2 * g.bw_intra_gbps * figures(g.arch).nvls_efficiency * (channels - 1) / channels;
  if (g.nodes > 1) {
    bw = std::min(bw, g.bw_inter_gbps * (g.nodes <= 2 ? 2 : 1));
    const double cap = kNvlsTreePerCh[static_cast<std::size_t>(g.arch)][nodes_index(g.nodes)];
    if (cap > 0) bw = std::min(bw, cap);
  }
  return channels * bw * g.ranks / ring_steps(op, g).first;
}

}  // namespace

int32_t nvls_tree_channels(int32_t local) {
  // NVLS channels are the GPUs that pull from the switch, "so the more the better", up to one
  // per GPU (search.cc ncclTopoCompareGraphs) and NCCL_MAX_NVLS_ARITY, 32 since NCCL 2.20
  // (device.h). An H100 server with 8 NICs gets 8 ("Why does NCCL only use 8 channels on
  // NVLSTree algorithm?", NVIDIA/nccl issue 1041; its graph dump in issue 1197: "Pattern 5,
  // nChannels 8"); the execution channels (CTAs) are set apart from these (sjeaugey, ibid.).
  constexpr int32_t kMaxNvlsArity = 32;
  return std::clamp(local, 1, kMaxNvlsArity);
}

double nvls_tree_ceiling_gbps(GpuArch arch, int32_t ranks, int32_t nodes, int32_t local) {
  if (nodes < 2 || ranks < 2) return 0;
  const double per_channel = kNvlsTreePerCh[static_cast<std::size_t>(arch)][nodes_index(nodes)];
  if (!figures(arch).nvls_tree_ceiling || per_channel <= 0) return 0;
  // NCCL's bus bandwidth to an all-reduce's algorithm bandwidth: nRanks / nSteps.
  return nvls_tree_channels(local) * per_channel * ranks / (2.0 * (ranks - 1));
}

Protocol parse_protocol(std::string_view text) {
  if (text == "simple") return Protocol::kSimple;
  if (text == "ll") return Protocol::kLl;
  if (text == "ll128") return Protocol::kLl128;
  if (text == "auto") return Protocol::kAuto;
  throw std::invalid_argument("unknown NCCL protocol '" + std::string(text) +
                              "' (expected one of: simple, ll, ll128, auto)");
}

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::kSimple:
      return "simple";
    case Protocol::kLl:
      return "ll";
    case Protocol::kLl128:
      return "ll128";
    case Protocol::kAuto:
      break;
  }
  return "auto";
}

double protocol_wire_factor(Protocol p) {
  // LL: an 8-byte store carries 4 bytes of data and a 4-byte flag. LL128: a 128-byte line
  // carries 120 bytes of data and 8 of flags (NCCL src/device/prims_ll128.h, NCCL_LL128_DATAELEMS
  // 15 of NCCL_LL128_LINEELEMS 16 eight-byte elements).
  if (p == Protocol::kLl) return 2.0;
  if (p == Protocol::kLl128) return 128.0 / 120.0;
  return 1.0;
}

GpuArch parse_gpu_arch(std::string_view name) {
  for (std::size_t i = 0; i < kArchFigures.size(); ++i)
    if (kArchFigures[i].name == name) return static_cast<GpuArch>(i);
  throw std::invalid_argument("unknown GPU architecture '" + std::string(name) +
                              "' (known: " + gpu_arch_names() + ")");
}

std::string gpu_arch_names() {
  std::string names;
  for (const auto& row : kArchFigures) names += (names.empty() ? "" : ", ") + std::string(row.name);
  return names;
}

bool has_nvls(GpuArch arch) {
  return figures(arch).nvls;
}

double nvlink_payload_efficiency(GpuArch arch) {
  // src/graph/topo.h: SM80_NVLINK_BW 20.0, SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1 GB/s per
  // link, against 25 GB/s per direction per NVLink 3 / NVLink 4 link and 50 GB/s per NVLink 5 link
  // (A100, H100 and B200 datasheets). The rest of the line rate goes to packet headers, CRC and
  // flow control of the 128-byte-or-smaller writes that SM copy loops issue; NCCL's maintainers
  // put it at about 20% (nccl-tests issue 212).
  return figures(arch).nvlink_link_gbps / figures(arch).nvlink_raw_gbps;
}

double net_transport_efficiency() {
  // NCCL's maintainers give a NIC's peak under NCCL as 24 GB/s per 200 Gb/s NIC and 12 GB/s per
  // 100 Gb/s NIC (nccl-tests issue 119, sjeaugey, 2022-11-17; again in nccl issue 412), 96% of
  // the data rate, and NCCL's graph search aims its rings at the same share of every NIC speed:
  // speedArrayInter / sm90SpeedArrayInter top out at 48 GB/s, 96% of a 400 Gb/s NIC's 50, and
  // sm100SpeedArrayInter at 96, 96% of an 800 Gb/s NIC's 100 (src/graph/search.cc); for NDR
  // they say "up to 48-49GB/s per NIC" (nccl-tests issue 267, AddyLaddy, 2025-01-23). The quoted
  // data rate (NDR 400 Gb/s, HDR 200 Gb/s) is already after FEC and line encoding. Of the 4%,
  // InfiniBand's headers and CRCs per 4096-byte MTU take 0.6% (IBTA vol. 1 packet format:
  // LRH 8, BTH 12, ICRC 4, VCRC 2 bytes, the NCCL_IB_MTU default 4096); the rest, GPUDirect
  // RDMA's PCIe transactions and the proxy's per-step handshakes, has no published split.
  return 0.96;
}

double nvls_switch_efficiency(GpuArch arch) {
  // NCCL's tuning model derates NVLS to nvlsEfficiency x the links' bandwidth: 0.85 on Hopper,
  // 0.74 on Blackwell, none before (releases after 2.20: src/graph/tuning.cc, now
  // src/tuning/nvls.cc; NCCL 2.20.3, whose other figures this file uses, has no such term). It is
  // NVIDIA's measured figure for the third-generation NVSwitch: multimem.ld_reduce and the
  // multicast stores do not stream at NVLink rate. With it NCCL's model gives 8 x H100 the
  // ~275 GB/s algbw (~480 busBw) its developers quote (nccl-tests issue 212).
  return figures(arch).nvls_efficiency;
}

std::optional<NvlsLoopFigures> nvls_loop_figures(GpuArch arch) {
  // Three figures set from one published 8 x H100 nccl-tests all-reduce curve of 14 sizes, 2 MiB
  // to 16 GiB, NVLS throughout (NVIDIA/exemplar-performance, microbenchmarks/nccl/README.md):
  // a call of c loops of L bytes takes call_us + (c + 2) x (L / R + 8 x head_sync_us), R the
  // switch's rate at link_share of NCCL's 370.8 GB/s NVLink figure through NVLS's (n+1)/n link
  // traffic (303 GB/s of algorithm bandwidth on 8 GPUs): -3.3% to +2.0% of its bus bandwidth
  // at every size (results/collectives/nccl_tests_comparison.csv). The same form, unfitted, meets
  // two other published curves: Together AI's 8 x H100 with NCCL 2.26.2
  // (togethercomputer/together-nccl-tests, benchmarks/H100/results/20260306_001221_slurm/
  // all_reduce_nvls.out), -2.4% to +3.7% from 2 MiB to 8 GiB, and Azure's ND H100 v5 with
  // NCCL_ALGO=NVLS forced (Azure/AI-benchmarking-guide, "Azure Results/ND_H100_v5_results.md"),
  // -3.6% to +3.2% from 512 KiB to 8 GiB, where a call below one loop still takes 42-43 us; and
  // with a head's share of the sync, 5 to 7 GPUs of a server at 4 GiB within 1.1% (NVIDIA/nccl
  // issue 1455). At NCCL's default 128 KiB chunk the loop's sync costs 8.6% and the switch's
  // rate another 8%, together the 0.85 that NCCL's nvlsEfficiency charges at every size. Blackwell
  // has no published NVLS curve over sizes; its NVLS keeps NCCL's derating and latencies.
  const NvlsLoopFigures& f = figures(arch).nvls_loop;
  if (f.link_share <= 0) return std::nullopt;
  return f;
}

// NCCL_NVLS_NCHANNELS' default (src/transport/nvls.cc): the CTAs of an NVLS or NVLS-tree call.
constexpr Bytes kNvlsChannels = 16;

Bytes nvls_loop_bytes(Bytes bytes, int32_t heads) {
  const Bytes ops = kNvlsChannels * std::max(heads, 1);
  // calcCollChunking: NCCL_NVLS_CHUNKSIZE (128 KiB), halved while the call is below 64, 8 and 2
  // times the concurrent ops' chunks, to at least 16 KiB.
  Bytes chunk = 128 * kKiB;
  if (bytes < 64 * ops * chunk) chunk = 64 * kKiB;
  if (bytes < 8 * ops * chunk) chunk = 32 * kKiB;
  if (bytes < 2 * ops * chunk) chunk = 16 * kKiB;
  return ops * chunk;
}

Bytes nvls_loop_step_bytes(Bytes bytes, Bytes loop) {
  // Each CTA takes a chunk a head while the bytes last, so a call shorter than a loop keeps a
  // loop's time on the CTAs it fills, and a call shorter than a chunk a head runs on one CTA.
  return std::min(loop, kNvlsChannels * std::max<Bytes>(bytes, 0));
}

Bytes nvls_tree_loop_bytes(Bytes bytes, int32_t heads, int32_t nodes) {
  const Bytes ops = kNvlsChannels * std::max(heads, 1);
  // calcCollChunking, NVLS_TREE: NCCL_NVLS_CHUNKSIZE (128 KiB), at most 64 KiB from four servers
  // (NCCL_NVLS_TREE_MAX_CHUNKSIZE's default), cut to 64 KiB below 4 and to 32 KiB below 1 times
  // the concurrent ops' chunks.
  Bytes chunk = nodes >= 4 ? 64 * kKiB : 128 * kKiB;
  if (bytes < 4 * ops * chunk && chunk > 64 * kKiB) chunk = 64 * kKiB;
  if (bytes < ops * chunk && chunk > 32 * kKiB) chunk = 32 * kKiB;
  return ops * chunk;
}

double small_call_share(Bytes bytes, Protocol p, int32_t ranks, int32_t channels) {
  // Threads a channel (device.h: NCCL_LL_MAX_NTHREADS and NCCL_SIMPLE_MAX_NTHREADS 512,
  // NCCL_LL128_MAX_NTHREADS 640) and bytes a thread (comm.h: NCCL_LL_THREAD_THRESHOLD 8, x nRanks
  // for the ring, NCCL_LL128_THREAD_THRESHOLD 8, NCCL_SIMPLE_THREAD_THRESHOLD 64), never fewer
  // than 3 warps on one channel. NCCL steps a channel or a halving at a time; the share here
  // follows the bytes smoothly, so that a call never gets faster as it grows.
  const double threads = p == Protocol::kLl128 ? 640 : 512;
  const double per_thread = p == Protocol::kSimple ? 64 : p == Protocol::kLl128 ? 8 : 8.0 * ranks;
  const double all = std::max(channels, 1) * threads;
  return std::clamp(static_cast<double>(bytes) / (all * per_thread), 96 / all, 1.0);
}

int32_t nvls_bus_bandwidth_group() {
  // Inside an NVSwitch server NVLS bus bandwidth grows with the group as the multimem traffic per
  // link, (n+1)/n of the buffer, predicts: 8 x H100 at 5, 6, 7, 8 GPUs measure 420, 440, 460,
  // 480 GB/s busBw at an algbw of 258 to 273 (NVIDIA/nccl issue 1455), where the model gives 420,
  // 450, 473, 490. Past a server's 8 GPUs it does not: Blackwell NVLS all-reduce measures 830+
  // GB/s on 8 B200 (NVIDIA/nccl issue 1807), 845 on 8 B300 (issue 2140), 811 on 8 GB200 over two
  // NVL72 trays (lixueduan.com, GB200 MNNVL nccl-test) and 839 on all 72 GPUs of a GB200 NVL72
  // rack (coreweave/nccl-tests README, algbw 425 GB/s), where the link traffic would allow 1037.
  // So per GPU the rack's switches sustain 80% of the 8-GPU multimem rate at 72 GPUs. NCCL's
  // own later model has the same shape: its NVLS all-reduce bandwidth, 2 x nvlsEfficiency x the
  // channels' bwIntra, converts to algorithm bandwidth by nRanks / nSteps like a ring's (tuning.cc
  // of 2.27 on, src/tuning/nvls.cc), a bus bandwidth that no group size changes. Between 8 and
  // 72 GPUs no measurement is public; the model holds the 8-GPU bus bandwidth throughout.
  return 8;
}

NcclGraph nccl_graph(GpuArch arch, int32_t ranks, int32_t nodes, int32_t nvlinks, double nic_gbps,
                     bool nvls, int32_t smallest_node) {
  const bool even = smallest_node == 0;
  if (ranks < 1 || nodes < 1 || nvlinks < 0 || (even && ranks % nodes != 0) ||
      (!even && (nodes < 2 || smallest_node < 1 || ranks - smallest_node < nodes - 1 ||
                 (ranks - smallest_node) % (nodes - 1) != 0 ||
                 smallest_node > (ranks - smallest_node) / (nodes - 1))))
    throw std::invalid_argument(
        "NCCL graph needs ranks >= 1 over nodes >= 1 of one size, the last perhaps smaller");
  // The smallest node bounds what every node's search finds: NVLS's GPUs, the NICs a ring uses.
  const int32_t per_node = even ? ranks / nodes : smallest_node;
  NcclGraph g;
  g.ranks = ranks;
  g.nodes = nodes;
  g.arch = arch;
  const ArchFigures& f = figures(arch);
  g.even_nodes = even;
  g.nvls = nvls && f.nvls && per_node > 2 && even;
  // Total NVLink bandwidth per GPU as NCCL's topology sees it: links x SMxx_NVLINK_BW.
  const double total = nvlinks * f.nvlink_link_gbps;
  // search.cc: rings are searched at the first speed of speedArrayIntra (top 40 GB/s),
  // sm90SpeedArrayIntra (top 60 GB/s) or sm100SpeedArrayIntra (top 90) that fits, as many
  // channels as the links carry; on NVSwitch systems channels are then duplicated at half the
  // speed each.
  const double top = f.intra_top_gbps;
  const int32_t rings = std::max<int32_t>(1, static_cast<int32_t>(total / top));
  g.channels = 2 * rings;
  g.bw_intra_gbps = total > 0 ? top / 2 : 0;
  const double inter = inter_speed(f, nic_gbps);
  g.bw_inter_gbps = inter * rings / static_cast<double>(g.channels);
  if (nodes > 1) {
    // One ring per NIC, each NIC serving one of the node's GPUs here (rail-optimized), as many
    // as the search finds room for.
    const int32_t nics = std::min(per_node, rail_channels(arch, nvlinks, nic_gbps));
    g.bw_inter_gbps = inter * nics / static_cast<double>(g.channels);
  }
  return g;
}

int32_t rail_channels(GpuArch arch, int32_t nvlinks, double nic_gbps) {
  // Each channel takes one NIC at the inter speed and crosses every GPU's NVLink but its NIC's
  // (one NET per channel, ncclTopoSearchRecNet), so C channels need (C - 1) x speed of a GPU's
  // NVLink: floor(NVLink / speed) + 1 of them, and the ring search stops at maxChannels =
  // MAXCHANNELS / 2 = 32 (init.cc). A DGX H100's 8 NICs and a B200 server's 8 all fit (room for 8
  // and 16); an H800's 8 NVLinks leave room for 4 at 48 GB/s (the search may settle a speed lower
  // for 5 at 40, the same total within 4%); a 72-GPU GB200 NVL72 clique's rings cross racks on 16
  // of its 72 NICs.
  const ArchFigures& f = figures(arch);
  const double speed = inter_speed(f, nic_gbps);
  const auto fit = static_cast<int32_t>(nvlinks * f.nvlink_link_gbps / speed) + 1;
  return std::clamp(fit, 1, 32);
}

double step_latency_us(NcclAlgo algo, Protocol p, bool inter_node) {
  const double hw = kHwLat[inter_node ? 1 : 0][algo_index(algo)][proto_index(p)];
  return algo == NcclAlgo::kPat ? hw / kPatStepDivisor : hw;
}

double nvls_tree_network_latency_us(int32_t nodes) {
  return 2 * log2i(nodes) * step_latency_us(NcclAlgo::kNvlsTree, Protocol::kSimple, true);
}
double base_latency_us(NcclAlgo algo, Protocol p) {
  return kBaseLat[algo_index(algo)][proto_index(p)];
}

double tree_one_gpu_share() {
  return kTreeOneGpuShare;
}

double pat_bandwidth_share() {
  return kPatBandwidthShare;
}

double pat_rank_latency_us() {
  return 2.8;  // "Still a linear part; hopefully we'll manage to remove it at some point."
}

double model_bandwidth_gbps(Op op, NcclAlgo algo, Protocol p, const NcclGraph& g) {
  if (!runs(op, algo, p, g)) return 0;
  if (algo == NcclAlgo::kNvls || algo == NcclAlgo::kNvlsTree) return nvls_bandwidth_gbps(op, g);
  const int a = static_cast<int>(g.arch), ni = nodes_index(g.nodes);
  const double ppn = static_cast<double>(g.ranks) / g.nodes;
  double bw = g.nodes <= 2 ? g.bw_intra_gbps : g.bw_inter_gbps;
  double bus = g.channels * bw;
  const double ll_max = kLlMaxBw[g.nodes == 1 ? a : 0][ni];
  if (algo == NcclAlgo::kRing && p == Protocol::kLl) bus = std::min(ll_max, bus * 0.5);
  if (algo == NcclAlgo::kRing && p == Protocol::kLl128)
    bus = std::min(bus * (ppn < 2 ? 0.7 : 0.92), g.channels * kRingLl128PerCh[a][ni]);
  if (algo == NcclAlgo::kTree) bus = std::min(bus * .92, g.channels * kTreePerCh[a][ni]);
  if (algo == NcclAlgo::kTree && p == Protocol::kLl) bus = std::min(bus / 3.8, ll_max);
  if (algo == NcclAlgo::kTree && p == Protocol::kLl128)
    bus = std::min(bus * (g.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                   g.channels * kTreeLl128PerCh[a][ni]);
  if (algo == NcclAlgo::kTree && g.tree_one_gpu) bus *= kTreeOneGpuShare;
  // Bus to algorithm bandwidth: a ring moves nsteps/ranks of the buffer per rank, a tree twice.
  if (algo == NcclAlgo::kRing) return bus * g.ranks / ring_steps(op, g).first;
  // PAT's bus bandwidth is taken as its algorithm bandwidth, at .75 of the channels'.
  if (algo == NcclAlgo::kPat) return bus * kPatBandwidthShare;
  return bus * 0.5;
}

double model_latency_us(Op op, NcclAlgo algo, Protocol p, const NcclGraph& g) {
  if (!runs(op, algo, p, g)) return std::numeric_limits<double>::infinity();
  if (g.ranks <= 1) return 0;
  double intra = step_latency_us(algo, p, false);
  const double inter = step_latency_us(algo, p, true);
  const int32_t ppn = g.ranks / g.nodes;
  if (algo == NcclAlgo::kNvls) return intra + (g.nodes > 1 ? inter : 0);
  if (algo == NcclAlgo::kNvlsTree) return intra + nvls_tree_network_latency_us(g.nodes);
  if (algo == NcclAlgo::kPat)
    return base_latency_us(algo, p) + log2i(g.nodes) * inter + g.ranks * pat_rank_latency_us();
  double lat = base_latency_us(algo, p);
  if (algo == NcclAlgo::kTree) return lat + 2 * ((ppn - 1) * intra + log2i(g.nodes) * inter);
  if (op == Op::kBroadcast)
    return lat + ring_steps(op, g).first * step_latency_us(algo, p, g.nodes > 1);
  const double overhead = g.nodes > 1 ? kNetOverheadUs * (p == Protocol::kSimple ? 3 : 1) : 0;
  intra = std::max(intra, overhead);
  const auto [steps, inter_steps] = ring_steps(op, g);
  return lat + (steps - inter_steps) * intra + inter_steps * inter;
}

double model_time_us(Op op, NcclAlgo algo, Protocol p, const NcclGraph& g, Bytes bytes) {
  double bw = model_bandwidth_gbps(op, algo, p, g);
  if (bw <= 0) return std::numeric_limits<double>::infinity();
  double lat = model_latency_us(op, algo, p, g);
  const int log_size = log2i(bytes >> 6);
  if (algo == NcclAlgo::kTree && log_size < 23) bw *= kTreeCorrection[proto_index(p)][log_size];
  // The ring's plateau: multi-node Simple all-reduce pays 1.4x latency (1.9x before Ampere) once
  // every channel's per-rank share reaches 64 bytes.
  if (algo == NcclAlgo::kRing && p == Protocol::kSimple && g.nodes > 1 && op == Op::kAllReduce &&
      bytes / (static_cast<int64_t>(g.channels) * g.ranks) >= 64)
    lat *= g.arch == GpuArch::kVolta ? 1.9 : 1.4;
  // bytes / (1000 * GB/s) is µs.
  return lat + static_cast<double>(bytes) / (1000.0 * bw);
}

std::string_view to_string(NcclAlgo algo) {
  constexpr std::array<std::string_view, kNcclAlgos.size()> kNames{"tree", "ring", "nvls",
                                                                   "nvls_tree", "pat"};
  return kNames[static_cast<std::size_t>(algo)];
}

namespace {

// Calls f(choice) for every (algorithm, protocol) choose_nccl weighs, in NCCL's search order,
// without building a list: choose_nccl runs for every collective a step launches.
template <typename F>
void each_candidate(Op op, const NcclGraph& g, Bytes bytes, const NcclRestrict& only, F&& f) {
  for (const NcclAlgo algo : kNcclAlgos) {
    if (only.fix_algo && algo != only.algo) continue;
    for (const Protocol p : kNcclProtocols) {
      if (only.protocol != Protocol::kAuto && p != only.protocol) continue;
      if (only.protocol == Protocol::kAuto && p == Protocol::kLl128 && g.nodes > 1 &&
          !g.ll128_between_servers)
        continue;
      const double t = model_time_us(op, algo, p, g, bytes);
      if (std::isfinite(t)) f(NcclChoice{algo, p, t});
    }
  }
}

}  // namespace

std::vector<NcclChoice> nccl_candidates(Op op, const NcclGraph& g, Bytes bytes,
                                        const NcclRestrict& only) {
  std::vector<NcclChoice> out;
  each_candidate(op, g, bytes, only, [&](const NcclChoice& c) { out.push_back(c); });
  return out;
}

NcclChoice choose_nccl(Op op, const NcclGraph& g, Bytes bytes, const NcclRestrict& only) {
  NcclChoice best;
  best.time_us = std::numeric_limits<double>::infinity();
  each_candidate(op, g, bytes, only, [&](const NcclChoice& c) {
    if (c.time_us < best.time_us) best = c;
  });
  if (!std::isfinite(best.time_us)) {
    // Nothing allowed runs (say LL128 forced on NVLS): NCCL falls back to the ring.
    best.algo = NcclAlgo::kRing;
    best.protocol = only.protocol == Protocol::kAuto ? Protocol::kSimple : only.protocol;
    best.time_us = model_time_us(op, best.algo, best.protocol, g, bytes);
  }
  return best;
}

}  // namespace cs::coll
