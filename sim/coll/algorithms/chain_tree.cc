// NCCL's Tree all-reduce across servers of several GPUs: per channel, a chain through the GPUs of
// every server over NVLink and a double binary tree between the servers over one NIC, chunks
// reduced up the chain and the tree and broadcast back down while later chunks still climb.
//
// As NCCL 2.x builds it (github.com/NVIDIA/nccl):
// - src/graph/connect.cc ncclTopoPreset: inside a server, channel c's tree is a chain in the order
//   of the tree graph's intra[] list (tree.up = intra[i-1], tree.down[0] = intra[i+1]); the first
//   GPU of the chain, treeToParent, talks to the parent server.
// - connect.cc connectTrees and src/graph/trees.cc ncclGetDtree: between servers, a binary tree
//   over the servers (ncclGetBtree), and the mirrored or shifted one; ncclTopoPreset duplicates
//   every channel (channel c + nChannels) and connectTrees gives the copy the other tree of the
//   pair, so each tree carries half of the data and a server is an inner node of at most one.
// - src/device/all_reduce.h runTreeSplit: half of a channel's threads reduce chunks towards the
//   root (recvReduceSend) while the other half broadcast what comes down (recvCopySend); the
//   root receives, reduces and sends back in one step (recvReduceCopySend). Reduce and broadcast
//   of different chunks therefore overlap, each chunk one NCCL buffer slot (enqueue.cc).
// Here channel ch runs on rail ch mod GPUs-per-server: its chain starts at that local index and
// goes round the server, and the chain's first GPU sends and receives the channel's traffic
// between servers on its own NIC, so every hop between servers stays on one rail and each NIC
// carries a channel pair, as NCCL's tree graph puts one channel on each NIC, or the channel pairs
// NCCL's search puts there (NcclHardware::pairs_per_nic). (NCCL's balanced tree pattern lands one
// child server's traffic on the chain's second GPU; through the same NIC, so the links carry the
// same bytes.)
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/entries.h"
#include "sim/coll/fluid_form.h"

namespace cs::coll {
namespace {

// What auto_chunks aims a chain-tree schedule at: about four million messages, but never fewer
// than 16 chunks per channel. The fluid form costs the same at any chunk count; the budget bounds
// the message schedule, run only with fluid collectives off (at 1,984 GPUs and 512 MiB: 4 M
// messages, 390 MB and 33 s). It costs bandwidth at scale: every GPU of a chain and every server of
// a tree holds a chunk until all of it has arrived, so the pipeline fills and drains in about 8
// chunk-times on 128 to 512 servers, which NCCL's 128 to 512 KiB chunks make negligible. On 1,984
// H100s at 512 MiB, 16 chunks per channel give 231 GB/s of bus bandwidth, 32 give 273 and 64 (the
// budget's) 300; NCCL's own 128 would take 8 million messages.
constexpr int64_t kChainTreeMessages = int64_t{1} << 22;
constexpr int64_t kChainTreeMinChunks = 16;

// One (channel, tree) pair's tree over the group: the chain of server q starts at local index
// `head` and goes round the server; the chains' first GPUs form the server tree.
struct ChannelTree {
  const TreeOrder& servers;
  uint32_t local = 1;
  uint32_t head = 0;

