// chakra_to_workload: one dataflow program per rank from Chakra nodes, with the quirks of traces
// converted from PyTorch (dangling edges, CPU operators, comm wrappers, process groups).
#include <algorithm>
#include <climits>
#include <functional>
#include <unordered_map>

#include "sim/trace/chakra.h"
#include "sim/trace/chakra_all_to_all_v.h"
#include "sim/trace/chakra_attrs.h"
#include "sim/trace/launch_order.h"
#include "sim/trace/trace_format.h"
#include "sim/trace/validate.h"

namespace cs::trace {

namespace {

using ChakraProtoMsg::Node;
using workload::Op;
using workload::OpKind;
using workload::Stream;

// A barrier runs as an all-reduce of one 4-byte element (what torch.distributed.barrier runs on
// NCCL).
constexpr Bytes kBarrierBytes = 4;
// Dataflow ops off the compute stream run concurrently; their stream only labels them.
constexpr Stream kOffGpuStream = Stream::kCp;

// What a node becomes.
enum class Role : uint8_t { kGpuCompute, kMemory, kHost, kCollective, kSend, kRecv, kNoOp };

const char* comm_type_name(int64_t type) {
  static const char* const kNames[] = {
      "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER", "SCATTER", "BROADCAST",
      "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"};
  return type >= 0 && type < 10 ? kNames[type] : "?";
}

bool is_cpu(const NodeContext& ctx) {
  return int_attr(ctx, "is_cpu_op").value_or(0) != 0;
}

// PyTorch's CPU-side communication ops: record_param_comms (the metadata op c10d records around
// each collective), the c10d:: operators and the nccl:* annotations. Older converters typed the
// latter COMM_COLL_NODE without comm attributes; newer ones give the attributes to the GPU
// kernel (ncclDevKernel_*) that the CPU op launched.
bool is_wrapper(const NodeContext& ctx, bool cpu) {
  const Node& n = ctx.node;
  if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) return cpu || !find_attr(n, "comm_type");
  const std::string& name = n.name();
  return cpu && (name == "record_param_comms" || name.rfind("c10d::", 0) == 0 ||
                 name.rfind("nccl:", 0) == 0);
}

struct RankInput {
  const std::vector<Node>& nodes;
  const std::string& file;
  int32_t rank;
};

struct Classified {
  std::vector<Role> role;
  std::vector<const Node*> inherit;  // per node: the wrapper whose attributes fill its gaps
  std::vector<uint8_t> cpu;          // is_cpu_op, whatever role the node takes
};

// Roles for every node; pairs each GPU collective with the wrappers that launched it (its direct
// dependencies that are wrappers, and their ctrl_deps parents that are wrappers too).
// Marks each wrapper that a GPU collective depends on (through up to 8 wrappers above it) as
// paired with it, and gives each such collective the first wrapper it depends on to inherit from.
std::vector<bool> pair_wrappers(const RankInput& in,
                                const std::unordered_map<uint64_t, uint32_t>& position,
                                const std::vector<bool>& wrapper,
                                std::vector<const Node*>& inherit) {
  const auto n = static_cast<uint32_t>(in.nodes.size());
  std::vector<bool> paired(n);
  auto lookup = [&](uint64_t id) {
    const auto it = position.find(id);
    return it == position.end() ? UINT32_MAX : it->second;
  };
  for (uint32_t i = 0; i < n; ++i) {
    const Node& node = in.nodes[i];
    if (node.type() != ChakraProtoMsg::COMM_COLL_NODE || wrapper[i]) continue;
    for (const auto* list : {&node.ctrl_deps(), &node.data_deps()})
      for (const uint64_t d : *list) {
        uint32_t w = lookup(d);
        if (w == UINT32_MAX || !wrapper[w]) continue;
        if (!inherit[i]) inherit[i] = &in.nodes[w];
        for (int depth = 0; w != UINT32_MAX && wrapper[w] && !paired[w] && depth < 8; ++depth) {
          paired[w] = true;
          const auto& up = in.nodes[w].ctrl_deps();
          w = up.empty() ? UINT32_MAX : lookup(up[0]);
        }
      }
  }
  return paired;
}

// The role of a communication wrapper: none once paired with its GPU collective (host time if
// it is a CPU op), the collective itself in a trace without GPU kernels, else dropped.
Role wrapper_role(const RankInput& in, const Node& node, bool cpu, bool paired, ChakraSummary& s) {
  if (paired) {
    ++s.wrappers_paired;
    return cpu ? Role::kHost : Role::kNoOp;
  }
  const bool has_attrs = find_attr(node, "comm_type") && find_attr(node, "comm_size");
  if (has_attrs && node.type() == ChakraProtoMsg::COMM_COLL_NODE) return Role::kCollective;
  ++s.wrappers_dropped;
  s.note(in.file + ": rank " + std::to_string(in.rank) + ": node " + std::to_string(node.id()) +
         " (" + node.name() +
         "): communication wrapper without comm attributes nor a GPU collective, dropped");
  return Role::kNoOp;
}

// The role of any other node, by its type.
Role node_role(const NodeContext& ctx, bool cpu, ChakraSummary& s) {
  switch (ctx.node.type()) {
    case ChakraProtoMsg::COMP_NODE:
      return cpu ? Role::kHost : Role::kGpuCompute;
    case ChakraProtoMsg::MEM_LOAD_NODE:
    case ChakraProtoMsg::MEM_STORE_NODE:
      return Role::kMemory;
    case ChakraProtoMsg::COMM_COLL_NODE:
      return Role::kCollective;
    case ChakraProtoMsg::COMM_SEND_NODE:
      return Role::kSend;
    case ChakraProtoMsg::COMM_RECV_NODE:
      return Role::kRecv;
    case ChakraProtoMsg::METADATA_NODE:
      ++s.metadata_nodes;
      return Role::kNoOp;  // nothing to run; kept so that dependencies on it hold
    default:
      ctx.fail("unknown node type " + std::to_string(static_cast<int>(ctx.node.type())) +
               " (known: METADATA 1, MEM_LOAD 2, MEM_STORE 3, COMP 4, COMM_SEND 5, "
               "COMM_RECV 6, COMM_COLL 7)");
  }
}

Classified classify(const RankInput& in, const std::unordered_map<uint64_t, uint32_t>& position,
                    const ChakraImportOptions& options, ChakraSummary& s) {
  const auto n = static_cast<uint32_t>(in.nodes.size());
  std::vector<bool> cpu(n), wrapper(n);
  for (uint32_t i = 0; i < n; ++i) {
    const NodeContext ctx{in.file, in.rank, in.nodes[i]};
    cpu[i] = is_cpu(ctx);
    wrapper[i] = is_wrapper(ctx, cpu[i]);
  }
  Classified c{std::vector<Role>(n), std::vector<const Node*>(n, nullptr),
               std::vector<uint8_t>(cpu.begin(), cpu.end())};
  const std::vector<bool> paired = pair_wrappers(in, position, wrapper, c.inherit);
  for (uint32_t i = 0; i < n; ++i) {
    const NodeContext ctx{in.file, in.rank, in.nodes[i]};
    if (cpu[i]) ++s.cpu_ops;
    Role role = wrapper[i] ? wrapper_role(in, in.nodes[i], cpu[i], paired[i], s)
                           : node_role(ctx, cpu[i], s);
    if (role == Role::kHost && options.cpu_ops == CpuOps::kSkip) {
      ++s.cpu_ops_skipped;
      role = Role::kNoOp;
    }
    c.role[i] = role;
  }
  return c;
}

// The communicator table: group 0 spans every rank, named groups follow in name order.
struct Groups {
  std::map<std::string, int32_t> index;
  std::string source;
};

Groups build_groups(exec::ExplicitWorkload& w, const CommGroups& groups, const std::string& source,
                    int32_t world) {
  std::vector<int32_t> all(static_cast<std::size_t>(world));
  for (int32_t r = 0; r < world; ++r) all[static_cast<std::size_t>(r)] = r;
  w.groups.push_back(all);
  Groups out{{}, source};
  for (const auto& [name, listed] : groups) {
    const std::vector<int32_t>& members = listed.empty() ? all : listed;
    for (const int32_t m : members)
      if (m < 0 || m >= world)
        throw TraceError(source + ": communicator group \"" + name + "\" names rank " +
                         std::to_string(m) + ", but the trace has " + std::to_string(world) +
                         " rank file" + (world == 1 ? "" : "s") + " (ranks 0.." +
                         std::to_string(world - 1) + ")");
    std::vector<int32_t> sorted = members;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      throw TraceError(source + ": communicator group \"" + name + "\" lists a rank twice");
    out.index[name] = static_cast<int32_t>(w.groups.size());
    w.groups.push_back(members);
  }
  return out;
}

// The root's position among `members`: root_rank, else comm_dst (gather, reduce) or comm_src
// (scatter, broadcast), else the first member.
std::size_t root_index(const NodeContext& ctx, const std::vector<int32_t>& members, bool to_root) {
  auto root = int_attr(ctx, "root_rank");
  if (!root) root = int_attr(ctx, to_root ? "comm_dst" : "comm_src");
  if (!root) return 0;
  const auto it = std::find(members.begin(), members.end(), *root);
  if (it == members.end())
    ctx.fail("root rank " + std::to_string(*root) + " is not a member of the collective's group");
  return static_cast<std::size_t>(it - members.begin());
}

// An all-to-all-v entry of `program` for `o`.
void add_all_to_all_v(workload::Program& program, Op& o, std::vector<double> share, bool reverse) {
  workload::AllToAllV v;
  v.share = std::move(share);
  v.reverse = reverse;
  o.varies = static_cast<uint32_t>(program.all_to_alls.size());
  program.all_to_alls.push_back(std::move(v));
}

// An all-to-all's sizes: our own export's exact entry first; else the sizes this rank sends
// (PyTorch's in_split_size), else those it receives alone (out_split_size), else equal blocks.
void all_to_all_sizes(const NodeContext& ctx, std::size_t n, workload::Program& program, Op& o,
                      ChakraSummary& s) {
  if (auto exact = exact_all_to_all_v(ctx, n)) {
    o.bytes = exact->bytes;
    o.varies = static_cast<uint32_t>(program.all_to_alls.size());
    program.all_to_alls.push_back(std::move(exact->v));
    ++s.per_peer_all_to_alls;
    return;
  }
  bool reverse = false;
  auto split = int_list_attr(ctx, "in_split_size");
  if (!split || split->empty()) {
    split = int_list_attr(ctx, "out_split_size");
    reverse = true;
  }
  if (!split || split->empty()) return;  // equal blocks
  if (split->size() != n)
    ctx.fail(std::string(reverse ? "out" : "in") + "_split_size has " +
             std::to_string(split->size()) + " entries for a group of " + std::to_string(n) +
             " ranks");
  double sum = 0;
  for (const int64_t v : *split) sum += static_cast<double>(v);
  if (sum <= 0) return;
  std::vector<double> share(n);
  for (std::size_t d = 0; d < n; ++d) share[d] = static_cast<double>((*split)[d]) / sum;
  add_all_to_all_v(program, o, std::move(share), reverse);
  ++s.per_peer_all_to_alls;
}

// Fills collective `o` from its node. Returns false for a collective over one rank, which moves
// nothing and takes no time.
bool collective(const NodeContext& ctx, const exec::ExplicitWorkload& w, const Groups& groups,
                bool have_groups, workload::Program& program, Op& o, ChakraSummary& s) {
  o.kind = OpKind::kCollective;
  o.stream = Stream::kDp;
  o.dim = workload::Dim::kDp;
  o.bytes = size_attr(ctx, "comm_size");
  const int64_t type = required_int(ctx, "comm_type");
  o.comm = 0;
  if (const auto pg = string_attr(ctx, "pg_name"); pg && have_groups) {
    const auto it = groups.index.find(*pg);
    if (it == groups.index.end()) ctx.fail("pg_name \"" + *pg + "\" is not in " + groups.source);
    o.comm = it->second;
  }
  const auto& members = w.groups[static_cast<std::size_t>(o.comm)];
  if (std::find(members.begin(), members.end(), ctx.rank) == members.end())
    ctx.fail("this rank is not a member of its collective's group");
  ++s.collectives[comm_type_name(type)];
  const std::size_t n = members.size();
  switch (type) {
    case ChakraProtoMsg::ALL_REDUCE:
      o.coll_op = coll::Op::kAllReduce;
      break;
    case ChakraProtoMsg::BARRIER:
      o.coll_op = coll::Op::kAllReduce;
      o.bytes = kBarrierBytes;
      break;
    // NCCL's reduce and broadcast both run a pipelined chain that carries the S bytes over each
    // link once (nccl-tests gives both a bus-bandwidth factor of 1): the broadcast schedule.
    case ChakraProtoMsg::REDUCE:
    case ChakraProtoMsg::BROADCAST:
      o.coll_op = coll::Op::kBroadcast;
      break;
    case ChakraProtoMsg::ALL_GATHER:
      o.coll_op = coll::Op::kAllGather;
      break;
    case ChakraProtoMsg::REDUCE_SCATTER:
    case ChakraProtoMsg::REDUCE_SCATTER_BLOCK:
      o.coll_op = coll::Op::kReduceScatter;
      break;
    case ChakraProtoMsg::ALL_TO_ALL:
      o.coll_op = coll::Op::kAllToAll;
      all_to_all_sizes(ctx, n, program, o, s);
      break;
    // torch.distributed.gather / scatter run on NCCL as grouped sends and receives: every
    // non-root member sends its comm_size bytes to the root (scatter: receives them from it).
    case ChakraProtoMsg::GATHER:
    case ChakraProtoMsg::SCATTER: {
      const bool gather = type == ChakraProtoMsg::GATHER;
      o.coll_op = coll::Op::kAllToAll;
      std::vector<double> share(n, 0.0);
      share[root_index(ctx, members, gather)] = 1.0;
      add_all_to_all_v(program, o, std::move(share), !gather);
      break;
    }
    default:
      ctx.fail("collective comm_type " + std::to_string(type) +
               " is not a Chakra CollectiveCommType (ALL_REDUCE 0 .. BARRIER 9)");
  }
  if (n > 1) return true;
  ++s.single_rank_collectives;
  return false;
}

// A compute-like op (GPU kernel, memory move, host op): its traced duration, else for GPU work the
// roofline of num_ops and tensor_size.
void compute(const NodeContext& ctx, Role role, const compute::KernelCostModel& cost,
             workload::Program& program, Op& o, ChakraSummary& s) {
  o.kind = OpKind::kCompute;
  o.op_class = workload::OpClass::kForward;
  o.stream = role == Role::kGpuCompute ? Stream::kCompute : kOffGpuStream;
  if (role == Role::kGpuCompute) ++s.gpu_kernels;
  if (role == Role::kMemory) ++s.memory_nodes;
  const bool memory = role == Role::kMemory;
  const int64_t flops = role == Role::kGpuCompute ? int_attr(ctx, "num_ops").value_or(0) : 0;
  const int64_t bytes = role == Role::kHost ? 0 : int_attr(ctx, "tensor_size").value_or(0);
  if (flops < 0 || bytes < 0) ctx.fail("num_ops or tensor_size is negative");
  o.flops = static_cast<double>(flops);
  if (const auto ps = int_attr(ctx, "duration_ps")) {
    if (*ps < 0) ctx.fail("duration_ps is negative");
    o.duration = Time::ps(*ps);
  } else if (ctx.node.duration_micros() > 0) {
    o.duration = micros(ctx, ctx.node.duration_micros());
  } else if (flops > 0 || bytes > 0) {
    // A host op never gets here: its FLOPs ran on the CPU or are its GPU kernels' own.
    workload::KernelCall call;
    call.kernel = compute::memory_bound(memory ? "chakra_mem" : "chakra_comp",
                                        static_cast<double>(bytes), static_cast<double>(flops));
    o.kernel = static_cast<uint32_t>(program.kernels.size());
    program.kernels.push_back(call);
    o.duration = cost.time(call.kernel, call.precision);
  }
  if (role == Role::kHost) s.host_time += o.duration;
}

void no_op(Op& o) {
  o.kind = OpKind::kCompute;
  o.stream = kOffGpuStream;
  o.duration = Time{};
}

// Kahn's order, ties by file position; shorter than n on a cycle.
std::vector<uint32_t> topological_order(const std::vector<std::vector<uint32_t>>& preds) {
  const auto n = static_cast<uint32_t>(preds.size());
  std::vector<uint32_t> indegree(n), order;
  std::vector<std::vector<uint32_t>> succ(n);
  for (uint32_t i = 0; i < n; ++i)
    for (const uint32_t p : preds[i]) succ[p].push_back(i), ++indegree[i];
  std::vector<uint32_t> ready;
  for (uint32_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push_back(i);
  std::make_heap(ready.begin(), ready.end(), std::greater<>());
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), std::greater<>());
    const uint32_t i = ready.back();
    ready.pop_back();
    order.push_back(i);
    for (const uint32_t s : succ[i])
      if (--indegree[s] == 0) {
        ready.push_back(s);
        std::push_heap(ready.begin(), ready.end(), std::greater<>());
      }
  }
  return order;
}

