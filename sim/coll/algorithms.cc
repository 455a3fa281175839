#include "sim/coll/algorithms.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cs::coll {
namespace {

constexpr int64_t kNone = -1;

// Messages after which a rank's data for the next phase is in place, indexed by group rank.
using Ready = std::vector<std::vector<uint32_t>>;

// The sends of one connection in program order. A new send may start once the send `window`
// places earlier has completed: that frees the receive slot it used (NCCL_STEPS slots per
// connection), so at most `window` sends are in flight.
struct Connection {
  std::vector<uint32_t> sends;

  void add_window_dep(int32_t window, std::vector<uint32_t>& deps) const {
    const auto w = static_cast<std::size_t>(window);
    if (sends.size() >= w) deps.push_back(sends[sends.size() - w]);
  }
};

// One ring connection per position: sends leave each position in program order.
struct Ring {
  std::vector<uint32_t> ranks;  // group rank at each position; position p sends to p+1
  std::vector<Connection> out;  // position p's connection to p+1
  int32_t window = 1;

  Ring(std::vector<uint32_t> r, int32_t w) : ranks(std::move(r)), out(ranks.size()), window(w) {}
  std::size_t size() const { return ranks.size(); }
};

// Unit offset of block b; blocks are `len` units long.
using BlockUnit = std::function<uint32_t(std::size_t b)>;

// Runs the L−1 steps of a ring reduce-scatter (reduce) or all-gather (!reduce) and returns,
// per rank, the messages after which its result is complete: the last receive of a
// reduce-scatter (it carries everyone else's sum), every receive of an all-gather (with several
// sends in flight, the last one to be sent need not be the last to land). Reduce-scatter:
// position p ends with the sum of block p, sending block p−s−1 at step s. All-gather: position p
// starts with block p and sends block p−s at step s. Sends also wait until sender and receiver
// are ready (the receiver posts its receive only when it reaches this phase): explicitly for the
// first `window` steps, through the connection's window for later ones.
Ready ring_steps(ScheduleBuilder& b, Ring& ring, bool reduce, const BlockUnit& block_unit,
                 uint32_t len, const Ready& ready) {
  const std::size_t l = ring.size();
  Ready out = ready;
  if (l < 2) return out;
  std::vector<int64_t> received(l, kNone);  // what position p received in the previous step
  std::vector<int64_t> now(l, kNone);
  for (std::size_t p = 0; p < l; ++p) out[ring.ranks[p]].clear();
  std::vector<uint32_t> deps;
  for (std::size_t s = 0; s + 1 < l; ++s) {
    for (std::size_t p = 0; p < l; ++p) {
      const std::size_t next = (p + 1) % l;
      const std::size_t block = (p + 2 * l - s - (reduce ? 1 : 0)) % l;
      deps.clear();
      ring.out[p].add_window_dep(ring.window, deps);
      if (s < static_cast<std::size_t>(ring.window)) {
        for (uint32_t d : ready[ring.ranks[p]]) deps.push_back(d);
        for (uint32_t d : ready[ring.ranks[next]]) deps.push_back(d);
      }
      if (s > 0) deps.push_back(static_cast<uint32_t>(received[p]));
      const uint32_t unit = block_unit(block);
      const uint32_t m = b.add(Message{ring.ranks[p], ring.ranks[next], unit, unit, len,
                                       reduce ? Action::kReduce : Action::kCopy},
                               deps);
      ring.out[p].sends.push_back(m);
      now[next] = m;
      if (!reduce) out[ring.ranks[next]].push_back(m);
    }
    received.swap(now);
  }
  if (reduce) {
    for (std::size_t p = 0; p < l; ++p) out[ring.ranks[p]] = {static_cast<uint32_t>(received[p])};
  }
  return out;
}

Schedule build_ring(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  const auto c = static_cast<uint32_t>(key.chunks);
  const auto channels = static_cast<uint32_t>(key.channels);
  // Shard-major layout (unit = shard·channels·c + channel·c + chunk), so that shard r is one
  // contiguous block; each channel moves its own slice of every shard.
  ScheduleBuilder b(key, n * channels * c);
  std::vector<Ring> rings;
  for (uint32_t ch = 0; ch < channels; ++ch)
    rings.emplace_back(channel_ring(n, static_cast<uint32_t>(key.local_size), ch), key.window);
  const Ready none(n);
  for (uint32_t j = 0; j < c; ++j) {
    for (uint32_t ch = 0; ch < channels; ++ch) {
      Ring& ring = rings[ch];
      const BlockUnit unit = [&](std::size_t position) {
        return ring.ranks[position] * channels * c + ch * c + j;
      };
      if (key.op == Op::kAllGather) {
        ring_steps(b, ring, false, unit, 1, none);
      } else {
        const Ready reduced = ring_steps(b, ring, true, unit, 1, none);
        if (key.op == Op::kAllReduce) ring_steps(b, ring, false, unit, 1, reduced);
      }
    }
  }
  return std::move(b).build();
}

// NVLink SHARP all-reduce (NCCL's NVLS): rank r owns shard r; per chunk the NVSwitch sums shard r
// from every rank into r (multimem.ld_reduce) and r's sum is multicast back to all (multimem.st).
// As messages between GPUs that is every d sending its piece of shard r to r (reduce), then r
// sending the sum to every d (copy); the wire model's byte factor gives each GPU link the
// traffic the switch really puts on it.
Schedule build_nvls(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  const auto c = static_cast<uint32_t>(key.chunks);
  ScheduleBuilder b(key, n * c);
  std::vector<Connection> up(n * n), down(n * n);  // [src * n + dst]
  std::vector<uint32_t> deps, into;
  for (uint32_t j = 0; j < c; ++j) {
    for (uint32_t r = 0; r < n; ++r) {
      const uint32_t unit = r * c + j;
      into.clear();
      for (uint32_t o = 1; o < n; ++o) {
        const uint32_t d = (r + o) % n;
        deps.clear();
        up[d * n + r].add_window_dep(key.window, deps);
        const uint32_t m = b.add(Message{d, r, unit, unit, 1, Action::kReduce}, deps);
        up[d * n + r].sends.push_back(m);
        into.push_back(m);
      }
      for (uint32_t o = 1; o < n; ++o) {
        const uint32_t d = (r + o) % n;
        deps = into;
        down[r * n + d].add_window_dep(key.window, deps);
        down[r * n + d].sends.push_back(b.add(Message{r, d, unit, unit, 1, Action::kCopy}, deps));
      }
    }
  }
  return std::move(b).build();
}

Schedule build_hierarchical(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  const auto c = static_cast<uint32_t>(key.chunks);
  const auto local = static_cast<uint32_t>(key.local_size);
  const uint32_t nodes = n / local;
  // unit = local_shard·(c·nodes) + chunk·nodes + inter_piece: a chunk of a local shard is one
  // contiguous run of `nodes` units, which the inter-node ring splits one unit per node.
  ScheduleBuilder b(key, n * c);
  std::vector<Ring> intra_rs, intra_ag, inter;
  for (uint32_t q = 0; q < nodes; ++q) {
    intra_rs.emplace_back(iota_ranks(q * local, local), key.window);
    intra_ag.emplace_back(iota_ranks(q * local, local), key.window);
  }
  for (uint32_t l = 0; l < local; ++l) inter.emplace_back(iota_ranks(l, nodes, local), key.window);
  const Ready none(n);
  for (uint32_t j = 0; j < c; ++j) {
    const BlockUnit shard = [&](std::size_t l) {
      return static_cast<uint32_t>(l) * c * nodes + j * nodes;
    };
    Ready ready = none;
    for (uint32_t q = 0; q < nodes; ++q) {
      const Ready r = ring_steps(b, intra_rs[q], true, shard, nodes, none);
      for (uint32_t g : intra_rs[q].ranks) ready[g] = r[g];
    }
    Ready reduced = ready;
    for (uint32_t l = 0; l < local; ++l) {
      const BlockUnit piece = [&](std::size_t k) {
        return static_cast<uint32_t>(l * c * nodes + j * nodes + k);
      };
      const Ready rs = ring_steps(b, inter[l], true, piece, 1, ready);
      const Ready ag = ring_steps(b, inter[l], false, piece, 1, rs);
      for (uint32_t g : inter[l].ranks) reduced[g] = ag[g];
    }
    for (uint32_t q = 0; q < nodes; ++q) ring_steps(b, intra_ag[q], false, shard, nodes, reduced);
  }
  return std::move(b).build();
}

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

Schedule build_broadcast(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  const auto c = static_cast<uint32_t>(key.chunks);
  ScheduleBuilder b(key, c);
  std::vector<Connection> chain(n);  // chain[p]: position p's sends to p+1
  std::vector<int64_t> got(n, kNone);
  std::vector<uint32_t> deps;
  for (uint32_t j = 0; j < c; ++j) {
    for (uint32_t p = 0; p + 1 < n; ++p) {
      deps.clear();
      chain[p].add_window_dep(key.window, deps);
      if (p > 0) deps.push_back(static_cast<uint32_t>(got[p]));
      const uint32_t src = (static_cast<uint32_t>(key.root) + p) % n;
      const uint32_t m = b.add(Message{src, (src + 1) % n, j, j, 1, Action::kCopy}, deps);
      chain[p].sends.push_back(m);
      got[p + 1] = m;
    }
  }
  return std::move(b).build();
}

Schedule build_all_to_all(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  ScheduleBuilder b(key, 2 * n, 2);  // units [0, n): send blocks; [n, 2n): receive slots
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t o = 1; o <= n; ++o) {
      const uint32_t d = (r + o) % n;
      b.add(Message{r, d, d, n + r, 1, Action::kCopy});
    }
  }
  return std::move(b).build();
}

