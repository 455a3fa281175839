// Turns a collective call (op, group, size) into the schedule NCCL would run: its choice of
// algorithm, protocol and channels, and the wire costs of that protocol on that GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/coll/collective.h"
#include "sim/coll/nccl_model.h"
#include "sim/coll/schedule.h"

namespace cs::coll {

struct OpForm;  // algorithms/registry.h

// Every knob of the NCCL model, each one a switch (config: RunConfig.nccl and EffectsConfig 40-59;
// CLI: collective --protocol, --channels, --nvls, --no-*).
struct NcclSettings {
  Protocol protocol = Protocol::kAuto;  // NCCL_PROTO: kAuto lets the model choose
  int32_t channels = 0;  // rings per collective across servers; 0: NCCL's (nic_channels)
  bool nvls = true;      // NCCL_NVLS_ENABLE
  bool pat = true;       // NCCL_PAT_ENABLE (NCCL 2.23+; off: NCCL 2.20's choices)
  // Effects (all on by default, as a real run pays them):
  bool protocol_overhead = true;  // LL / LL128 flag bytes on the wire
  bool nvlink_overhead = true;    // NCCL's NVLink payload efficiency (20.6 of 25 GB/s per link)
  bool nvls_efficiency = true;    // NVLS through the NVSwitch at nvls_switch_efficiency of links
  bool nvls_bus_cap = true;       // NVLS past 8 GPUs at the 8-GPU bus bandwidth (NVL72 racks)
  bool nvls_tree_ceiling = true;  // NVLS-tree within NCCL's per-channel ceiling (H100 servers)
  bool nvls_loops = true;         // one server's NVLS in its measured loops (nvls_loop_figures)
  bool nvls_tree_loops = true;    // NVLS-tree across servers in NCCL's loops (Hopper)
  bool small_calls = true;        // a small call on one server on fewer channels (small_call_share)
  bool tree_pattern = true;       // one-GPU-per-server trees at NCCL's .85 (tree_one_gpu_share)
  bool network_overhead = true;   // NICs at NCCL's 96% of data rate, or the topology's share
  bool step_latency = true;       // NCCL's per-hop (hwLat) and per-call (baseLat) latencies
  bool rail_rings = true;         // across servers, one rail-aligned ring per NIC (else one ring)
  bool nccl_choice = true;        // algorithm by NCCL's cost model (else the fixed size rule)
  bool operator==(const NcclSettings&) const = default;
};

// Whether NCCL's cost model chooses the algorithm and protocol of `op`: all-reduce, all-gather,
// reduce-scatter and broadcast. NCCL runs all-to-all and send/recv as point-to-point sends
// (Simple protocol, no algorithm choice).
bool nccl_tuned(Op op);

// A GPU and its server as NCCL's model needs them: the architecture (the row of NCCL's tables),
// NVLinks per GPU and NIC bandwidth per GPU in GB/s. Filled from the GPU profile
// (compute::nccl_hardware), where each figure cites its source.
struct NcclHardware {
  GpuArch arch = GpuArch::kHopper;
  int32_t nvlinks = 18;
  double nvlink_gbps = 450;  // NVLink bandwidth per GPU per direction (gpu.proto), GB/s
  double nic_gbps = 50;
  // What NCCL's SM copies reach of its NVLink figure (gpu.proto nvlink_copy_efficiency).
  double nvlink_copy_efficiency = 1.0;
  // A kernel's launch and gap on this GPU (gpu.proto kernel_launch_overhead_us), in µs.
  double kernel_launch_us = 0;
  // Whether the server's GPUs meet in NVSwitches (the topology's; NodeFabric nvlink_mesh), where
  // NVLink SHARP lives: without them NCCL has no NVLS.
  bool nvswitch = true;
  // Channel pairs NCCL runs over each NIC across servers (the topology's NodeFabric
  // nccl_channels; 0: one pair per NIC, rail_channels' rule).
  int32_t pairs_per_nic = 0;
  // Whether LL128 runs between servers (not where the NICs sit behind the CPU).
  bool ll128_between_servers = true;
  // The share of a NIC's data rate NCCL's transport carries (0: net_transport_efficiency's).
  double net_efficiency = 0;
};

class NcclTuning {
 public:
  NcclTuning() = default;  // no NCCL data: ideal wire, choose_algorithm's size rule
  NcclTuning(std::optional<NcclHardware> hw, NcclSettings settings)
      : hw_(hw), settings_(settings) {}