// The program in `order`, dependencies renumbered; the compute stream takes GPU kernels in order.
void emit(workload::Program& program, const std::vector<Op>& ops,
          const std::vector<std::vector<uint32_t>>& preds, const std::vector<uint32_t>& order) {
  std::vector<uint32_t> index_of(ops.size());
  for (uint32_t k = 0; k < order.size(); ++k) index_of[order[k]] = k;
  for (const uint32_t i : order) {
    Op o = ops[i];
    o.deps_begin = static_cast<uint32_t>(program.deps.size());
    for (const uint32_t p : preds[i]) program.deps.push_back(index_of[p]);
    o.deps_end = static_cast<uint32_t>(program.deps.size());
    if (o.stream == Stream::kCompute)
      program.streams[0].push_back(static_cast<uint32_t>(program.ops.size()));
    program.ops.push_back(o);
  }
}

// Throws the cycle that check_program finds (it names every node on it), with `note` after it.
[[noreturn]] void report_cycle(const workload::Program& program, const std::vector<Op>& ops,
                               const std::vector<std::vector<uint32_t>>& preds,
                               const std::string& where, const std::string& note) {
  workload::Program cyclic = program;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    Op o = ops[i];
    o.stream = kOffGpuStream;
    o.deps_begin = static_cast<uint32_t>(cyclic.deps.size());
    cyclic.deps.insert(cyclic.deps.end(), preds[i].begin(), preds[i].end());
    o.deps_end = static_cast<uint32_t>(cyclic.deps.size());
    cyclic.ops.push_back(o);
  }
  try {
    check_program(cyclic, where);
  } catch (const TraceError& e) {
    throw TraceError(e.what() + note);
  }
  throw TraceError(where + ": dependency cycle" + note);
}