  uint32_t rank(uint32_t server, uint32_t position) const {
    return server * local + (head + position) % local;
  }
  bool root(uint32_t server, uint32_t position) const {
    return position == 0 && servers.nodes[server].parent < 0;
  }
  uint32_t parent(uint32_t server, uint32_t position) const {
    return position > 0 ? rank(server, position - 1)
                        : rank(static_cast<uint32_t>(servers.nodes[server].parent), 0);
  }
  // Up to three children: the next GPU of the chain (slot 0) and, for the chain's first GPU, the
  // first GPUs of the child servers (slots 1 and 2); -1 where there is none.
  std::array<int64_t, 3> children(uint32_t server, uint32_t position) const {
    std::array<int64_t, 3> out{kNone, kNone, kNone};
    if (position + 1 < local) out[0] = rank(server, position + 1);
    if (position == 0) {
      const TreeNode& node = servers.nodes[server];
      if (node.child0 >= 0) out[1] = rank(static_cast<uint32_t>(node.child0), 0);
      if (node.child1 >= 0) out[2] = rank(static_cast<uint32_t>(node.child1), 0);
    }
    return out;
  }
};

// One connection of a (channel, tree) pair's tree, as one chunk takes it.
struct Hop {
  uint32_t from, to;
};

// The n - 1 hops up, every GPU but the root to its parent (deepest servers first, each chain from
// its last GPU to its first, so that a GPU's children come before it), then the n - 1 hops down,
// every GPU to each of its children (root server first, each chain from its first GPU to its
// last, so that a GPU's copy arrives before it passes it on).
std::vector<Hop> chunk_hops(const ChannelTree& tree) {
  std::vector<Hop> hops;
  const std::vector<int32_t>& order = tree.servers.order;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const auto q = static_cast<uint32_t>(*it);
    for (uint32_t i = tree.local; i-- > 0;)
      if (!tree.root(q, i)) hops.push_back({tree.rank(q, i), tree.parent(q, i)});
  }
  for (const int32_t server : order) {
    const auto q = static_cast<uint32_t>(server);
    for (uint32_t i = 0; i < tree.local; ++i)
      for (const int64_t child : tree.children(q, i))
        if (child != kNone) hops.push_back({tree.rank(q, i), static_cast<uint32_t>(child)});
  }
  return hops;
}

std::array<TreeOrder, 2> server_trees(const ScheduleKey& key) {
  const auto servers = static_cast<int32_t>(key.n / key.local_size);
  return {tree_order(servers, 0), tree_order(servers, 1)};
}

ChannelTree channel_tree(const ScheduleKey& key, const std::array<TreeOrder, 2>& trees, uint32_t ch,
                         uint32_t t) {
  const auto local = static_cast<uint32_t>(key.local_size);
  return ChannelTree{trees[t], local, ch % local};
}

// Units: (channel x 2 + tree) x chunks + chunk. Per chunk, per channel and tree, every GPU but the
// root sends its partial sum up once (after all its children's have landed) and every GPU that
// has children sends the sum down to each once (the root after its children's partial sums, the
// others after their own copy arrived): 2 (n - 1) messages, one per hop of chunk_hops.
Schedule build_chain_tree(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  const auto c = static_cast<uint32_t>(key.chunks);
  const auto channels = static_cast<uint32_t>(key.channels);
  ScheduleBuilder b(key, channels * 2 * c);
  const auto trees = server_trees(key);
  std::vector<std::vector<Hop>> hops;  // per (channel, tree) pair
  for (uint32_t ch = 0; ch < channels; ++ch)
    for (uint32_t t = 0; t < 2; ++t) hops.push_back(chunk_hops(channel_tree(key, trees, ch, t)));
  // One connection per hop of each pair, the same hop chunk after chunk.
  std::vector<std::vector<Connection>> connections;
  for (const auto& h : hops) connections.emplace_back(h.size());
  std::vector<std::vector<uint32_t>> sums(n);  // this chunk's partial sums that reached each GPU
  std::vector<int64_t> got(n, kNone);  // the message that brought the chunk's sum to each GPU
  std::vector<uint32_t> deps;
  for (uint32_t j = 0; j < c; ++j) {
    for (uint32_t p = 0; p < hops.size(); ++p) {
      const uint32_t unit = p * c + j;
      for (auto& s : sums) s.clear();
      for (std::size_t h = 0; h < hops[p].size(); ++h) {
        const Hop hop = hops[p][h];
        const bool up = h < n - 1;
        deps.clear();
        connections[p][h].add_window_dep(key.window, deps);
        // Up: after every child's partial sum. Down: the root after its children's partial sums,
        // every other GPU after its own copy.
        if (up || got[hop.from] == kNone)
          deps.insert(deps.end(), sums[hop.from].begin(), sums[hop.from].end());
        else
          deps.push_back(static_cast<uint32_t>(got[hop.from]));
        const uint32_t m = b.add(
            Message{hop.from, hop.to, unit, unit, 1, up ? Action::kReduce : Action::kCopy}, deps);
        connections[p][h].sends.push_back(m);
        if (up)
          sums[hop.to].push_back(m);
        else
          got[hop.to] = m;
      }
      std::fill(got.begin(), got.end(), kNone);
    }
  }
  return std::move(b).build();
}

// A chunk's trip through one tree on an idle network: up from every leaf, each GPU passing its
// sum on once all its children's have landed, to the root, and back down to every leaf, each hop
// its message's transfer and latencies (the pipeline's fill and drain), the longest such path.
// A hop between servers holds its sender's NIC and its receiver's for its transfer, so the two
// child servers that send up to one server, and the two copies it sends down, go one after the
// other where they meet; and the `lockstep` channels whose trees take the same NICs (several
// channels a NIC) send their first chunks over them at once, each at its share.
Time first_chunk_path(const FluidContext& ctx, const std::vector<Hop>& hops,
                      std::span<const FluidContext::MessageCost> cost, uint32_t n,
                      int64_t lockstep) {
  std::vector<Time> summed(n), copied(n), sending(n), receiving(n);
  Time last;
  for (std::size_t h = 0; h < hops.size(); ++h) {
    const Hop hop = hops[h];
    const bool up = h < n - 1;
    Time start = up ? summed[hop.from] : copied[hop.from];
    Time transfer = cost[h].transfer;
    if (!ctx.intra_node(hop.from, hop.to)) {
      transfer = Time::ps(lockstep * transfer.count_ps());
      start = std::max({start, sending[hop.from], receiving[hop.to]});
      sending[hop.from] = receiving[hop.to] = start + transfer;
    }
    const Time landed = start + transfer + cost[h].route + cost[h].step;
    if (up) {
      summed[hop.to] = std::max(summed[hop.to], landed);
      copied[hop.to] = summed[hop.to];  // the root's copy is its own sum
    } else {
      copied[hop.to] = landed;
      last = std::max(last, landed);
    }
  }
  return last;
}

// A chain-tree pair as fluid transfers: each (channel, tree) one lane over its 2 (n - 1) hops,
// each hop carrying the tree's half of the channel's share once. The chunks pipeline through the
// tree, so on an idle network the message schedule ends after the first chunk's trip
// (first_chunk_path) and chunks - 1 periods of its slowest hop. A hop's period is the longer of
// its message's transfer plus its route latency once per window of sends, and, between servers,
// its transfer while the phase's other hops share its NIC: the other connections on a link fill
// one connection's route gaps, so the two do not add up. NVLink's sharing is left out of the
// period (a chain's short NVLink transfers interleave rather than queue) and to the network,
// which runs no lane faster than its share of the links. The walk is what that adds to the
// lane's time alone; tests/coll/fluid_test bounds the gap (from 10% fast to 5.5% slow).
std::vector<FluidPhase> chain_tree_fluid_phases(const FluidContext& ctx) {
  const ScheduleKey& key = ctx.key;
  const auto n = static_cast<uint32_t>(key.n);
  const auto channels = static_cast<uint32_t>(key.channels);
  const double payload = static_cast<double>(ctx.size) / (2.0 * channels);
  const auto trees = server_trees(key);
  FluidPhase phase;
  std::vector<std::vector<Hop>> hops;
  for (uint32_t ch = 0; ch < channels; ++ch) {
    for (uint32_t t = 0; t < 2; ++t) {
      hops.push_back(chunk_hops(channel_tree(key, trees, ch, t)));
      FluidLane& lane = phase.emplace_back();
      for (const Hop hop : hops.back()) ctx.add_edge(lane, hop.from, hop.to, payload);
    }
  }
  const auto costs = ctx.message_costs(phase, key.chunks);
  // Channels whose chains start at the same GPU of a server (channel_tree) take the same NICs.
  const auto local = static_cast<uint32_t>(key.local_size);
  std::vector<int64_t> on_rail(local);
  for (uint32_t ch = 0; ch < channels; ++ch) ++on_rail[ch % local];
  for (std::size_t l = 0; l < phase.size(); ++l) {
    Time period;
    for (std::size_t h = 0; h < hops[l].size(); ++h) {
      const auto& c = costs[l][h];
      const bool network = !ctx.intra_node(hops[l][h].from, hops[l][h].to);
      period = std::max({period, c.transfer + Time::ps(c.route.count_ps() / key.window),
                         network ? c.shared : Time{}});
    }
    const Time total = first_chunk_path(ctx, hops[l], costs[l], n, on_rail[l / 2 % local]) +
                       Time::ps((key.chunks - 1) * period.count_ps());
    // The network runs a lane for the longer of its time alone plus its walk and its time among
    // the phase's other lanes (Network::send_fluid), so the walk is what `total` adds to the
    // lane's time alone.
    Time alone;
    for (const auto& c : costs[l]) alone = std::max(alone, Time::ps(key.chunks * c.own.count_ps()));
    phase[l].walk = std::max(Time{}, total - alone);
  }
  ctx.stats.bytes_sent = 2 * static_cast<Bytes>(n - 1) * ctx.size;
  ctx.stats.messages = static_cast<uint32_t>(
      std::min<int64_t>(int64_t{channels} * 2 * key.chunks * 2 * (n - 1), UINT32_MAX));
  return {std::move(phase)};
}

// Across servers, where the network's hops set the period. Inside one server the chain's NVLink
// hops do, which chain_tree_fluid_phases leaves to the network. Up to the 8 GPUs a server it is
// tested at (tests/coll/fluid_test): over the 72-GPU chains of a GB200 NVL72 rack, whose NVLink
// hops queue behind the rack's other channels, it ran 27-32% faster than the message schedule on
// two racks and 52% on twenty, so those run message by message.
constexpr int32_t kChainTreeFluidMaxLocal = 8;
bool chain_tree_fluid_fits(const ScheduleKey& key) {
  return key.local_size >= 1 && key.local_size <= kChainTreeFluidMaxLocal && key.n > key.local_size;
}

// NCCL's tree chunk, one buffer slot (NCCL_BUFFSIZE / NCCL_STEPS = 4 MiB / 8 = 512 KiB) for a
// channel's share `block`. Simple keeps it at any size, as NCCL's enqueue.cc has since 2.19
// (computeCollChunkInfo halves only LL128 tree chunks): on 128 Alps nodes, three channels of a
// tree abreast on each NIC, that pipeline's fill is most of a 16 MiB all-reduce (2.18 ms
// modelled, 2.07 measured; nccl-gh200-alps-512gpu-128node-allreduce-16m). LL and LL128 keep
// the older rule that halved it while the block held fewer than 8 chunks per level of the tree's
// depth (down to 128 KiB), then 4 (64 KiB), then 1 (32 KiB); NCCL's LL128 rule since (nsteps =
// 1 + log2(servers) + 0.1 GPUs a server, 576,000-byte chunks halved below nsteps x 64 / ppn of
// them) cuts within 4x of it, and the fluid form's bound (tests/coll/fluid_test) holds for it.
// The depth is GPUs per server - 1 + log2(servers).
Bytes nccl_tree_chunk(Protocol protocol, int32_t servers, int32_t local, Bytes block) {
  Bytes piece = kSlot;
  if (protocol != Protocol::kLl && protocol != Protocol::kLl128) return piece;
  const int32_t tree_depth = std::bit_width(static_cast<uint32_t>(servers)) - 1;
  const int32_t depth = std::max(1, local - 1 + tree_depth);
  while (block / piece < 8 * depth && piece > 128 * kKiB) piece /= 2;
  while (block / piece < 4 * depth && piece > 64 * kKiB) piece /= 2;
  while (block / piece < depth && piece > 32 * kKiB) piece /= 2;
  return piece;
}

// A channel pair's tree here carries one NCCL channel's share, S / (2 channels), a channel pair per
// NIC (16 of a GB200 NVL72 rack's 72 GPUs, coll::rail_channels) unless the topology says how many
// NCCL builds, in NCCL's tree chunks. Every chunk costs 4 (n - 1) messages per channel (up and
// down, two trees), so past kChainTreeMessages the pieces grow until the schedule fits in it,
// though never to fewer than kChainTreeMinChunks.
Pipelining chain_tree_pipelining(const PipelineShape& s) {
  const int32_t servers = std::max(1, s.n / s.local);
  const Bytes block = s.size / (2 * static_cast<Bytes>(s.channels));
  const Bytes piece = nccl_tree_chunk(s.protocol, servers, s.local, block);
  const int64_t most = std::max<int64_t>(
      kChainTreeMinChunks, kChainTreeMessages / (4 * static_cast<int64_t>(s.channels) * s.n));
  return {block, std::max(piece, (block + most - 1) / most)};
}

}  // namespace

AlgorithmInfo chain_tree_algorithm() {
  AlgorithmInfo a;
  a.value = Algorithm::kChainTree;
  a.name = "chain_tree";
  a.nccl = NcclAlgo::kTree;
  OpForm all_reduce;
  all_reduce.op = Op::kAllReduce;
  all_reduce.build = build_chain_tree;
  all_reduce.pipelining = chain_tree_pipelining;
  all_reduce.channels = true;
  all_reduce.server_layout = "chain-tree all-reduce";
  all_reduce.fluid = {chain_tree_fluid_fits, chain_tree_fluid_phases};
  a.ops.push_back(all_reduce);
  return a;
}

}  // namespace cs::coll
