// NCCL's NVLS-tree all-reduce over whole Hopper servers: NVLink SHARP reduces each shard into its
// head GPU inside every server, a double binary tree per local index (one per NIC rail) reduces
// and broadcasts the shard across servers, and NVLink SHARP multicasts the sum back inside each
// server, chunk by chunk through the three.
#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/entries.h"
#include "sim/coll/fluid_form.h"

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

// The connections of one rail's half (l, t) as a chunk takes them, each group in the order a
// chunk crosses it: every GPU into its server's head (the NVLS reduction), up the tree from the
// deepest heads, down it from the root, and out of every head to its server's other GPUs.
struct HeadHop {
  uint32_t from, to;
};
struct HalfHops {
  std::vector<HeadHop> into, up, down, out;
};
HalfHops half_hops(const TreeOrder& tree, uint32_t local, uint32_t servers, uint32_t l) {
  HalfHops h;
  const auto gpu = [&](uint32_t q, uint32_t d) { return q * local + d; };
  for (uint32_t q = 0; q < servers; ++q)
    for (uint32_t d = 0; d < local; ++d)
      if (d != l) {
        h.into.push_back({gpu(q, d), gpu(q, l)});
        h.out.push_back({gpu(q, l), gpu(q, d)});
      }
  for (auto it = tree.order.rbegin(); it != tree.order.rend(); ++it) {
    const int32_t parent = tree.nodes[*it].parent;
    if (parent >= 0) h.up.push_back({gpu(*it, l), gpu(parent, l)});
  }
  for (const int32_t q : tree.order)
    for (const int32_t child : {tree.nodes[q].child0, tree.nodes[q].child1})
      if (child >= 0) h.down.push_back({gpu(q, l), gpu(child, l)});
  return h;
}

// The first chunk's trip through one half on an idle network: into the heads (each GPU's part of
// both halves, one message, while its server's other GPUs send theirs), up the tree once every
// child's sum has landed, down from the root, and out to the server: each hop its transfer and
// latencies; between servers a head's NIC sends (and receives) one message at a time.
Time half_first_chunk_path(const HalfHops& h, std::span<const FluidContext::MessageCost> cost,
                           uint32_t local, uint32_t servers) {
  std::vector<Time> summed(servers), copied(servers), sending(servers), receiving(servers);
  std::size_t e = 0;
  const auto landed = [](Time start, const FluidContext::MessageCost& c) {
    return start + c.transfer + c.route + c.step;
  };
  for (const HeadHop hop : h.into) {
    // Both halves travel in one message, while the server's other GPUs send into the same head.
    // The phase's sharing of a GPU's NVLink port counts its edges into the heads and, as the head
    // of its own shard, as many out of it; the first chunk meets only the ones into the heads.
    const Time shared = Time::ps(cost[e].shared.count_ps() / 2);
    summed[hop.to / local] =
        std::max(summed[hop.to / local], shared + cost[e].route + cost[e].step);
    ++e;
  }
  for (const HeadHop hop : h.up) {
    const uint32_t from = hop.from / local, to = hop.to / local;
    const Time start = std::max({summed[from], sending[from], receiving[to]});
    sending[from] = receiving[to] = start + cost[e].transfer;
    summed[to] = std::max(summed[to], landed(start, cost[e++]));
  }
  copied = summed;  // the root's copy is its sum; every other head's is overwritten below
  std::fill(sending.begin(), sending.end(), Time{});
  for (const HeadHop hop : h.down) {
    const uint32_t from = hop.from / local, to = hop.to / local;
    const Time start = std::max(copied[from], sending[from]);
    sending[from] = start + cost[e].transfer;
    copied[to] = landed(start, cost[e++]);
  }
  Time last;
  for (const HeadHop hop : h.out) {
    last = std::max(last, copied[hop.from / local] + cost[e].shared + cost[e].route + cost[e].step);
    ++e;
  }
  return last;
}

