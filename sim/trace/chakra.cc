#include "sim/trace/chakra.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "sim/net/topology_builder.h"
#include "sim/trace/trace_format.h"
#include "sim/trace/validate.h"
#include "sim/workload/layout.h"
#include "sim/workload/layout_config.h"

namespace cs::trace {

namespace {

using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::Node;
using workload::Op;
using workload::OpKind;
using workload::Stream;

// Inflated .et files beyond this are refused rather than exhausting memory.
constexpr std::size_t kMaxInflatedBytes = std::size_t{1} << 30;
// A barrier runs as an all-reduce of one 4-byte element.
constexpr Bytes kBarrierBytes = 4;
// Dataflow ops off the compute stream run concurrently; their stream only labels them.
constexpr Stream kOffGpuStream = Stream::kCp;

std::string inflate_gzip(std::string_view bytes, const std::string& where) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw TraceError(where + ": zlib failed to start");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(std::min<std::size_t>(bytes.size(), UINT_MAX));
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      throw TraceError(where + ": corrupt or truncated gzip data");
    }
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > kMaxInflatedBytes) {
      inflateEnd(&z);
      throw TraceError(where + ": inflates to more than 1 GiB");
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      throw TraceError(where + ": truncated gzip data");
    }
  }
  inflateEnd(&z);
  return out;
}

// Known field numbers whose wire type did not match land in the unknown fields: then the message
// is of another type (or corrupt).
bool has_unknown_fields_below(const google::protobuf::Message& m, int max_known) {
  const auto& unknown = m.GetReflection()->GetUnknownFields(m);
  for (int i = 0; i < unknown.field_count(); ++i)
    if (unknown.field(i).number() <= max_known) return true;
  return false;
}

