// NCCL's NVLS-tree all-reduce over whole Hopper servers: NVLink SHARP reduces each shard into its
// head GPU inside every server, a double binary tree per local index (one per NIC rail) reduces
// and broadcasts the shard across servers, and NVLink SHARP multicasts the sum back inside each
// server, chunk by chunk through the three.
#include <cstdint>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/entries.h"

namespace cs::coll {
namespace {

// Units: (shard l x chunks + chunk j) x 2 + half t. Shard l's head in server q is GPU q x local
// + l; tree t of rail l carries half t of the shard between the heads.
Schedule build_nvls_tree(const ScheduleKey& key) {
  const auto local = static_cast<uint32_t>(key.local_size);
  const uint32_t servers = static_cast<uint32_t>(key.n) / local;
  const auto c = static_cast<uint32_t>(key.chunks);
  ScheduleBuilder b(key, local * c * 2);
  const std::vector<TreeOrder> trees{tree_order(static_cast<int32_t>(servers), 0),
                                     tree_order(static_cast<int32_t>(servers), 1)};
  const auto gpu = [&](uint32_t q, uint32_t l) { return q * local + l; };
  // Connections: into[gpu * local + l] a GPU's sends into shard l's head, out[head * local + d]
  // the head's multicast to local GPU d, up / down[(t x local + l) x servers (x 2) + q] the trees.
  std::vector<Connection> into(key.n * local), out(key.n * local);
  std::vector<Connection> up(2 * local * servers), down(4 * local * servers);
  std::vector<uint32_t> deps;
  std::vector<std::vector<uint32_t>> reduced(key.n);  // a head's landed local sums, this chunk
  for (uint32_t j = 0; j < c; ++j) {
    for (uint32_t q = 0; q < servers; ++q) {
      for (uint32_t l = 0; l < local; ++l) {
        const uint32_t head = gpu(q, l), unit = (l * c + j) * 2;
        reduced[head].clear();
        for (uint32_t d = 0; d < local; ++d) {
          if (d == l) continue;
          deps.clear();
          into[gpu(q, d) * local + l].add_window_dep(key.window, deps);
          const uint32_t m = b.add(Message{gpu(q, d), head, unit, unit, 2, Action::kReduce}, deps);
          into[gpu(q, d) * local + l].sends.push_back(m);
          reduced[head].push_back(m);
        }
      }
    }
    for (uint32_t l = 0; l < local; ++l) {
      for (int t = 0; t < 2; ++t) {
        const TreeOrder& tree = trees[t];
        const uint32_t unit = (l * c + j) * 2 + static_cast<uint32_t>(t);
        const std::size_t base = (static_cast<std::size_t>(t) * local + l) * servers;
        const auto up_of = [&](int32_t q) -> Connection& { return up[base + q]; };
        for (auto it = tree.order.rbegin(); it != tree.order.rend(); ++it) {
          const int32_t q = *it;
          if (tree.nodes[q].parent < 0) continue;
          deps = reduced[gpu(q, l)];
          up_of(q).add_window_dep(key.window, deps);
          for (int32_t ch : {tree.nodes[q].child0, tree.nodes[q].child1})
            if (ch >= 0) deps.push_back(up_of(ch).sends.back());
          up_of(q).sends.push_back(b.add(
              Message{gpu(q, l), gpu(tree.nodes[q].parent, l), unit, unit, 1, Action::kReduce},
              deps));
        }
        // The sum of this half at each head: the root's once its children and its own server
        // have landed, every other head's as the message down from its parent.
        std::vector<std::vector<uint32_t>> summed(servers);
        for (int32_t q : tree.order) {
          const TreeNode& node = tree.nodes[q];
          if (node.parent < 0) {
            summed[q] = reduced[gpu(q, l)];
            for (int32_t ch : {node.child0, node.child1})
              if (ch >= 0) summed[q].push_back(up_of(ch).sends.back());
          }
          for (int i = 0; i < 2; ++i) {
            const int32_t ch = i == 0 ? node.child0 : node.child1;
            if (ch < 0) continue;
            Connection& conn = down[2 * (base + q) + i];
            deps = summed[q];
            conn.add_window_dep(key.window, deps);
            const uint32_t m =
                b.add(Message{gpu(q, l), gpu(ch, l), unit, unit, 1, Action::kCopy}, deps);
            conn.sends.push_back(m);
            summed[ch] = {m};
          }
        }
        for (uint32_t q = 0; q < servers; ++q) {
          for (uint32_t d = 0; d < local; ++d) {
            if (d == l) continue;
            Connection& conn = out[gpu(q, l) * local + d];
            deps = summed[q];
            conn.add_window_dep(key.window, deps);
            conn.sends.push_back(
                b.add(Message{gpu(q, l), gpu(q, d), unit, unit, 1, Action::kCopy}, deps));
          }
        }
      }
    }
  }
  return std::move(b).build();
}

}  // namespace

AlgorithmInfo nvls_tree_algorithm() {
  AlgorithmInfo a;
  a.value = Algorithm::kNvlsTree;
  a.name = "nvls_tree";
  a.nccl = NcclAlgo::kNvlsTree;
  a.nvlink_wire_factor = nvls_wire_factor;
  OpForm all_reduce;
  all_reduce.op = Op::kAllReduce;
  all_reduce.build = build_nvls_tree;
  // As NCCL's tree, sized for the deepest tree the group could need (one GPU per server).
  all_reduce.pipelining = tree_pipelining;
  all_reduce.server_layout = "NVLS-tree all-reduce";
  a.ops.push_back(all_reduce);
  return a;
}

}  // namespace cs::coll