// Node names as the summary and errors show them: kernel names run to hundreds of characters.
std::string short_node_name(const Node& node) {
  constexpr std::size_t kMax = 72;
  const std::string& name = node.name();
  const std::string shown = name.size() <= kMax ? name : name.substr(0, kMax - 3) + "...";
  return "node " + std::to_string(node.id()) + (shown.empty() ? "" : " (" + shown + ")");
}

std::string describe(const BackEdge& e, const std::vector<Node>& nodes) {
  const std::string kernel = short_node_name(nodes[e.kernel]);
  if (e.op == e.launcher)
    return kernel + " -> " + short_node_name(nodes[e.op]) + ", which launched it";
  return kernel + " -> " + short_node_name(nodes[e.op]) + ", which ran before its launcher " +
         short_node_name(nodes[e.launcher]);
}

// A GPU node's launcher: the CPU operator the converter puts in its ctrl_deps.
std::vector<uint32_t> launchers(const RankInput& in, const Classified& roles,
                                const std::unordered_map<uint64_t, uint32_t>& position) {
  std::vector<uint32_t> out(in.nodes.size(), kNoLauncher);
  for (uint32_t i = 0; i < in.nodes.size(); ++i) {
    if (roles.cpu[i]) continue;
    for (const uint64_t d : in.nodes[i].ctrl_deps()) {
      const auto it = position.find(d);
      if (it != position.end() && roles.cpu[it->second]) {
        out[i] = it->second;
        break;
      }
    }
  }
  return out;
}

