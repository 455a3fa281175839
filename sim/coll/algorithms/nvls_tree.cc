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
// + l; tree t of rail l carries half t of the shard between the heads. The connections and the
// messages each step waits for live across the steps, so one object holds them.
class NvlsTreeSchedule {
 public:
  explicit NvlsTreeSchedule(const ScheduleKey& key)
      : key_(key),
        local_(static_cast<uint32_t>(key.local_size)),
        servers_(static_cast<uint32_t>(key.n) / local_),
        chunks_(static_cast<uint32_t>(key.chunks)),
        b_(key, local_ * chunks_ * 2),
        trees_{tree_order(static_cast<int32_t>(servers_), 0),
               tree_order(static_cast<int32_t>(servers_), 1)},
        into_(key.n * local_),
        out_(key.n * local_),
        up_(2 * local_ * servers_),
        down_(4 * local_ * servers_),
        reduced_(key.n) {}

  // Chunk by chunk: NVLS reductions into the heads, then per rail and half the tree up, the tree
  // down and the NVLS multicast out.
  Schedule build() && {
    for (uint32_t j = 0; j < chunks_; ++j) {
      reduce_into_heads(j);
      for (uint32_t l = 0; l < local_; ++l) {
        for (int t = 0; t < 2; ++t) {
          const uint32_t unit = (l * chunks_ + j) * 2 + static_cast<uint32_t>(t);
          const std::size_t base = (static_cast<std::size_t>(t) * local_ + l) * servers_;
          reduce_up_tree(trees_[t], l, unit, base);
          multicast_from_heads(l, unit, sum_down_tree(trees_[t], l, unit, base));
        }
      }
    }
    return std::move(b_).build();
  }

 private:
  uint32_t gpu(uint32_t q, uint32_t l) const { return q * local_ + l; }

  // Every GPU sends its part of each shard of chunk `j` into that shard's head in its server.
  void reduce_into_heads(uint32_t j) {
    for (uint32_t q = 0; q < servers_; ++q) {
      for (uint32_t l = 0; l < local_; ++l) {
        const uint32_t head = gpu(q, l), unit = (l * chunks_ + j) * 2;
        reduced_[head].clear();
        for (uint32_t d = 0; d < local_; ++d) {
          if (d == l) continue;
          deps_.clear();
          into_[gpu(q, d) * local_ + l].add_window_dep(key_.window, deps_);
          const uint32_t m =
              b_.add(Message{gpu(q, d), head, unit, unit, 2, Action::kReduce}, deps_);
          into_[gpu(q, d) * local_ + l].sends.push_back(m);
          reduced_[head].push_back(m);
        }
      }
    }
  }

  // Each head below the root sends its server's sum and its children's up to its parent.
  void reduce_up_tree(const TreeOrder& tree, uint32_t l, uint32_t unit, std::size_t base) {
    const auto up_of = [&](int32_t q) -> Connection& { return up_[base + q]; };
    for (auto it = tree.order.rbegin(); it != tree.order.rend(); ++it) {
      const int32_t q = *it;
      if (tree.nodes[q].parent < 0) continue;
      deps_ = reduced_[gpu(q, l)];
      up_of(q).add_window_dep(key_.window, deps_);
      for (int32_t ch : {tree.nodes[q].child0, tree.nodes[q].child1})
        if (ch >= 0) deps_.push_back(up_of(ch).sends.back());
      up_of(q).sends.push_back(b_.add(
          Message{gpu(q, l), gpu(tree.nodes[q].parent, l), unit, unit, 1, Action::kReduce}, deps_));
    }
  }

  // The sum of this half at each head: the root's once its children and its own server have
  // landed, every other head's as the message down from its parent.
  std::vector<std::vector<uint32_t>> sum_down_tree(const TreeOrder& tree, uint32_t l, uint32_t unit,
                                                   std::size_t base) {
    std::vector<std::vector<uint32_t>> summed(servers_);
    for (int32_t q : tree.order) {
      const TreeNode& node = tree.nodes[q];
      if (node.parent < 0) {
        summed[q] = reduced_[gpu(q, l)];
        for (int32_t ch : {node.child0, node.child1})
          if (ch >= 0) summed[q].push_back(up_[base + ch].sends.back());
      }
      for (int i = 0; i < 2; ++i) {
        const int32_t ch = i == 0 ? node.child0 : node.child1;
        if (ch < 0) continue;
        Connection& conn = down_[2 * (base + q) + i];
        deps_ = summed[q];
        conn.add_window_dep(key_.window, deps_);
        const uint32_t m =
            b_.add(Message{gpu(q, l), gpu(ch, l), unit, unit, 1, Action::kCopy}, deps_);
        conn.sends.push_back(m);
        summed[ch] = {m};
      }
    }
    return summed;
  }

  // Each head multicasts the summed half to the other GPUs of its server.
  void multicast_from_heads(uint32_t l, uint32_t unit,
                            const std::vector<std::vector<uint32_t>>& summed) {
    for (uint32_t q = 0; q < servers_; ++q) {
      for (uint32_t d = 0; d < local_; ++d) {
        if (d == l) continue;
        Connection& conn = out_[gpu(q, l) * local_ + d];
        deps_ = summed[q];
        conn.add_window_dep(key_.window, deps_);
        conn.sends.push_back(
            b_.add(Message{gpu(q, l), gpu(q, d), unit, unit, 1, Action::kCopy}, deps_));
      }
    }
  }

  const ScheduleKey& key_;
  const uint32_t local_, servers_, chunks_;
  ScheduleBuilder b_;
  const std::vector<TreeOrder> trees_;
  // Connections: into[gpu * local + l] a GPU's sends into shard l's head, out[head * local + d]
  // the head's multicast to local GPU d, up / down[(t x local + l) x servers (x 2) + q] the trees.
  std::vector<Connection> into_, out_, up_, down_;
  std::vector<uint32_t> deps_;
  std::vector<std::vector<uint32_t>> reduced_;  // a head's landed local sums, this chunk
};

Schedule build_nvls_tree(const ScheduleKey& key) {
  return NvlsTreeSchedule(key).build();
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
