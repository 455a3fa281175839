#include "sim/coll/nccl_plan.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/registry.h"

namespace cs::coll {
namespace {

bool uniform(int32_t n, int32_t local) {
  return local > 1 && n % local == 0;
}

// What NCCL's algorithms are, in our schedules. NCCL's ring is our ring: on one server, with one
// GPU per server, or across servers as rail-aligned channels (channel_ring), each node-ordered
// through every GPU of a server and out on one NIC. NCCL's tree is a chain inside each server and
// a double binary tree between servers, one channel pair per NIC: our chain-tree, whose fluid form
// (chain_tree.cc) keeps a data-parallel all-reduce at any size cheap to simulate. With one member
// per server its chains are single GPUs: NCCL's double binary tree between servers, with the
// chunks NCCL's tree uses (chain_tree_pipelining).
Algorithm our_algorithm(NcclAlgo algo, Op op, int32_t n, int32_t local) {
  if (algo == NcclAlgo::kNvls) return Algorithm::kNvls;
  if (algo == NcclAlgo::kNvlsTree) return Algorithm::kNvlsTree;
  if (algo == NcclAlgo::kPat) return Algorithm::kPat;
  const bool servers = local < n && (local == 1 || uniform(n, local));
  if (algo == NcclAlgo::kTree) return servers ? Algorithm::kChainTree : Algorithm::kTree;
  return resolve(Algorithm::kAuto, op);
}

}  // namespace

bool nccl_tuned(Op op) {
  return op == Op::kAllReduce || op == Op::kAllGather || op == Op::kReduceScatter ||
         op == Op::kBroadcast;
}

NcclGraph NcclTuning::graph(int32_t n, int32_t members_per_node) const {
  const NcclHardware hw = hw_.value_or(NcclHardware{});
  const int32_t local = std::min(members_per_node, n);
  // Servers of `local` members, the last perhaps fewer (members_per_server): NCCL's nodes are
  // its hosts, so a short last server is one more node, not a node per rank (which enabled PAT,
  // NCCL's one-GPU-per-node algorithm, for 128 GPUs over a 72-GPU and a 56-GPU rack).
  const int32_t nodes = local >= n ? 1 : (n + local - 1) / local;
  const int32_t short_last = nodes > 1 && n % local != 0 ? n % local : 0;
  NcclGraph g = nccl_graph(hw.arch, n, nodes, hw.nvlinks, hw.nic_gbps,
                           settings_.nvls && hw.nvswitch, short_last);
  if (settings_.channels > 0) {
    // The same total bandwidth, split over the channels asked for.
    const double intra = g.bw_intra_gbps * g.channels, inter = g.bw_inter_gbps * g.channels;
    g.channels = settings_.channels;
    g.bw_intra_gbps = intra / g.channels;
    g.bw_inter_gbps = inter / g.channels;
  }
  // NCCL's search on servers whose GPUs meet in no NVSwitch (an NVLink mesh) lands on the tree
  // pattern with one GPU per channel to the network: NCCL 2.26.2 on quad-GH200 Alps nodes links
  // rank 6's channels 14, 18 and 22 as "7/10/2->6->14", parent 14 and children 10 and 2 all
  // through its NIC 5 (boeschf/nccl-benchmark-on-alps-2025, job-n-00032-N-0008 logs). Trees on
  // NVSwitch servers keep the balanced pattern: their measured rates need no share
  // (nccl-gb200-3rack-*-tree-16g).
  g.tree_one_gpu = settings_.tree_pattern && !hw.nvswitch && g.nodes > 1;
  g.ll128_between_servers = hw.ll128_between_servers;
  // NCCL enables PAT only with one GPU per node (ncclPatEnable).
  g.pat = settings_.pat && g.nodes == g.ranks && g.ranks > 1;
  return g;
}

int32_t NcclTuning::nic_channels(int32_t local, Algorithm algo) const {
  if (!hw_) return local;
  const int32_t nics = std::min(local, rail_channels(hw_->arch, hw_->nvlinks, hw_->nic_gbps));
  return algo == Algorithm::kChainTree ? nics * std::max(1, hw_->pairs_per_nic) : nics;
}

void NcclTuning::require_nvls_possible(Algorithm requested, int32_t n,
                                       int32_t members_per_node) const {
  const NcclAlgo nccl = algorithm_info(requested).nccl;
  if (nccl != NcclAlgo::kNvls && nccl != NcclAlgo::kNvlsTree) return;
  const std::string name(to_string(requested));
  // Asked for by name, NVLS where NCCL would never run it would report the NVSwitch reducing at a
  // rate the links cannot carry (372 GB/s bus bandwidth on A100's 300 GB/s NVLink).
  if (!settings_.nvls)
    throw std::invalid_argument(name + " with NVLS switched off (--nvls off, nccl.nvls false): " +
                                "the two contradict; drop one");
  if (!hw_->nvswitch)
    throw std::invalid_argument(name + ": these servers' GPUs meet in no NVSwitch (a direct " +
                                "NVLink mesh), and NVLS is the NVSwitch's reduction");
  if (!has_nvls(hw_->arch))
    throw std::invalid_argument(name + ": this GPU's NVSwitch has no NVLink SHARP (NVLS needs " +
                                "Hopper's third-generation NVSwitch or later; A100 has none)");
  if (!graph(n, members_per_node).nvls)
    throw std::invalid_argument(name + ": NCCL runs NVLS only with more than 2 GPUs of a group " +
                                "on each server's NVSwitch");
}

void NcclTuning::require_protocol_runs(Algorithm requested) const {
  const Protocol p = settings_.protocol;
  // NCCL has no LL or LL128 kernel for these: with both forced it finds no algorithm and fails.
  if (simple_protocol_only(algorithm_info(requested).nccl) && p != Protocol::kAuto &&
      p != Protocol::kSimple)
    throw std::invalid_argument(std::string(to_string(requested)) + " runs with NCCL's simple " +
                                "protocol only, not " + std::string(to_string(p)) +
                                " (--protocol, nccl.protocol): drop one");
}

NcclRestrict NcclTuning::restrict_to(Algorithm requested) const {
  NcclRestrict only;
  only.protocol = settings_.protocol;
  if (requested != Algorithm::kAuto) {
    only.fix_algo = true;
    only.algo = algorithm_info(requested).nccl;
  }
  return only;
}

NcclChoice NcclTuning::model_choice(Op op, int32_t n, int32_t members_per_node, Bytes bytes,
                                    Algorithm requested) const {
  return choose_nccl(op, graph(n, members_per_node), bytes, restrict_to(requested));
}

std::vector<NcclChoice> NcclTuning::model_candidates(Op op, int32_t n, int32_t members_per_node,
                                                     Bytes bytes, Algorithm requested) const {
  return nccl_candidates(op, graph(n, members_per_node), bytes, restrict_to(requested));
}

double NcclTuning::nvlink_algbw_gbps(int32_t ranks, const WireModel& wire) const {
  return hw_->nvlink_gbps * wire.nvlink_efficiency * ranks / (2.0 * (ranks - 1));
}

std::pair<double, double> NcclTuning::nvls_tree_sides_gbps(int32_t n, int32_t local,
                                                           const WireModel& wire) const {
  // The switch side: each GPU's messages carry 2 (local - 1) / local of the buffer each way over
  // its links, into the heads and out of them. The network side: each GPU's NIC carries its
  // shard's tree traffic, 1 / local of the buffer each way on two servers (the root of one tree,
  // the leaf of the other) and 2 / local past two (an inner node of one tree, a leaf of the other).
  const double nvlink = nvlink_algbw_gbps(local, wire);
  const double net = hw_->nic_gbps * wire.net_efficiency * local / (n / local > 2 ? 2.0 : 1.0);
  return {nvlink, net};
}

void NcclTuning::hold_nvls_tree_ceiling(int32_t n, int32_t local, WireModel& wire) const {
  const double ceiling = nvls_tree_ceiling_gbps(hw_->arch, n, n / local, local);
  if (ceiling <= 0) return;
  const auto [nvlink, net] = nvls_tree_sides_gbps(n, local, wire);
  // The ceiling slows the side that binds: on two H100 servers the switch, past two the NICs.
  if (nvlink <= net)
    wire.nvlink_efficiency *= std::min(1.0, ceiling / nvlink);
  else
    wire.net_efficiency *= std::min(1.0, ceiling / net);
}

Time NcclTuning::p2p_launch_latency() const {
  return hw_ && settings_.step_latency ? Time::from_us(hw_->kernel_launch_us) : Time{};
}

ScheduleKey NcclTuning::plan(Op op, int32_t n, int32_t members_per_node, Bytes bytes,
                             Algorithm requested) const {
  ScheduleKey key;
  key.op = op;
  key.n = n;
  const int32_t local = std::min(members_per_node, n);
  const bool collective = nccl_tuned(op);
  if (hw_ && requested != Algorithm::kAuto) {
    require_nvls_possible(requested, n, local);
    require_protocol_runs(requested);
  }
  const bool tuned = hw_ && collective && n > 1;
  const NcclChoice choice = tuned ? model_choice(op, n, local, bytes, requested) : NcclChoice{};
  key.algo = requested != Algorithm::kAuto    ? resolve(requested, op)
             : tuned && settings_.nccl_choice ? our_algorithm(choice.algo, op, n, local)
                                              : choose_algorithm(op, n, local, bytes);
  const OpForm* form = find_form(key.algo, op);  // nullptr: normalize will refuse the pair
  place_channels(form, local, key);
  const int32_t channels = form != nullptr && form->channels ? key.channels : 0;
  // The protocol NCCL runs (p2p ops: Simple); its buffers set the tree's chunks.
  const Protocol protocol = tuned ? choice.protocol : Protocol::kSimple;
  key.chunks = auto_chunks(op, key.algo, n, bytes, local, channels, protocol);
  key.window = auto_window(op, key.algo, n, key.chunks, bytes, local, channels, protocol);
  key.tail = auto_tail(op, key.algo, n, bytes, local, channels, protocol);
  const bool across = local > 1 && local < n;
  key.node_size = local >= n ? n : across ? local : (local == 1 ? 1 : 0);
  if (!hw_) return key;
  // The wire costs of that protocol (p2p ops without the ring's step terms).
  key.protocol = protocol;
  set_link_shares(bytes, local, key);
  if (!collective && n > 1) key.wire.launch_latency = p2p_launch_latency();
  if (settings_.step_latency && tuned) set_step_latencies(key);
  time_loops(bytes, local, key);
  return key;
}

void NcclTuning::place_channels(const OpForm* form, int32_t local, ScheduleKey& key) const {
  const int32_t n = key.n;
  if (form != nullptr && form->on_servers()) key.local_size = local;
  // Servers of `local` consecutive members, the last perhaps fewer (members_per_server).
  const bool across = local > 1 && local < n;
  if (form != nullptr && form->channels) {
    if (across && settings_.rail_rings) {
      // NCCL takes the channel count every node's search finds: the fullest ring a short last
      // server leaves room for (one NIC per GPU there).
      const int32_t smallest = n % local == 0 ? local : n % local;
      key.channels = settings_.channels > 0 ? settings_.channels : nic_channels(smallest, key.algo);
      key.local_size = local;
    } else if (settings_.channels > 0) {
      key.channels = settings_.channels;
    }
  }
  // On one server of directly linked GPUs NCCL spreads its ring channels over orderings that load
  // every link alike: on a quad-GH200 node each GPU's 24 channels send to each of its 3 peers 8
  // times (NCCL_DEBUG=INFO of NCCL 2.26.2, boeschf/nccl-benchmark-on-alps-2025, one-node runs).
  if (form != nullptr && form->channels && hw_ && !hw_->nvswitch && local >= n && n > 2 &&
      settings_.channels == 0) {
    key.mesh = true;
    key.channels = mesh_ring_count(n);
  }
}

std::optional<NvlsLoopFigures> NcclTuning::nvls_loops(const ScheduleKey& key) const {
  // One server's NVLS as measured, where it is (nvls_loop_figures).
  if (!settings_.nvls_loops || algorithm_info(key.algo).nccl != NcclAlgo::kNvls ||
      key.op != Op::kAllReduce)
    return std::nullopt;
  return nvls_loop_figures(hw_->arch);
}

void NcclTuning::set_link_shares(Bytes bytes, int32_t local, ScheduleKey& key) const {
  const int32_t n = key.n;
  const bool collective = nccl_tuned(key.op);
  if (settings_.protocol_overhead) key.wire.byte_factor = protocol_wire_factor(key.protocol);
  const AlgorithmInfo& info = algorithm_info(key.algo);
  if (settings_.nvlink_overhead) key.wire.nvlink_efficiency = nvlink_payload_efficiency(hw_->arch);
  if (settings_.network_overhead)
    key.wire.net_efficiency =
        hw_->net_efficiency > 0 ? hw_->net_efficiency : net_transport_efficiency();
  // What an NVLink hop really carries for this algorithm (the NVSwitch's reduction and multicast
  // traffic) lowers what its messages get of the link, as does the switch streaming its
  // reductions below link rate: as if each byte took 1/efficiency of a byte.
  const bool nvls = info.nccl == NcclAlgo::kNvls || info.nccl == NcclAlgo::kNvlsTree;
  // Past a server's 8 GPUs NVLS runs at the 8-GPU group's rate per message byte: its bus
  // bandwidth stops growing with the group (nvls_bus_bandwidth_group).
  if (info.nvlink_wire_factor != nullptr) {
    int32_t wire_group = std::min(local, n);
    if (settings_.nvls_bus_cap && nvls)
      wire_group = std::min(wire_group, nvls_bus_bandwidth_group());
    key.wire.nvlink_efficiency /= info.nvlink_wire_factor(wire_group);
  }
  // One server's NVLS in its measured loops runs the switch at its measured share of the links,
  // not NCCL's derating, which also stands for the loops' syncs.
  const auto loops = nvls_loops(key);
  const double switch_efficiency = loops ? loops->link_share : nvls_switch_efficiency(hw_->arch);
  if (settings_.nvls_efficiency && nvls && switch_efficiency > 0)
    key.wire.nvlink_efficiency *= switch_efficiency;
  // A small ring call on one server runs on NCCL's channels and threads that its bytes fill
  // (small_call_share), each channel at its share of the links: 64 KiB on 8 H100s on 2 of 12.
  // Not a broadcast: its pieces are cut for the rate of all channels (ring.cc auto pieces), and
  // at a fraction of it fewer pieces would fill the chain more slowly than more bytes.
  if (settings_.small_calls && info.nccl == NcclAlgo::kRing && collective &&
      key.op != Op::kBroadcast && local >= n && n > 1)
    key.wire.nvlink_efficiency *=
        small_call_share(bytes, key.protocol, n, graph(n, local).channels);
  // The SM copy loops of every other algorithm reach the measured share of NCCL's NVLink figure.
  if (settings_.nvlink_overhead && !nvls) key.wire.nvlink_efficiency *= hw_->nvlink_copy_efficiency;
  if (settings_.nvls_tree_ceiling && info.nccl == NcclAlgo::kNvlsTree && local > 1 && local < n)
    hold_nvls_tree_ceiling(n, local, key.wire);
  // PAT moves its data at NCCL's model's .75 of the channels' bandwidth (tuning.cc: busBw *= .75).
  if (info.nccl == NcclAlgo::kPat) {
    key.wire.nvlink_efficiency *= pat_bandwidth_share();
    key.wire.net_efficiency *= pat_bandwidth_share();
  }
  // Such a tree moves its data at NCCL's share of the tree's bandwidth (tree_one_gpu_share).
  if (info.nccl == NcclAlgo::kTree && collective && graph(n, local).tree_one_gpu) {
    key.wire.nvlink_efficiency *= tree_one_gpu_share();
    key.wire.net_efficiency *= tree_one_gpu_share();
  }
}

void NcclTuning::set_step_latencies(ScheduleKey& key) const {
  const NcclAlgo m = algorithm_info(key.algo).nccl;
  // NVLS's NVLink hwLat is the whole call's (two phases here, so half each); NVLS-tree's
  // network hwLat is per tree hop, up and down.
  const bool nvls = m == NcclAlgo::kNvls || m == NcclAlgo::kNvlsTree;
  const double intra_share = nvls ? 0.5 : 1.0;
  const double inter_share = m == NcclAlgo::kNvls ? 0.5 : 1.0;
  key.wire.intra_step_latency =
      Time::from_us(intra_share * step_latency_us(m, key.protocol, false));
  key.wire.inter_step_latency = Time::from_us(inter_share * step_latency_us(m, key.protocol, true));
  key.wire.launch_latency = Time::from_us(base_latency_us(m, key.protocol));
  if (m == NcclAlgo::kPat) key.wire.launch_latency += Time::from_us(key.n * pat_rank_latency_us());
}

void NcclTuning::time_loops(Bytes bytes, int32_t local, ScheduleKey& key) const {
  const int32_t n = key.n;
  if (const auto loops = nvls_loops(key); loops && n > 1) time_nvls_loops(bytes, *loops, key);
  // NVLS-tree across Hopper servers walks the buffer in the same kind of loops.
  if (settings_.nvls_tree_loops && algorithm_info(key.algo).nccl == NcclAlgo::kNvlsTree &&
      local > 1 && local < n && key.op == Op::kAllReduce) {
    if (const auto figures = nvls_loop_figures(hw_->arch))
      time_nvls_tree_loops(bytes, *figures, local, key);
  }
}

void NcclTuning::time_nvls_loops(Bytes bytes, const NvlsLoopFigures& f, ScheduleKey& key) const {
  const int32_t n = key.n;
  const double rate = nvlink_algbw_gbps(n, key.wire) * 1e3;  // bytes per us
  const double sync_us = settings_.step_latency ? n * f.head_sync_us : 0;
  const double call_us = settings_.step_latency ? f.call_us : 0;
  // The schedule moves the bytes in one piece; the loop-steps' rest (the pipeline's fill and
  // drain, a short last loop's rest, the syncs) is latency here.
  key.chunks = key.window = 1;
  key.tail = 0;
  key.wire.intra_step_latency = key.wire.inter_step_latency = Time{};
  key.wire.launch_latency =
      Time::from_us(call_us + loop_steps_us(bytes, nvls_loop_bytes(bytes, n), rate, sync_us) -
                    static_cast<double>(bytes) / rate);
}

double NcclTuning::loop_steps_us(Bytes bytes, Bytes loop, double move_rate, double sync_us) {
  // A call of c loops takes c + 2 loop-steps: the scatter, reduce and gather stages in turn.
  const int64_t stage_steps = (bytes + loop - 1) / loop + 2;
  const auto step = static_cast<double>(nvls_loop_step_bytes(bytes, loop));
  return static_cast<double>(stage_steps) * (step / move_rate + sync_us);
}

void NcclTuning::time_nvls_tree_loops(Bytes bytes, const NvlsLoopFigures& f, int32_t local,
                                      ScheduleKey& key) const {
  const int32_t n = key.n, nodes = n / local;
  const auto [nvlink, net] = nvls_tree_sides_gbps(n, local, key.wire);
  const double rate = std::min(nvlink, net) * 1e3;  // bytes per us
  // The wire's rate, NCCL's per-channel ceiling, is what the kernel reaches at its largest chunk,
  // the loops' syncs included: a loop's bytes move at the rest (never less than half of it).
  const double sync_us = settings_.step_latency ? local * f.head_sync_us : 0;
  const auto top = static_cast<double>(
      nvls_tree_loop_bytes(std::numeric_limits<Bytes>::max(), local, nodes));  // largest chunk
  const double move_rate = top / std::max(top / rate - sync_us, 0.5 * top / rate);
  const double loops_us =
      loop_steps_us(bytes, nvls_tree_loop_bytes(bytes, local, nodes), move_rate, sync_us);
  // The call, and NCCL's network latency per tree hop, up and down.
  const double call_us =
      settings_.step_latency ? f.call_us + nvls_tree_network_latency_us(nodes) : 0;
  // The schedule moves the bytes at the wire's rate, chunk by chunk through the servers and the
  // trees; the loops' syncs, fill and drain are latency here.
  key.wire.intra_step_latency = key.wire.inter_step_latency = Time{};
  key.wire.launch_latency = Time::from_us(call_us + loops_us - static_cast<double>(bytes) / rate);
}

}  // namespace cs::coll