struct Context {
  const compute::KernelCostModel& cost;
  const ChakraImportOptions& options;
  const Groups& groups;
  bool have_groups;
  int32_t world;
  ChakraSummary& summary;
};

// Node id -> file position; throws on an id used twice.
std::unordered_map<uint64_t, uint32_t> chakra_node_positions(const RankInput& in) {
  std::unordered_map<uint64_t, uint32_t> position;
  for (uint32_t i = 0; i < in.nodes.size(); ++i)
    if (!position.emplace(in.nodes[i].id(), i).second)
      NodeContext{in.file, in.rank, in.nodes[i]}.fail("node id used twice");
  return position;
}

// The node's data and ctrl dependencies on this rank's nodes, each once, into `preds`; one on a
// node the rank lacks is dropped and counted (an error with --strict-deps).
void collect_node_deps(const RankInput& in, const NodeContext& ctx,
                       const std::unordered_map<uint64_t, uint32_t>& position, const Context& c,
                       std::vector<uint32_t>& preds) {
  ChakraSummary& s = c.summary;
  const Node& node = ctx.node;
  for (const bool ctrl : {false, true})
    for (const uint64_t d : ctrl ? node.ctrl_deps() : node.data_deps()) {
      const auto it = position.find(d);
      if (it == position.end()) {
        const std::string why = "depends on node " + std::to_string(d) + " (" +
                                (ctrl ? "ctrl" : "data") + "_deps), which this rank does not have";
        if (c.options.strict_deps) ctx.fail(why + " (--strict-deps)");
        ++(ctrl ? s.dangling_ctrl_deps : s.dangling_data_deps);
        s.note(in.file + ": rank " + std::to_string(in.rank) + ": node " +
               std::to_string(node.id()) + ": " + why + ", dropped");
        continue;
      }
      if (std::find(preds.begin(), preds.end(), it->second) == preds.end())
        preds.push_back(it->second);
    }
}