Schedule build_send_recv(const ScheduleKey& key) {
  const auto n = static_cast<uint32_t>(key.n);
  ScheduleBuilder b(key, 2, 2);  // unit 0: send buffer; unit 1: receive buffer
  for (uint32_t r = 0; r < n; ++r) b.add(Message{r, (r + 1) % n, 0, 1, 1, Action::kCopy});
  return std::move(b).build();
}

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

}  // namespace

std::vector<uint32_t> iota_ranks(uint32_t first, uint32_t count, uint32_t stride) {
  std::vector<uint32_t> r(count);
  for (uint32_t i = 0; i < count; ++i) r[i] = first + i * stride;
  return r;
}

std::vector<uint32_t> channel_ring(uint32_t n, uint32_t local, uint32_t ch) {
  if (local <= 1 || local >= n) return iota_ranks(0, n);
  std::vector<uint32_t> order;
  order.reserve(n);
  for (uint32_t q = 0; q < n / local; ++q) {
    const uint32_t a = ch % local, b = (ch + 1) % local;
    const uint32_t entry = q % 2 == 0 ? a : b, exit = q % 2 == 0 ? b : a;
    order.push_back(q * local + entry);
    for (uint32_t i = 1; i < local; ++i) {
      const uint32_t l = (entry + i) % local;
      if (l != exit) order.push_back(q * local + l);
    }
    order.push_back(q * local + exit);
  }
  return order;
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

namespace {

constexpr Bytes kSlot = 512 * kKiB;        // NCCL_BUFFSIZE / NCCL_STEPS
constexpr Bytes kRingChunk = 4 * kSlot;    // ALLREDUCE_CHUNKSTEPS slots
constexpr Bytes kWindowBytes = 64 * kKiB;  // see auto_window

// Bytes of the block that auto_chunks cuts into chunks, and the piece it aims for.
std::pair<Bytes, Bytes> block_and_piece(Op op, Algorithm algo, int32_t n, Bytes size) {
  if (algo == Algorithm::kTree) {
    // Like NCCL's tree, halve pieces (down to 64 KiB) until there are 8 per level of depth,
    // so that the pipeline fills.
    int32_t depth = 1;
    while ((int32_t{1} << depth) < n) ++depth;
    Bytes piece = kSlot;
    while (size / 2 / piece < 8 * depth && piece > kSlot / 8) piece /= 2;
    return {size / 2, piece};
  }
  if (op == Op::kBroadcast) return {size, kSlot};
  if (algo == Algorithm::kHierarchical || algo == Algorithm::kNvls) return {size / n, kRingChunk};
  return {size / n, size / n + 1};  // flat ring: one chunk, see auto_chunks
}

}  // namespace

int32_t auto_chunks(Op op, Algorithm algo, int32_t n, Bytes size) {
  if (n < 1) throw std::invalid_argument("group size must be at least 1");
  if (size < 0) throw std::invalid_argument("collective size must not be negative");
  algo = resolve(algo, op);
  if (n == 1 || algo == Algorithm::kDirect) return 1;
  const auto [block, piece] = block_and_piece(op, algo, n, size);
  return static_cast<int32_t>(std::clamp<Bytes>((block + piece - 1) / piece, 1, kMaxAutoChunks));
}

int32_t auto_window(Op op, Algorithm algo, int32_t n, int32_t chunks, Bytes size) {
  if (n < 1 || chunks < 1) throw std::invalid_argument("group size and chunks must be positive");
  algo = resolve(algo, op);
  if (n == 1 || algo == Algorithm::kDirect) return 1;
  const Bytes message = std::max<Bytes>(block_and_piece(op, algo, n, size).first / chunks, 1);
  return static_cast<int32_t>(std::clamp<Bytes>(kWindowBytes / message, 1, kMaxWindow));
}

ScheduleKey normalize(ScheduleKey key) {
  key.algo = resolve(key.algo, key.op);
  if (!supports(key.algo, key.op)) {
    throw std::invalid_argument("collective algorithm '" + std::string(to_string(key.algo)) +
                                "' does not implement " + std::string(to_string(key.op)));
  }
  if (key.n < 1) throw std::invalid_argument("group size must be at least 1");
  if (key.chunks < 1) throw std::invalid_argument("chunks must be at least 1");
  if (key.channels < 1) throw std::invalid_argument("channels must be at least 1");
  if (key.node_size < 0) throw std::invalid_argument("node_size must not be negative");
  const bool ring = key.algo == Algorithm::kRing && key.op != Op::kBroadcast;
  if (!ring) key.channels = 1;
  if (key.window < 1) throw std::invalid_argument("window must be at least 1");
  // Direct sends wait for nothing, so neither pipelining nor a window applies.
  if (key.algo == Algorithm::kDirect) key.chunks = key.window = 1;
  if (static_cast<int64_t>(key.n) * key.chunks * key.channels * 2 >
      std::numeric_limits<uint32_t>::max()) {
    throw std::invalid_argument("group size times chunks is too large");
  }
  const bool rail_ring = ring && key.channels > 1 && key.local_size > 1;
  if (key.algo == Algorithm::kHierarchical || rail_ring) {
    if (key.local_size < 1 || key.n % key.local_size != 0) {
      throw std::invalid_argument(
          std::string(key.algo == Algorithm::kHierarchical ? "hierarchical all-reduce"
                                                           : "rail-aligned rings") +
          " need local_size >= 1 dividing the group size (n = " + std::to_string(key.n) +
          ", local_size = " + std::to_string(key.local_size) + ")");
    }
  } else {
    key.local_size = 0;
  }
  if (key.op == Op::kBroadcast) {
    if (key.root < 0 || key.root >= key.n) {
      throw std::invalid_argument("broadcast root " + std::to_string(key.root) +
                                  " is outside the group");
    }
  } else {
    key.root = 0;
  }
  return key;
}

std::shared_ptr<const Schedule> build_schedule(const ScheduleKey& raw) {
  const ScheduleKey key = normalize(raw);
  switch (key.algo) {
    case Algorithm::kRing:
      return std::make_shared<const Schedule>(key.op == Op::kBroadcast ? build_broadcast(key)
                                                                       : build_ring(key));
    case Algorithm::kTree:
      return std::make_shared<const Schedule>(build_tree(key));
    case Algorithm::kHierarchical:
      return std::make_shared<const Schedule>(build_hierarchical(key));
    case Algorithm::kNvls:
      return std::make_shared<const Schedule>(build_nvls(key));
    case Algorithm::kDirect:
      return std::make_shared<const Schedule>(key.op == Op::kAllToAll ? build_all_to_all(key)
                                                                      : build_send_recv(key));
    case Algorithm::kAuto:
      break;
  }
  throw std::logic_error("unresolved collective algorithm");
}

std::shared_ptr<const Schedule> ScheduleCache::get(const ScheduleKey& key) {
  const ScheduleKey k = normalize(key);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = schedules_.find(k);
  if (it == schedules_.end()) it = schedules_.emplace(k, build_schedule(k)).first;
  return it->second;
}

std::size_t ScheduleCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return schedules_.size();
}

}  // namespace cs::coll
