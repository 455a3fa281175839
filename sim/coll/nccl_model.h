// NCCL's own latency + bandwidth cost model (src/graph/tuning.cc), used to pick the algorithm and
// protocol of a collective by size and group, as NCCL does.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/coll/collective.h"
#include "sim/core/units.h"

namespace cs::coll {

// The most channels NCCL opens for one communicator (MAXCHANNELS, src/include/device.h: 32 in
// older releases, 64 in recent ones).
inline constexpr int32_t kMaxChannels = 64;

// NCCL's three protocols. Simple moves data with plain stores and a memory fence per step (full
// bandwidth, microseconds per step); LL packs 4 bytes of data with a 4-byte flag into each 8-byte
// store (half the bandwidth, no fence); LL128 does the same per 128-byte line with 8 bytes of
// flags (120 of 128 bytes are data). kAuto: the model's choice.
enum class Protocol : uint8_t { kSimple, kLl, kLl128, kAuto };
Protocol parse_protocol(std::string_view text);  // "simple", "ll", "ll128", "auto"
std::string_view to_string(Protocol p);
// Bytes a protocol puts on the wire per byte of payload: 1, 8/4, 128/120.
double protocol_wire_factor(Protocol p);

// NCCL's algorithms as its model knows them. kNvls: NVLink SHARP, the reduction done by the
// NVSwitch (multimem loads and multicast stores), one server of Hopper GPUs. kNvlsTree: NVLS
// inside each of several servers and a tree between them (all-reduce). kPat: NCCL 2.23's
// parallel aggregated trees, all-gather and reduce-scatter over one GPU per server.
enum class NcclAlgo : uint8_t { kTree, kRing, kNvls, kNvlsTree, kPat };
// NCCL's algorithms and protocols in the order its tuning searches them (and logs its table).
inline constexpr std::array<NcclAlgo, 5> kNcclAlgos{
    NcclAlgo::kTree, NcclAlgo::kRing, NcclAlgo::kNvls, NcclAlgo::kNvlsTree, NcclAlgo::kPat};
inline constexpr std::array<Protocol, 3> kNcclProtocols{Protocol::kLl, Protocol::kLl128,
                                                        Protocol::kSimple};
// Whether NCCL has kernels of `algo` for the Simple protocol only (NVLS, NVLS-tree, PAT).
bool simple_protocol_only(NcclAlgo algo);
// "tree", "ring", "nvls", "nvls_tree", "pat".
std::string_view to_string(NcclAlgo algo);

// GPU generation, the row index of NCCL's per-architecture tables.
enum class GpuArch : uint8_t { kVolta, kAmpere, kHopper, kBlackwell };
// "volta", "ampere", "hopper", "blackwell" (gpu.proto GpuProfile.architecture) -> GpuArch.
// Throws std::invalid_argument naming the known ones for any other.
GpuArch parse_gpu_arch(std::string_view name);
// The known names, comma-separated, in GpuArch order.
std::string gpu_arch_names();
// Whether the architecture's NVSwitch reduces in the switch (NVLink SHARP: Hopper's
// third-generation NVSwitch and Blackwell's fourth).
bool has_nvls(GpuArch arch);

// What NCCL's topology search hands the tuning model for one communicator.
struct NcclGraph {
  int32_t ranks = 1;
  int32_t nodes = 1;
  int32_t channels = 1;
  double bw_intra_gbps = 0;  // per channel, GB/s
  double bw_inter_gbps = 0;  // per channel, GB/s (NIC)
  GpuArch arch = GpuArch::kHopper;
  bool nvls = false;  // NVLink SHARP in each server (has_nvls, more than 2 GPUs of it)
  bool pat = false;   // PAT enabled (NCCL_PAT_ENABLE, NCCL 2.23+) and one GPU per server
  // Every node holds as many ranks. Where the last holds fewer, only the ring is timed: the tree's
  // chains, NVLS and NVLS-tree are scheduled over servers alike.
  bool even_nodes = true;
  // The tree graph's pattern is NCCL_TOPO_PATTERN_TREE: each channel's parent and children
  // across servers go through one GPU and its NIC (tree_one_gpu_share).
  bool tree_one_gpu = false;
  // LL128 relies on every hop keeping a 128-byte store in order. Where the NICs sit behind the
  // CPU, as on GH200 nodes, the NIC's writes into GPU memory over C2C can land a line's two
  // 64-byte halves out of order (NVIDIA/nccl pull request 2053). NCCL still enables LL128 there by
  // default (tuning.cc: paths up to PXN on Hopper, the GPU-CPU-NIC path P2C among them, unless
  // NCCL_LL128_C2C=0), and the Alps runs that took it returned wrong values and, on 8 nodes, ran
  // 4-5x slower than the model's LL128 (nccl-gh200-alps-512gpu-128node-allreduce-16m's notes). So
  // across such servers the model runs LL and Simple, as NCCL_LL128_C2C=0 does, unless the protocol
  // is forced (NCCL_PROTO).
  bool ll128_between_servers = true;
};

// The graph NCCL's search finds on a DGX-like server: per GPU `nvlinks` links of NCCL's per-link
// NVLink bandwidth (topo.h), channels of the search's top speed, doubled on NVSwitch systems, and
// one NIC of `nic_gbps` GB/s per channel pair across servers. `ranks` split evenly over `nodes`,
// or, given `smallest_node` > 0, over nodes of the same size but the last, which holds that many.
NcclGraph nccl_graph(GpuArch arch, int32_t ranks, int32_t nodes, int32_t nvlinks, double nic_gbps,
                     bool nvls, int32_t smallest_node = 0);

// The ring channels NCCL's search gives a node's GPUs across nodes, one NIC each: as many as the
// GPUs' NVLink leaves room for at the inter-node speed, at most 32 (a 72-GPU NVLink domain's
// rings use 16 of its NICs).
int32_t rail_channels(GpuArch arch, int32_t nvlinks, double nic_gbps);

// NCCL's per-link NVLink bandwidth (topo.h, SMxx_NVLINK_BW) over the link's raw rate per
// direction (25 GB/s NVLink 3 and 4, 50 GB/s NVLink 5): the share of line rate that carries NCCL
// payload.
double nvlink_payload_efficiency(GpuArch arch);

// NCCL's share of a tree's bandwidth where its graph is NCCL_TOPO_PATTERN_TREE (tuning.cc: "if
// (... pattern == NCCL_TOPO_PATTERN_TREE) busBw *= .85"): 0.85. On Hopper and later the search
// (search.cc, "Try a simpler tree") falls back to that pattern from the balanced tree, which
// splits a server's parent and child traffic over two GPUs.
double tree_one_gpu_share();

// The share of a NIC's data rate that NCCL's network transport carries as payload: 0.96, from
// NCCL's maintainers' per-NIC figures and its search's inter-node speeds (packet headers, PCIe,
// proxy handshakes together).
double net_transport_efficiency();

// The share of the link bandwidth that NVLink SHARP (NVLS) reductions sustain through the NVSwitch,
// from NCCL's nvlsEfficiency table (Hopper 0.85); 0 where NCCL has no NVLS (before Hopper).
double nvls_switch_efficiency(GpuArch arch);

// NCCL's NVLS all-reduce on one server as measured, beyond its bytes (nvls_loop_figures). The
// kernel walks the buffer in loops (nvls_loop_bytes), each through three warp groups in turn:
// scatter into the switch's buffers, the switch's reduce and multicast, gather out of them.
struct NvlsLoopFigures {
  double link_share = 0;    // of NCCL's NVLink payload rate, what the multimem traffic reaches
  double head_sync_us = 0;  // per loop and head GPU: the flag waits between the warp groups
  double call_us = 0;       // per call beyond its loops
};
// The figures of `arch`; none where no NVLS curve over sizes is published (there NCCL's
// nvlsEfficiency and latencies stand).
std::optional<NvlsLoopFigures> nvls_loop_figures(GpuArch arch);
// The bytes of one NVLS loop over `heads` GPUs for a call of `bytes`: NCCL_NVLS_NCHANNELS (16)
// CTAs, each taking one chunk per head, NCCL's 128 KiB chunk cut to 64, 32 and 16 KiB as the call
// shrinks (enqueue.cc calcCollChunking).
Bytes nvls_loop_bytes(Bytes bytes, int32_t heads);
// What one loop-step of a call of `bytes` in loops of `loop` bytes takes the time of: a whole
// loop while every CTA the call reaches holds a chunk a head, less below (16 CTAs, one chunk a
// head each, NCCL's kernels: src/device/all_reduce.h).
Bytes nvls_loop_step_bytes(Bytes bytes, Bytes loop);
// The bytes of one NVLS-tree loop over `heads` NVLS heads a server (one per GPU) on `nodes`
// servers: 16 CTAs, each taking one chunk per head, NCCL's 128 KiB chunk (64 KiB from four
// servers) cut to 64 and 32 KiB as the call shrinks (enqueue.cc calcCollChunking).
Bytes nvls_tree_loop_bytes(Bytes bytes, int32_t heads, int32_t nodes);

// The share of NCCL's channels, and of a channel's threads, that a call of `bytes` runs on: NCCL
// drops channels, then halves a channel's threads, while the call holds fewer bytes than channels
// x threads x its protocol's threshold (enqueue.cc, ncclTopoGetAlgoInfo / topoGetAlgoInfo): the
// bytes over that product, at least 3 warps of one channel, 1 at and above it.
double small_call_share(Bytes bytes, Protocol p, int32_t ranks, int32_t channels);

// The NVLS group size past which NVLS all-reduce stops gaining bus bandwidth: 8, the NVSwitch
// server. Inside a server the multimem traffic per GPU link, (n+1)/n of the buffer, sets the rate
// and bus bandwidth grows with the group; across a multi-node NVLink domain (GB200 NVL72) it stays
// at the 8-GPU figure (see the definition for the measurements).
int32_t nvls_bus_bandwidth_group();

// The most algorithm bandwidth NCCL's NVLS-tree all-reduce kernel reaches over `nodes` servers of
// `local` GPUs (`ranks` in all), GB/s: the per-channel ceiling of NCCL's tuning model for that
// kernel (perChMaxNVLSTreeBws) on each channel of its NVLS graph, one per head GPU of a
// server (nvls_tree_channels), in bus bandwidth, as algorithm bandwidth. 0: no ceiling (one
// server, and every GPU but Hopper: see ArchFigures::nvls_tree_ceiling).
double nvls_tree_ceiling_gbps(GpuArch arch, int32_t ranks, int32_t nodes, int32_t local);
// The channels of NCCL's NVLS graph on servers of `local` GPUs: one per head GPU, at most
// NCCL_MAX_NVLS_ARITY (32).
int32_t nvls_tree_channels(int32_t local);

// NCCL's model terms for (op, algo, protocol): latency in µs, algorithm bandwidth in GB/s (0 where
// NCCL does not run that combination), time in µs for `bytes` (tuning.cc ncclTopoGetAlgoTime).
double model_latency_us(Op op, NcclAlgo algo, Protocol p, const NcclGraph& g);
double model_bandwidth_gbps(Op op, NcclAlgo algo, Protocol p, const NcclGraph& g);
double model_time_us(Op op, NcclAlgo algo, Protocol p, const NcclGraph& g, Bytes bytes);

// NCCL's per-step latency (hwLat) of one hop inside a server (NVLink) or across servers, µs, and
// its fixed per-collective latency (baseLat). PAT's step is hwLat / 3.5 and its call pays 2.8 µs
// per rank on top of baseLat (pat_rank_latency_us).
double step_latency_us(NcclAlgo algo, Protocol p, bool inter_node);
// NVLS-tree's network latency over `nodes` servers: NCCL's network hwLat per tree hop, up the
// double binary tree and down again (2 log2(nodes) hops).
double nvls_tree_network_latency_us(int32_t nodes);
double base_latency_us(NcclAlgo algo, Protocol p);
double pat_rank_latency_us();
// PAT's share of its channels' bandwidth in NCCL's model (busBw x .75).
double pat_bandwidth_share();

struct NcclChoice {
  NcclAlgo algo = NcclAlgo::kRing;
  Protocol protocol = Protocol::kSimple;
  double time_us = 0;
};
// The (algorithm, protocol) of least model time, among those allowed: `algo_fixed` / `proto_fixed`
// restrict the search when set (they are what NCCL_ALGO / NCCL_PROTO do).
struct NcclRestrict {
  bool fix_algo = false;
  NcclAlgo algo = NcclAlgo::kRing;
  Protocol protocol = Protocol::kAuto;
};
NcclChoice choose_nccl(Op op, const NcclGraph& g, Bytes bytes, const NcclRestrict& only = {});
// Every (algorithm, protocol) that choose_nccl weighs for the call, with its model time, in the
// order NCCL searches them (tree, ring, NVLS, NVLS-tree, PAT; LL, LL128, Simple): those NCCL runs
// here and `only` allows. choose_nccl takes the first of least time.
std::vector<NcclChoice> nccl_candidates(Op op, const NcclGraph& g, Bytes bytes,
                                        const NcclRestrict& only = {});

}  // namespace cs::coll