// A pipeline send or receive: its size, peer rank and tag.
void chakra_send_recv(const NodeContext& ctx, bool send, const Context& c, Op& o) {
  ++(send ? c.summary.sends : c.summary.recvs);
  o.kind = send ? OpKind::kSend : OpKind::kRecv;
  o.stream = send ? Stream::kSendNext : Stream::kRecvPrev;
  o.dim = workload::Dim::kPp;
  o.bytes = size_attr(ctx, "comm_size");
  o.peer_rank = peer_attr(ctx, send ? "comm_dst" : "comm_src", c.world);
  const int64_t tag = int_attr(ctx, "comm_tag").value_or(0);
  if (tag < 0 || tag > UINT32_MAX) ctx.fail("comm_tag is outside 0..2^32-1");
  o.tag = static_cast<uint32_t>(tag);
}

// Fills `o` for a node of `role`.
void convert_node(const NodeContext& ctx, Role role, exec::ExplicitWorkload& w, const Context& c,
                  workload::Program& program, Op& o) {
  switch (role) {
    case Role::kGpuCompute:
    case Role::kMemory:
    case Role::kHost:
      compute(ctx, role, c.cost, program, o, c.summary);
      break;
    case Role::kCollective:
      if (!collective(ctx, w, c.groups, c.have_groups, program, o, c.summary)) no_op(o);
      break;
    case Role::kSend:
    case Role::kRecv:
      chakra_send_recv(ctx, role == Role::kSend, c, o);
      break;
    case Role::kNoOp:
      no_op(o);
      break;
  }
}