const AttributeProto* find_attr(const Node& node, std::string_view name) {
  for (const auto& a : node.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

struct NodeContext {
  const std::string& file;
  int32_t rank;
  const Node& node;
  [[noreturn]] void fail(const std::string& why) const {
    throw TraceError(file + ": rank " + std::to_string(rank) + ": node " +
                     std::to_string(node.id()) + " (" + node.name() + "): " + why);
  }
};

// Any integer encoding the schema offers (and bool as 0 / 1).
std::optional<int64_t> int_attr(const NodeContext& ctx, std::string_view name) {
  const AttributeProto* a = find_attr(ctx.node, name);
  if (!a) return std::nullopt;
  switch (a->value_case()) {
    case AttributeProto::kInt32Val:
      return a->int32_val();
    case AttributeProto::kInt64Val:
      return a->int64_val();
    case AttributeProto::kUint32Val:
      return a->uint32_val();
    case AttributeProto::kUint64Val:
      if (a->uint64_val() > static_cast<uint64_t>(INT64_MAX))
        ctx.fail("attribute " + std::string(name) + " is out of range");
      return static_cast<int64_t>(a->uint64_val());
    case AttributeProto::kSint32Val:
      return a->sint32_val();
    case AttributeProto::kSint64Val:
      return a->sint64_val();
    case AttributeProto::kFixed32Val:
      return a->fixed32_val();
    case AttributeProto::kFixed64Val:
      if (a->fixed64_val() > static_cast<uint64_t>(INT64_MAX))
        ctx.fail("attribute " + std::string(name) + " is out of range");
      return static_cast<int64_t>(a->fixed64_val());
    case AttributeProto::kSfixed32Val:
      return a->sfixed32_val();
    case AttributeProto::kSfixed64Val:
      return a->sfixed64_val();
    case AttributeProto::kBoolVal:
      return a->bool_val() ? 1 : 0;
    default:
      ctx.fail("attribute " + std::string(name) + " is not an integer");
  }
}

int64_t required_int(const NodeContext& ctx, std::string_view name) {
  const auto v = int_attr(ctx, name);
  if (!v) ctx.fail("attribute " + std::string(name) + " is missing");
  return *v;
}

std::optional<std::string> string_attr(const NodeContext& ctx, std::string_view name) {
  const AttributeProto* a = find_attr(ctx.node, name);
  if (!a) return std::nullopt;
  if (a->value_case() == AttributeProto::kStringVal) return a->string_val();
  if (const auto v = int_attr(ctx, name)) return std::to_string(*v);
  return std::nullopt;
}

coll::Op collective_of(const NodeContext& ctx, int64_t type, Bytes* bytes) {
  switch (type) {
    case ChakraProtoMsg::ALL_REDUCE:
      return coll::Op::kAllReduce;
    case ChakraProtoMsg::ALL_GATHER:
      return coll::Op::kAllGather;
    case ChakraProtoMsg::REDUCE_SCATTER:
      return coll::Op::kReduceScatter;
    case ChakraProtoMsg::ALL_TO_ALL:
      return coll::Op::kAllToAll;
    case ChakraProtoMsg::BROADCAST:
      return coll::Op::kBroadcast;
    case ChakraProtoMsg::BARRIER:
      *bytes = kBarrierBytes;
      return coll::Op::kAllReduce;
    default:
      ctx.fail("collective comm_type " + std::to_string(type) +
               " is not supported (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, BROADCAST, "
               "BARRIER are)");
  }
}

Bytes size_attr(const NodeContext& ctx, std::string_view name) {
  const int64_t v = required_int(ctx, name);
  if (v < 0) ctx.fail("attribute " + std::string(name) + " is negative");
  return static_cast<Bytes>(v);
}

int32_t peer_attr(const NodeContext& ctx, std::string_view name, int32_t world) {
  const int64_t v = required_int(ctx, name);
  if (v < 0 || v >= world)
    ctx.fail("attribute " + std::string(name) + " = " + std::to_string(v) +
             " is not a rank of this " + std::to_string(world) + "-rank trace");
  return static_cast<int32_t>(v);
}

Time micros(const NodeContext& ctx, uint64_t us) {
  if (us > static_cast<uint64_t>(INT64_MAX / 1'000'000)) ctx.fail("duration_micros is too large");
  return Time::ps(static_cast<int64_t>(us) * 1'000'000);
}

std::string rank_file(const std::string& prefix, int32_t rank) {
  return prefix + "." + std::to_string(rank) + ".et";
}

}  // namespace

ChakraRank parse_chakra_rank(std::string_view bytes, const std::string& file, int32_t rank) {
  const std::string where = file + ": rank " + std::to_string(rank);
  std::string inflated;
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
      static_cast<unsigned char>(bytes[1]) == 0x8b) {
    inflated = inflate_gzip(bytes, where);
    bytes = inflated;
  }
  if (bytes.size() > static_cast<std::size_t>(INT_MAX))
    throw TraceError(where + ": larger than 2 GiB");
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(INT_MAX);
  ChakraRank out;
  std::size_t index = 0;
  while (true) {
    if (in.ExpectAtEnd()) break;
    uint32_t length = 0;
    const std::string what = index == 0 ? "GlobalMetadata" : "node #" + std::to_string(index);
    if (!in.ReadVarint32(&length))
      throw TraceError(where + ": " + what + ": truncated length prefix");
    if (length > static_cast<uint32_t>(in.BytesUntilTotalBytesLimit()) ||
        static_cast<std::size_t>(in.CurrentPosition()) + length > bytes.size())
      throw TraceError(where + ": " + what + ": truncated (length " + std::to_string(length) +
                       " runs past the end of the file)");
    const auto limit = in.PushLimit(static_cast<int>(length));
    if (index == 0) {
      if (!out.metadata.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage() ||
          !out.metadata.GetReflection()->GetUnknownFields(out.metadata).empty())
        throw TraceError(where +
                         ": the first message is not a GlobalMetadata (wrong message "
                         "type, or not a Chakra trace)");
    } else {
      Node node;
      if (!node.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage() ||
          has_unknown_fields_below(node, 10))
        throw TraceError(
            where + ": " + what + " (after node " +
            (out.nodes.empty() ? std::string("none") : std::to_string(out.nodes.back().id())) +
            "): not a Node (wrong message type, or corrupt)");
      out.nodes.push_back(std::move(node));
    }
    in.PopLimit(limit);
    ++index;
  }
  if (index == 0) throw TraceError(where + ": empty file, expected a GlobalMetadata");
  return out;
}

