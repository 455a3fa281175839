// NCCL's double binary tree all-reduce: each of two binary trees reduces half of the buffer up to
// its root and broadcasts the sum back down, so that most ranks are an inner node of one tree
// and a leaf of the other.
#include <stdexcept>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/entries.h"

namespace cs::coll {
namespace {

// NCCL's binary tree rooted at 0 (ncclGetBtree): the parent flips the lowest set bit off and the
// next one on (or only off, past the end); children are rank ∓ half the lowest set bit, the
// upper one shrinking while it lies past the end.
TreeNode btree(int32_t n, int32_t rank) {
  TreeNode node;
  int32_t bit = 1;
  while (bit < n && (bit & rank) == 0) bit <<= 1;
  if (rank == 0) {
    node.child1 = n > 1 ? bit >> 1 : -1;
    return node;
  }
  const int32_t up = (rank ^ bit) | (bit << 1);
  node.parent = up < n ? up : rank ^ bit;
  for (int32_t low = bit >> 1; low > 0; low >>= 1) {
    if (node.child0 < 0) node.child0 = rank - low;
    if (rank + low < n) {
      node.child1 = rank + low;
      break;
    }
  }
  return node;
}

// Tree t carries half t in `chunks` pieces, reduced up to the root and broadcast down, each
// piece pipelined behind the previous one on every connection.
Schedule build_tree(const ScheduleKey& key) {
  const int32_t n = key.n;
  const auto c = static_cast<uint32_t>(key.chunks);
  ScheduleBuilder b(key, 2 * c);  // unit = tree·c + chunk: tree t owns half t
  std::vector<uint32_t> deps;
  for (int tree = 0; tree < 2 && n > 1; ++tree) {
    std::vector<TreeNode> nodes(static_cast<std::size_t>(n));
    int32_t root = -1;
    for (int32_t r = 0; r < n; ++r) {
      nodes[r] = double_binary_tree(n, tree, r);
      if (nodes[r].parent < 0) root = r;
    }
    // Order ranks root first, by depth, so that children come after parents.
    std::vector<int32_t> order{root};
    for (std::size_t i = 0; i < order.size(); ++i) {
      for (int32_t ch : {nodes[order[i]].child0, nodes[order[i]].child1}) {
        if (ch >= 0) order.push_back(ch);
      }
    }
    if (order.size() != static_cast<std::size_t>(n)) throw std::logic_error("tree misses ranks");
    std::vector<Connection> up(n);        // r's sends to its parent
    std::vector<Connection> down(2 * n);  // down[2r+i]: r's sends to child i
    for (uint32_t j = 0; j < c; ++j) {
      const uint32_t unit = static_cast<uint32_t>(tree) * c + j;
      // Reduce towards the root, deepest ranks first, so a child's last send up is chunk j.
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const int32_t r = *it;
        if (r == root) continue;
        deps.clear();
        up[r].add_window_dep(key.window, deps);
        for (int32_t ch : {nodes[r].child0, nodes[r].child1}) {
          if (ch >= 0) deps.push_back(up[ch].sends.back());
        }
        up[r].sends.push_back(
            b.add(Message{static_cast<uint32_t>(r), static_cast<uint32_t>(nodes[r].parent), unit,
                          unit, 1, Action::kReduce},
                  deps));
      }
      // Broadcast the sum down, root first.
      std::vector<int64_t> got(n, kNone);  // the message that brought chunk j's sum to r
      for (int32_t r : order) {
        const TreeNode& node = nodes[r];
        for (int i = 0; i < 2; ++i) {
          const int32_t ch = i == 0 ? node.child0 : node.child1;
          if (ch < 0) continue;
          deps.clear();
          down[2 * r + i].add_window_dep(key.window, deps);
          if (r == root) {
            for (int32_t k : {node.child0, node.child1}) {
              if (k >= 0) deps.push_back(up[k].sends.back());
            }
          } else {
            deps.push_back(static_cast<uint32_t>(got[r]));
          }
          const uint32_t m = b.add(Message{static_cast<uint32_t>(r), static_cast<uint32_t>(ch),
                                           unit, unit, 1, Action::kCopy},
                                   deps);
          down[2 * r + i].sends.push_back(m);
          got[ch] = m;
        }
      }
    }
  }
  return std::move(b).build();
}

}  // namespace

// Like NCCL's tree, halve pieces of each half (down to 64 KiB) until there are 8 per level of
// depth, so that the pipeline fills.
Pipelining tree_pipelining(const PipelineShape& s) {
  int32_t depth = 1;
  while ((int32_t{1} << depth) < s.n) ++depth;
  Bytes piece = kSlot;
  while (s.size / 2 / piece < 8 * depth && piece > kSlot / 8) piece /= 2;
  return {s.size / 2, piece};
}

TreeOrder tree_order(int32_t members, int tree) {
  TreeOrder t;
  t.nodes.resize(static_cast<std::size_t>(members));
  int32_t root = -1;
  for (int32_t m = 0; m < members; ++m) {
    t.nodes[m] = double_binary_tree(members, tree, m);
    if (t.nodes[m].parent < 0) root = m;
  }
  t.order.push_back(root);
  for (std::size_t i = 0; i < t.order.size(); ++i) {
    for (int32_t ch : {t.nodes[t.order[i]].child0, t.nodes[t.order[i]].child1})
      if (ch >= 0) t.order.push_back(ch);
  }
  if (t.order.size() != static_cast<std::size_t>(members))
    throw std::logic_error("double binary tree misses members");
  return t;
}

TreeNode double_binary_tree(int32_t n, int tree, int32_t rank) {
  if (tree == 0) return btree(n, rank);
  const bool shift = n % 2 == 1;
  const auto map = [&](int32_t r) {
    if (r < 0) return -1;
    return shift ? (r + 1) % n : n - 1 - r;
  };
  const TreeNode t = btree(n, shift ? (rank - 1 + n) % n : n - 1 - rank);
  return TreeNode{map(t.parent), map(t.child0), map(t.child1)};
}

AlgorithmInfo tree_algorithm() {
  AlgorithmInfo a;
  a.value = Algorithm::kTree;
  a.name = "tree";
  a.nccl = NcclAlgo::kTree;
  OpForm all_reduce;
  all_reduce.op = Op::kAllReduce;
  all_reduce.build = build_tree;
  all_reduce.pipelining = tree_pipelining;
  a.ops.push_back(all_reduce);
  return a;
}

}  // namespace cs::coll