  // The schedule key of one call: n ranks, members_per_node consecutive ranks per server, the last
  // server perhaps fewer (>= n: one server; 1 when members are spread: members_per_server),
  // `bytes` the call's size
  // and `requested` the algorithm asked for (kAuto: NCCL's choice). Chunks and window by size.
  ScheduleKey plan(Op op, int32_t n, int32_t members_per_node, Bytes bytes,
                   Algorithm requested = Algorithm::kAuto) const;
  // NCCL's model for the same call (which algorithm and protocol, and its predicted time).
  NcclChoice model_choice(Op op, int32_t n, int32_t members_per_node, Bytes bytes,
                          Algorithm requested = Algorithm::kAuto) const;
  // Every (algorithm, protocol) that choice weighs, with its model time (nccl_candidates).
  std::vector<NcclChoice> model_candidates(Op op, int32_t n, int32_t members_per_node, Bytes bytes,
                                           Algorithm requested = Algorithm::kAuto) const;
  NcclGraph graph(int32_t n, int32_t members_per_node) const;
  const NcclSettings& settings() const { return settings_; }
  // Point-to-point calls (send/recv, all-to-all) are kernels outside NCCL's cost model, with no
  // baseLat: each pays the GPU's kernel launch instead (with the step-latency effect on).
  Time p2p_launch_latency() const;
  bool has_hardware() const { return hw_.has_value(); }
  // Channels of `algo` across servers of `local` GPUs each: one per NIC, on as many NICs as
  // NCCL's search fits (rail_channels; all `local` without hardware figures), and for NCCL's
  // tree the topology's channel pairs per NIC (NcclHardware::pairs_per_nic), whose chunks fill
  // the tree's pipeline at their share of the NIC. Rings keep one a NIC: with several, the
  // flows' per-step latencies hide behind each other, and from 8 to 256 Alps nodes the model's
  // rings would lose none of the 6% the runs' lose (nccl-gh200-alps-*-allreduce-4g).
  int32_t nic_channels(int32_t local, Algorithm algo) const;
  // Throws std::invalid_argument, with the reason, when `requested` is NVLS or NVLS-tree and
  // NCCL would not run it here: NVLS switched off, a GPU without NVLink SHARP, or too few GPUs of
  // the group per server. plan() checks it for every algorithm asked for by name.
  void require_nvls_possible(Algorithm requested, int32_t n, int32_t members_per_node) const;
  // Throws std::invalid_argument, with the reason, when `requested` is NVLS, NVLS-tree or PAT,
  // which NCCL runs with the Simple protocol only, and the settings force LL or LL128.
  void require_protocol_runs(Algorithm requested) const;

 private:
  // What NCCL_ALGO and NCCL_PROTO leave to the model: `requested` (kAuto: any) and the protocol
  // the settings force.
  NcclRestrict restrict_to(Algorithm requested) const;
  // The channels of `key`'s algorithm (`form`, its form for the op; nullptr: none) over servers
  // of `local` members: rail-aligned rings across servers, the channels asked for, or a mesh's.
  void place_channels(const OpForm* form, int32_t local, ScheduleKey& key) const;
  // The share of each link `key`'s messages get: protocol bytes, NCCL's NVLink and network
  // payload, NVLS's switch traffic, a small call's channels, the copy loops, NVLS-tree's
  // ceiling and the shares NCCL's model gives PAT and one-GPU trees.
  void set_link_shares(Bytes bytes, int32_t local, ScheduleKey& key) const;
  // NCCL's per-hop (hwLat) and per-call (baseLat) latencies of `key`'s algorithm and protocol.
  void set_step_latencies(ScheduleKey& key) const;
  // One server's measured NVLS loops, where `key` runs them (nvls_loop_figures).
  std::optional<NvlsLoopFigures> nvls_loops(const ScheduleKey& key) const;
  // Times NVLS and NVLS-tree calls in their loops (time_nvls_loops, time_nvls_tree_loops).
  void time_loops(Bytes bytes, int32_t local, ScheduleKey& key) const;
  // Lowers the efficiency of the side of an NVLS-tree over servers of `local` GPUs (n ranks) that
  // binds on `wire`, the switch or the NICs, so that it stays within NCCL's ceiling
  // (nvls_tree_ceiling_gbps); nothing where it already does.
  void hold_nvls_tree_ceiling(int32_t n, int32_t local, WireModel& wire) const;
  // The algorithm bandwidth, GB/s, of messages that carry 2 (ranks - 1) / ranks of the buffer
  // each way over every GPU's NVLink at `wire`'s share of its rate (NVLS's, into the switch and
  // out of it).
  double nvlink_algbw_gbps(int32_t ranks, const WireModel& wire) const;
  // Times one server's NVLS all-reduce of `bytes` as its loops run (nvls_loop_figures): the
  // schedule moves the bytes at the switch's rate in one piece, and the launch latency carries
  // the rest, the call's and each loop's syncs and the pipeline's two extra loops.
  void time_nvls_loops(Bytes bytes, const NvlsLoopFigures& f, ScheduleKey& key) const;
  // The time, us, of the loop-steps of a call of `bytes` in loops of `loop` bytes: (c + 2) for c
  // loops, each its step's bytes (nvls_loop_step_bytes) at `move_rate` bytes/us and a sync.
  static double loop_steps_us(Bytes bytes, Bytes loop, double move_rate, double sync_us);
  // The algorithm bandwidth, GB/s, an NVLS-tree over servers of `local` GPUs (n ranks) reaches on
  // `wire` on each side: the switch's, then the NICs'.
  std::pair<double, double> nvls_tree_sides_gbps(int32_t n, int32_t local,
                                                 const WireModel& wire) const;
  // Times an NVLS-tree all-reduce of `bytes` over servers of `local` GPUs as NCCL's loops run
  // (nvls_tree_loop_bytes), with one server's per-head sync and per-call figures: a call of c
  // loops takes the call, NCCL's network latency per tree hop and (c + 2) loop-steps, each a
  // loop's bytes at the rate that leaves the wire's rate, at the largest chunk, to its syncs.
  void time_nvls_tree_loops(Bytes bytes, const NvlsLoopFigures& f, int32_t local,
                            ScheduleKey& key) const;

  std::optional<NcclHardware> hw_;
  NcclSettings settings_;
};

}  // namespace cs::coll
