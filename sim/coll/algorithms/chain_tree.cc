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
// carries one channel pair, as NCCL's tree graph puts one channel on each NIC. (NCCL's balanced
// tree pattern lands one child server's traffic on the chain's second GPU; through the same NIC,
// so the links carry the same bytes.)
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/entries.h"

namespace cs::coll {
namespace {

// What auto_chunks aims a chain-tree schedule at: about a million messages (some 50 MB of
// schedule; 2,048 GPUs take about 2 s at 1 GiB), but never fewer than 16 chunks per channel.
// The budget costs bandwidth at scale: every GPU of a chain and every server of a tree holds a
// chunk until all of it has arrived, so the pipeline fills and drains in about 8 chunk-times on
// 128 to 512 servers, which NCCL's 128 to 512 KiB chunks make negligible. On 1,984 H100s at
// 512 MiB, 16 chunks per channel give 231 GB/s of bus bandwidth, 32 give 273 and 64 give 300;
// NCCL's own 128 would take 8 million messages.
constexpr int64_t kChainTreeMessages = int64_t{1} << 20;
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

// Units: (channel x 2 + tree) x chunks + chunk. Per chunk, per channel and tree, every GPU but the
// root sends its partial sum up once (after all its children's have landed) and every GPU that
// has children sends the sum down to each once (the root after its children's partial sums, the
// others after their own copy arrived): 2 (n - 1) messages.
Schedule build_chain_tree(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  const auto local = static_cast<uint32_t>(key.local_size);
  const uint32_t servers = n / local;
  const auto c = static_cast<uint32_t>(key.chunks);
  const auto channels = static_cast<uint32_t>(key.channels);
  ScheduleBuilder b(key, channels * 2 * c);
  const std::array<TreeOrder, 2> server_trees{tree_order(static_cast<int32_t>(servers), 0),
                                              tree_order(static_cast<int32_t>(servers), 1)};
  // Per (channel, tree) p: up[p·n + r] rank r's sends to its parent, down[(p·n + r)·3 + slot] its
  // sends to the child in that slot (ChannelTree::children).
  const std::size_t pairs = std::size_t{channels} * 2;
  std::vector<Connection> up(pairs * n), down(pairs * n * 3);
  std::vector<int64_t> got(n, kNone);  // the message that brought the current chunk's sum to r
  std::vector<uint32_t> deps;
  for (uint32_t j = 0; j < c; ++j) {
    for (uint32_t ch = 0; ch < channels; ++ch) {
      for (uint32_t t = 0; t < 2; ++t) {
        const ChannelTree tree{server_trees[t], local, ch % local};
        const std::size_t base = (std::size_t{ch} * 2 + t) * n;
        const uint32_t unit = (ch * 2 + t) * c + j;
        const auto up_of = [&](int64_t r) -> Connection& { return up[base + r]; };
        // Reduce: deepest servers first, each chain from its last GPU to its first, so that every
        // child's send of this chunk exists before its parent's.
        for (auto it = tree.servers.order.rbegin(); it != tree.servers.order.rend(); ++it) {
          const auto q = static_cast<uint32_t>(*it);
          for (uint32_t i = local; i-- > 0;) {
            if (tree.root(q, i)) continue;
            const uint32_t r = tree.rank(q, i);
            deps.clear();
            up_of(r).add_window_dep(key.window, deps);
            for (const int64_t child : tree.children(q, i))
              if (child != kNone) deps.push_back(up_of(child).sends.back());
            up_of(r).sends.push_back(
                b.add(Message{r, tree.parent(q, i), unit, unit, 1, Action::kReduce}, deps));
          }
        }
        // Broadcast: root server first, each chain from its first GPU to its last.
        for (const int32_t server : tree.servers.order) {
          const auto q = static_cast<uint32_t>(server);
          for (uint32_t i = 0; i < local; ++i) {
            const uint32_t r = tree.rank(q, i);
            const std::array<int64_t, 3> children = tree.children(q, i);
            for (std::size_t slot = 0; slot < children.size(); ++slot) {
              if (children[slot] == kNone) continue;
              const auto child = static_cast<uint32_t>(children[slot]);
              Connection& conn = down[(base + r) * 3 + slot];
              deps.clear();
              conn.add_window_dep(key.window, deps);
              if (tree.root(q, i)) {
                for (const int64_t k : children)
                  if (k != kNone) deps.push_back(up_of(k).sends.back());
              } else {
                deps.push_back(static_cast<uint32_t>(got[r]));
              }
              const uint32_t m = b.add(Message{r, child, unit, unit, 1, Action::kCopy}, deps);
              conn.sends.push_back(m);
              got[child] = m;
            }
          }
        }
      }
    }
  }
  return std::move(b).build();
}

// NCCL's tree chunk (src/enqueue.cc, Simple protocol): one buffer slot (NCCL_BUFFSIZE /
// NCCL_STEPS = 512 KiB), halved while a channel's share of the buffer holds fewer than 8 chunks
// per level of the tree's depth (down to 128 KiB), then 4 (64 KiB), then 1 (32 KiB); the depth is
// connectTrees' GPUs per server - 1 + log2(servers). A channel here is one tree of a pair: half of
// one NIC's share, S / (2 local). Every chunk costs 4 (n - 1) messages per channel (up and down,
// two trees), so past kChainTreeMessages the pieces grow until the schedule fits in it, though
// never to fewer than kChainTreeMinChunks.
Pipelining chain_tree_pipelining(int32_t n, int32_t local, Bytes size) {
  const auto servers = static_cast<uint32_t>(std::max(1, n / local));
  const int32_t tree_depth = static_cast<int32_t>(std::bit_width(servers)) - 1;  // log2(servers)
  const int32_t depth = std::max(1, local - 1 + tree_depth);
  const Bytes block = size / (2 * static_cast<Bytes>(local));
  Bytes piece = kSlot;
  while (block / piece < 8 * depth && piece > 128 * kKiB) piece /= 2;
  while (block / piece < 4 * depth && piece > 64 * kKiB) piece /= 2;
  while (block / piece < depth && piece > 32 * kKiB) piece /= 2;
  const int64_t most = std::max<int64_t>(
      kChainTreeMinChunks, kChainTreeMessages / (4 * static_cast<int64_t>(local) * n));
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
  a.ops.push_back(all_reduce);
  return a;
}

}  // namespace cs::coll