// A topological order of the ops. chakra's trace linker turns HTA's synchronization edges into
// sync_dep on CPU operators and lands some on the operator that launched the kernel, or on one
// before it (issue 134): the operator's traced duration already holds its wait, and a node graph
// cannot say "finishes after its own kernel", so those edges are cut from `preds`; any other
// cycle stays an error.
std::vector<uint32_t> order_cutting_launch_edges(
    const RankInput& in, const Classified& roles,
    const std::unordered_map<uint64_t, uint32_t>& position, const Context& c,
    const workload::Program& program, const std::vector<Op>& ops,
    std::vector<std::vector<uint32_t>>& preds, const std::string& where) {
  ChakraSummary& s = c.summary;
  std::vector<uint32_t> order = topological_order(preds);
  if (order.size() == in.nodes.size()) return order;
  const auto launcher = launchers(in, roles, position);
  const std::vector<BackEdge> back = launch_order_back_edges({preds, roles.cpu, launcher});
  if (!back.empty() && c.options.strict_deps)
    report_cycle(program, ops, preds, where,
                 " (" + std::to_string(back.size()) +
                     " edge(s) run from a GPU kernel back against launch order, the first " +
                     describe(back.front(), in.nodes) + "; without --strict-deps they are cut)");
  for (const BackEdge& e : back) {
    auto& p = preds[e.op];
    p.erase(std::find(p.begin(), p.end(), e.kernel));
    ++s.launch_edges_cut;
    s.note_cut(where + ": " + describe(e, in.nodes));
  }
  if (!back.empty()) order = topological_order(preds);
  if (order.size() != in.nodes.size())
    report_cycle(program, ops, preds, where,
                 std::string(back.empty() ? " (" : " (after cutting the edges above, ") +
                     "no edge of it runs from a GPU kernel back to the CPU operator that "
                     "launched it or ran before it, so none is cut)");
  return order;
}