// An NVLS-tree all-reduce as fluid transfers: each rail's half (l, t) one lane of its server
// reductions into the heads, its tree up and down and its multicasts out, all of them carrying
// half of shard l once (the reductions both halves in one message, here split between the two
// lanes). Chunks pipeline through the four, so on an idle network the message schedule ends
// after the first chunk's trip and chunks - 1 periods of the lane's slowest connection: its
// transfer and a window's share of its route latency, or its transfer while the phase's other
// connections share its GPU's NVLink port or its NIC. Unlike a chain's, the NVLink transfers here
// queue: every GPU sends into and out of the heads of all shards each chunk, and where the switch
// side binds (two H100 servers under NCCL's NVLS-tree ceiling) the port's share sets the period.
// The walk is what that adds to the lane's time alone.
std::vector<FluidPhase> nvls_tree_fluid_phases(const FluidContext& ctx) {
  const ScheduleKey& key = ctx.key;
  const auto local = static_cast<uint32_t>(key.local_size);
  const auto servers = static_cast<uint32_t>(key.n) / local;
  const double payload = static_cast<double>(ctx.size) / (2.0 * local);
  const std::array<TreeOrder, 2> trees{tree_order(static_cast<int32_t>(servers), 0),
                                       tree_order(static_cast<int32_t>(servers), 1)};
  FluidPhase phase;
  std::vector<HalfHops> hops;
  for (uint32_t l = 0; l < local; ++l) {
    for (const TreeOrder& tree : trees) {
      hops.push_back(half_hops(tree, local, servers, l));
      FluidLane& lane = phase.emplace_back();
      const HalfHops& h = hops.back();
      for (const auto* group : {&h.into, &h.up, &h.down, &h.out})
        for (const HeadHop hop : *group) ctx.add_edge(lane, hop.from, hop.to, payload);
    }
  }
  const auto costs = ctx.message_costs(phase, key.chunks);
  for (std::size_t l = 0; l < phase.size(); ++l) {
    Time period, alone;
    for (const auto& c : costs[l]) {
      period = std::max({period, c.transfer + Time::ps(c.route.count_ps() / key.window), c.shared});
      alone = std::max(alone, repeated(c.own, key.chunks));
    }
    const Time total =
        half_first_chunk_path(hops[l], costs[l], local, servers) + repeated(period, key.chunks - 1);
    phase[l].walk = std::max(Time{}, total - alone);
  }
  const auto size = static_cast<Bytes>(ctx.size);
  ctx.stats.bytes_sent = 2 * (static_cast<Bytes>(servers) * (local - 1) + servers - 1) * size;
  const int64_t per_chunk =
      3 * int64_t{servers} * local * (local - 1) + 4 * int64_t{local} * (servers - 1);
  ctx.stats.messages = static_cast<uint32_t>(std::min<int64_t>(per_chunk * key.chunks, UINT32_MAX));
  return {std::move(phase)};
}

// As NCCL's tree (tree_pipelining), but a lane carries one server GPU's share of a tree half:
// its messages, which the in-flight window is sized for, are that share of the tree's.
Pipelining nvls_tree_pipelining(const PipelineShape& s) {
  Pipelining p = tree_pipelining(s);
  const Bytes local = std::max(s.local, 1);
  p.block = std::max<Bytes>(p.block / local, 1);
  p.piece = std::max<Bytes>((p.piece + local - 1) / local, 1);
  return p;
}

// Every NVLS-tree runs over whole servers of more than one GPU.
bool nvls_tree_fluid_fits(const ScheduleKey& key) {
  return key.local_size > 1 && key.n > key.local_size;
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
  all_reduce.pipelining = nvls_tree_pipelining;
  all_reduce.server_layout = "NVLS-tree all-reduce";
  all_reduce.fluid = {nvls_tree_fluid_fits, nvls_tree_fluid_phases};
  a.ops.push_back(all_reduce);
  return a;
}

}  // namespace cs::coll