exec::ExplicitWorkload chakra_to_workload(const std::vector<ChakraRank>& ranks,
                                          const std::vector<std::string>& files,
                                          const compute::KernelCostModel& cost,
                                          const CommGroups& groups) {
  exec::ExplicitWorkload w;
  const auto world = static_cast<int32_t>(ranks.size());
  if (world == 0) throw TraceError("no ranks to import");
  // Group 0 spans every rank; named groups follow in name order.
  std::vector<int32_t> all(static_cast<std::size_t>(world));
  for (int32_t r = 0; r < world; ++r) all[static_cast<std::size_t>(r)] = r;
  w.groups.push_back(all);
  std::map<std::string, int32_t> group_index;
  for (const auto& [name, members] : groups) {
    std::vector<int32_t> sorted = members;
    std::sort(sorted.begin(), sorted.end());
    if (sorted.empty() || sorted.front() < 0 || sorted.back() >= world ||
        std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      throw TraceError("communicator group \"" + name + "\" must list distinct ranks of the " +
                       std::to_string(world) + "-rank trace");
    group_index[name] = static_cast<int32_t>(w.groups.size());
    w.groups.push_back(members);
  }
  for (int32_t r = 0; r < world; ++r) {
    const auto& nodes = ranks[static_cast<std::size_t>(r)].nodes;
    const std::string& file = files[static_cast<std::size_t>(r)];
    std::unordered_map<uint64_t, uint32_t> position;  // node id -> file position
    for (uint32_t i = 0; i < nodes.size(); ++i)
      if (!position.emplace(nodes[i].id(), i).second)
        NodeContext{file, r, nodes[i]}.fail("node id used twice");
    // Ops in file order first, with dependencies by file position.
    const auto n = static_cast<uint32_t>(nodes.size());
    std::vector<Op> ops(n);
    std::vector<std::vector<uint32_t>> preds(n);
    workload::Program program;
    program.dataflow = true;
    for (uint32_t i = 0; i < n; ++i) {
      const Node& node = nodes[i];
      const NodeContext ctx{file, r, node};
      Op& o = ops[i];
      o.label = program.label("node " + std::to_string(node.id()) +
                              (node.name().empty() ? "" : " " + node.name()));
      o.op_class = workload::OpClass::kComm;
      for (const auto* list : {&node.data_deps(), &node.ctrl_deps()})
        for (const uint64_t d : *list) {
          const auto it = position.find(d);
          if (it == position.end())
            ctx.fail("depends on node " + std::to_string(d) + ", which this rank does not have");
          if (std::find(preds[i].begin(), preds[i].end(), it->second) == preds[i].end())
            preds[i].push_back(it->second);
        }
      const bool cpu = int_attr(ctx, "is_cpu_op").value_or(0) != 0;
      switch (node.type()) {
        case ChakraProtoMsg::COMP_NODE:
        case ChakraProtoMsg::MEM_LOAD_NODE:
        case ChakraProtoMsg::MEM_STORE_NODE: {
          const bool memory = node.type() != ChakraProtoMsg::COMP_NODE;
          o.kind = OpKind::kCompute;
          o.op_class = workload::OpClass::kForward;
          o.stream = memory || cpu ? kOffGpuStream : Stream::kCompute;
          const int64_t flops = memory ? 0 : int_attr(ctx, "num_ops").value_or(0);
          const int64_t bytes = int_attr(ctx, "tensor_size").value_or(0);
          if (flops < 0 || bytes < 0) ctx.fail("num_ops or tensor_size is negative");
          o.flops = static_cast<double>(flops);
          if (const auto ps = int_attr(ctx, "duration_ps")) {
            if (*ps < 0) ctx.fail("duration_ps is negative");
            o.duration = Time::ps(*ps);
          } else if (node.duration_micros() > 0) {
            o.duration = micros(ctx, node.duration_micros());
          } else if (flops > 0 || bytes > 0) {
            workload::KernelCall call;
            call.kernel =
                compute::memory_bound(memory ? "chakra_mem" : "chakra_comp",
                                      static_cast<double>(bytes), static_cast<double>(flops));
            o.kernel = static_cast<uint32_t>(program.kernels.size());
            program.kernels.push_back(call);
            o.duration = cost.time(call.kernel, call.precision);
          }
          break;
        }
        case ChakraProtoMsg::COMM_COLL_NODE: {
          o.kind = OpKind::kCollective;
          o.stream = Stream::kDp;
          o.dim = workload::Dim::kDp;
          o.bytes = size_attr(ctx, "comm_size");
          o.coll_op = collective_of(ctx, required_int(ctx, "comm_type"), &o.bytes);
          o.comm = 0;
          if (const auto pg = string_attr(ctx, "pg_name"); pg && !groups.empty()) {
            const auto it = group_index.find(*pg);
            if (it == group_index.end())
              ctx.fail("pg_name \"" + *pg + "\" is not in the communicator-group file");
            o.comm = it->second;
          }
          const auto& members = w.groups[static_cast<std::size_t>(o.comm)];
          if (std::find(members.begin(), members.end(), r) == members.end())
            ctx.fail("this rank is not a member of its collective's group");
          break;
        }
        case ChakraProtoMsg::COMM_SEND_NODE:
        case ChakraProtoMsg::COMM_RECV_NODE: {
          const bool send = node.type() == ChakraProtoMsg::COMM_SEND_NODE;
          o.kind = send ? OpKind::kSend : OpKind::kRecv;
          o.stream = send ? Stream::kSendNext : Stream::kRecvPrev;
          o.dim = workload::Dim::kPp;
          o.bytes = size_attr(ctx, "comm_size");
          o.peer_rank = peer_attr(ctx, send ? "comm_dst" : "comm_src", world);
          const int64_t tag = int_attr(ctx, "comm_tag").value_or(0);
          if (tag < 0 || tag > UINT32_MAX) ctx.fail("comm_tag is outside 0..2^32-1");
          o.tag = static_cast<uint32_t>(tag);
          break;
        }
        case ChakraProtoMsg::METADATA_NODE:
          o.kind = OpKind::kCompute;  // nothing to run; kept so that dependencies on it hold
          o.stream = kOffGpuStream;
          break;
        default:
          ctx.fail("unknown node type " + std::to_string(static_cast<int>(node.type())));
      }
    }
    // Topological order (Kahn, ties by file position) so that the compute stream never runs
    // against a dependency; a cycle is reported by check_program on the file-order graph.
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
    const std::string where = file + ": rank " + std::to_string(r);
    if (order.size() != n) {
      workload::Program cyclic = program;
      for (uint32_t i = 0; i < n; ++i) {
        Op o = ops[i];
        o.stream = kOffGpuStream;
        o.deps_begin = static_cast<uint32_t>(cyclic.deps.size());
        cyclic.deps.insert(cyclic.deps.end(), preds[i].begin(), preds[i].end());
        o.deps_end = static_cast<uint32_t>(cyclic.deps.size());
        cyclic.ops.push_back(o);
      }
      check_program(cyclic, where);
      throw TraceError(where + ": dependency cycle");
    }
    std::vector<uint32_t> index_of(n);
    for (uint32_t k = 0; k < n; ++k) index_of[order[k]] = k;
    for (const uint32_t i : order) {
      Op o = ops[i];
      o.deps_begin = static_cast<uint32_t>(program.deps.size());
      for (const uint32_t p : preds[i]) program.deps.push_back(index_of[p]);
      o.deps_end = static_cast<uint32_t>(program.deps.size());
      if (o.stream == Stream::kCompute)
        program.streams[0].push_back(static_cast<uint32_t>(program.ops.size()));
      program.ops.push_back(o);
    }
    check_program(program, where);
    w.program_of_rank.push_back(static_cast<uint32_t>(w.programs.size()));
    w.programs.push_back(std::move(program));
  }
  return w;
}

exec::ExplicitWorkload read_chakra(const std::string& prefix, const compute::KernelCostModel& cost,
                                   const CommGroups& groups) {
  std::vector<ChakraRank> ranks;
  std::vector<std::string> files;
  for (int32_t r = 0;; ++r) {
    const std::string path = rank_file(prefix, r);
    std::ifstream in(path, std::ios::binary);
    if (!in) break;
    if (r >= net::kMaxBuildGpus)
      throw TraceError(prefix + ": more ranks than any cluster built here");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    ranks.push_back(parse_chakra_rank(buffer.view(), path, r));
    files.push_back(path);
  }
  if (ranks.empty())
    throw TraceError(rank_file(prefix, 0) + ": cannot open (no Chakra trace there)");
  return chakra_to_workload(ranks, files, cost, groups);
}

exec::ExplicitWorkload expand_layout(const run::PreparedStep& step) {
  const workload::Layout layout = workload::layout_of(step.config.parallel());
  exec::ExplicitWorkload w;
  // Groups: for each dimension, its groups in group-id order.
  std::array<int32_t, workload::kNumDims> first_group{};
  for (int d = 0; d < workload::kNumDims; ++d) {
    const auto dim = static_cast<workload::Dim>(d);
    first_group[d] = static_cast<int32_t>(w.groups.size());
    std::vector<std::vector<int32_t>> groups(static_cast<std::size_t>(layout.num_groups(dim)));
    for (int32_t r = 0; r < layout.world(); ++r)
      groups[static_cast<std::size_t>(layout.group_id(r, dim))].push_back(r);
    for (auto& g : groups) w.groups.push_back(std::move(g));
  }
  for (int32_t r = 0; r < layout.world(); ++r) {
    workload::Program p =
        step.programs[static_cast<std::size_t>(layout.coord(r, workload::Dim::kPp))];
    for (auto& o : p.ops) {
      if (o.kind == OpKind::kSend || o.kind == OpKind::kRecv)
        o.peer_rank = layout.with_stage(r, o.peer_stage);
      if (o.kind == OpKind::kCollective)
        o.comm = first_group[static_cast<int>(o.dim)] + layout.group_id(r, o.dim);
    }
    w.program_of_rank.push_back(static_cast<uint32_t>(w.programs.size()));
    w.programs.push_back(std::move(p));
  }
  return w;
}

void write_chakra(const exec::ExplicitWorkload& w, const std::string& prefix) {
  auto add_int = [](Node& node, const std::string& name, int64_t v) {
    auto* a = node.add_attr();
    a->set_name(name);
    a->set_int64_val(v);
  };
  for (std::size_t r = 0; r < w.program_of_rank.size(); ++r) {
    const auto& p = w.programs[w.program_of_rank[r]];
    const std::string path = rank_file(prefix, static_cast<int32_t>(r));
    std::ofstream out(path, std::ios::binary);
    if (!out) throw TraceError(path + ": cannot write");
    google::protobuf::io::OstreamOutputStream zero_copy(&out);
    google::protobuf::io::CodedOutputStream coded(&zero_copy);
    auto emit = [&](const google::protobuf::Message& m) {
      coded.WriteVarint32(static_cast<uint32_t>(m.ByteSizeLong()));
      m.SerializeWithCachedSizes(&coded);
    };
    ChakraProtoMsg::GlobalMetadata meta;
    meta.set_version("0.0.4");
    auto* producer = meta.add_attr();
    producer->set_name("producer");
    producer->set_string_val("clustersim");
    emit(meta);
    std::vector<uint32_t> stream_prev(p.ops.size(), UINT32_MAX);
    for (const auto& stream : p.streams)
      for (std::size_t k = 1; k < stream.size(); ++k) stream_prev[stream[k]] = stream[k - 1];
    for (uint32_t i = 0; i < p.ops.size(); ++i) {
      const Op& o = p.ops[i];
      Node node;
      node.set_id(i);
      if (o.label < p.labels.size()) node.set_name(p.labels[o.label]);
      for (uint32_t d = o.deps_begin; d < o.deps_end; ++d) node.add_data_deps(p.deps[d]);
      if (stream_prev[i] != UINT32_MAX) node.add_ctrl_deps(stream_prev[i]);
      auto* cpu = node.add_attr();
      cpu->set_name("is_cpu_op");
      cpu->set_bool_val(false);
      switch (o.kind) {
        case OpKind::kCompute: {
          node.set_type(ChakraProtoMsg::COMP_NODE);
          node.set_duration_micros(static_cast<uint64_t>(std::llround(o.duration.as_us())));
          add_int(node, "duration_ps", o.duration.count_ps());
          if (o.flops > 0) add_int(node, "num_ops", std::llround(o.flops));
          if (o.kernel < p.kernels.size())
            add_int(node, "tensor_size", std::llround(p.kernels[o.kernel].kernel.bytes));
          break;
        }
        case OpKind::kCollective: {
          static constexpr ChakraProtoMsg::CollectiveCommType kTypes[] = {
              ChakraProtoMsg::ALL_REDUCE, ChakraProtoMsg::ALL_GATHER,
              ChakraProtoMsg::REDUCE_SCATTER, ChakraProtoMsg::ALL_TO_ALL,
              ChakraProtoMsg::BROADCAST};
          if (o.coll_op == coll::Op::kSendRecv)
            throw TraceError(path + ": op " + std::to_string(i) + ": send_recv has no Chakra form");
          node.set_type(ChakraProtoMsg::COMM_COLL_NODE);
          add_int(node, "comm_type", kTypes[static_cast<int>(o.coll_op)]);
          add_int(node, "comm_size", static_cast<int64_t>(o.bytes));
          auto* pg = node.add_attr();
          pg->set_name("pg_name");
          pg->set_string_val(std::to_string(o.comm));
          break;
        }
        case OpKind::kSend:
        case OpKind::kRecv: {
          const bool send = o.kind == OpKind::kSend;
          node.set_type(send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE);
          add_int(node, "comm_type", send ? 5 : 6);
          add_int(node, "comm_size", static_cast<int64_t>(o.bytes));
          add_int(node, send ? "comm_dst" : "comm_src", o.peer_rank);
          add_int(node, "comm_tag", o.tag);
          break;
        }
      }
      emit(node);
    }
    coded.Trim();
    if (coded.HadError()) throw TraceError(path + ": cannot write");
  }
  const std::string groups_path = prefix + ".comm_groups.json";
  write_comm_groups(w.groups, groups_path);
}

}  // namespace cs::trace