// One host thread: each CPU op waits for the one before it in `order` (which stays a
// topological order, as every added edge points forward in it).
void chain_host_ops(const std::vector<uint32_t>& order, const Classified& roles,
                    std::vector<std::vector<uint32_t>>& preds) {
  uint32_t previous_host = UINT32_MAX;
  for (const uint32_t i : order) {
    if (roles.role[i] != Role::kHost) continue;
    if (previous_host != UINT32_MAX &&
        std::find(preds[i].begin(), preds[i].end(), previous_host) == preds[i].end())
      preds[i].push_back(previous_host);
    previous_host = i;
  }
}

workload::Program convert_rank(const RankInput& in, exec::ExplicitWorkload& w, const Context& c) {
  const auto n = static_cast<uint32_t>(in.nodes.size());
  const std::unordered_map<uint64_t, uint32_t> position = chakra_node_positions(in);
  const Classified roles = classify(in, position, c.options, c.summary);
  std::vector<Op> ops(n);
  std::vector<std::vector<uint32_t>> preds(n);
  workload::Program program;
  program.dataflow = true;
  for (uint32_t i = 0; i < n; ++i) {
    const Node& node = in.nodes[i];
    const NodeContext ctx{in.file, in.rank, node, roles.inherit[i]};
    Op& o = ops[i];
    o.label = program.label("node " + std::to_string(node.id()) +
                            (node.name().empty() ? "" : " " + node.name()));
    o.op_class = workload::OpClass::kComm;
    collect_node_deps(in, ctx, position, c, preds[i]);
    convert_node(ctx, roles.role[i], w, c, program, o);
  }
  const std::string where = in.file + ": rank " + std::to_string(in.rank);
  const std::vector<uint32_t> order =
      order_cutting_launch_edges(in, roles, position, c, program, ops, preds, where);
  chain_host_ops(order, roles, preds);
  emit(program, ops, preds, order);
  check_program(program, where);
  return program;
}

std::string schema_of(const ChakraRank& rank) {
  for (const auto& a : rank.metadata.attr())
    if (a.name() == "schema" && a.value_case() == ChakraProtoMsg::AttributeProto::kStringVal)
      return a.string_val();
  return rank.metadata.version();
}

}  // namespace

exec::ExplicitWorkload chakra_to_workload(const std::vector<ChakraRank>& ranks,
                                          const std::vector<std::string>& files,
                                          const compute::KernelCostModel& cost,
                                          const CommGroups& groups,
                                          const ChakraImportOptions& options,
                                          ChakraSummary* summary) {
  ChakraSummary local;
  ChakraSummary& s = summary ? *summary : local;
  s = ChakraSummary{};
  const auto world = static_cast<int32_t>(ranks.size());
  if (world == 0) throw TraceError("no ranks to import");
  if (files.size() != ranks.size()) throw TraceError("one file name per rank is needed");
  s.ranks = world;
  s.schema = schema_of(ranks[0]);
  // Groups passed in win; else those the trace records.
  CommGroups resolved = groups;
  std::string source =
      options.groups_source.empty() ? "the communicator-group file" : options.groups_source;
  if (groups.empty()) {
    for (int32_t r = 0; r < world; ++r) {
      const auto& file = files[static_cast<std::size_t>(r)];
      if (auto g = metadata_comm_groups(ranks[static_cast<std::size_t>(r)].nodes, file, r))
        merge_comm_groups(resolved, *g, file);
    }
    source = "the trace's process_group:init metadata";
    if (!resolved.empty()) s.groups_from = "process_group:init metadata";
  } else {
    s.groups_from = source;
  }
  exec::ExplicitWorkload w;
  const Groups table = build_groups(w, resolved, source, world);
  s.groups = resolved.size();
  const Context c{cost, options, table, !resolved.empty(), world, s};
  for (int32_t r = 0; r < world; ++r) {
    const auto& rank = ranks[static_cast<std::size_t>(r)];
    s.nodes += rank.nodes.size();
    workload::Program program =
        convert_rank({rank.nodes, files[static_cast<std::size_t>(r)], r}, w, c);
    w.program_of_rank.push_back(static_cast<uint32_t>(w.programs.size()));
    w.programs.push_back(std::move(program));
  }
  return w;
}

exec::ExplicitWorkload chakra_to_workload(const std::vector<ChakraRank>& ranks,
                                          const std::vector<std::string>& files,
                                          const compute::KernelCostModel& cost,
                                          const CommGroups& groups) {
  return chakra_to_workload(ranks, files, cost, groups, ChakraImportOptions{}, nullptr);
}

}  // namespace cs::trace
