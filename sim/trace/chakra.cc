#include "sim/trace/chakra.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "sim/core/input_file.h"
#include "sim/net/topology_builder.h"
#include "sim/trace/chakra_all_to_all_v.h"
#include "sim/trace/comm_groups.h"
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

std::string rank_file(const std::string& prefix, int32_t rank) {
  return prefix + "." + std::to_string(rank) + ".et";
}

// Per rank, per communicator: its collectives in op order. The n-th a member posts meets the
// n-th of every other, which is how an export finds the posts an all-to-all-v is made of.
using CollectivesByComm = std::vector<std::unordered_map<int32_t, std::vector<uint32_t>>>;

CollectivesByComm collectives_by_comm(const exec::ExplicitWorkload& w) {
  CollectivesByComm out(w.program_of_rank.size());
  for (std::size_t r = 0; r < out.size(); ++r) {
    const auto& p = w.programs[w.program_of_rank[r]];
    for (uint32_t i = 0; i < p.ops.size(); ++i)
      if (p.ops[i].kind == OpKind::kCollective) out[r][p.ops[i].comm].push_back(i);
  }
  return out;
}

// The transfers of rank `rank`'s all-to-all-v `op` from every member's matching post; where the
// members' collectives do not line up (a trace that would not run), from this rank's post alone.
TransferMatrix matrix_of(const exec::ExplicitWorkload& w, const CollectivesByComm& by_comm,
                         std::size_t rank, uint32_t op) {
  auto post_of = [&](std::size_t r, uint32_t i) {
    const auto& p = w.programs[w.program_of_rank[r]];
    const Op& o = p.ops[i];
    return AllToAllPost{o.bytes,
                        o.varies < p.all_to_alls.size() ? &p.all_to_alls[o.varies] : nullptr};
  };
  const Op& o = w.programs[w.program_of_rank[rank]].ops[op];
  const auto& members = w.groups[static_cast<std::size_t>(o.comm)];
  const auto& mine = by_comm[rank].at(o.comm);
  const auto seq = static_cast<std::size_t>(std::find(mine.begin(), mine.end(), op) - mine.begin());
  std::vector<AllToAllPost> posts(members.size());
  std::vector<AllToAllPost> alone(members.size());
  bool lined_up = true;
  for (std::size_t j = 0; j < members.size(); ++j) {
    const auto m = static_cast<std::size_t>(members[j]);
    if (m == rank) alone[j] = posts[j] = post_of(rank, op);
    const auto it = by_comm[m].find(o.comm);
    if (it == by_comm[m].end() || seq >= it->second.size()) {
      lined_up = false;
      continue;
    }
    const uint32_t theirs = it->second[seq];
    if (w.programs[w.program_of_rank[m]].ops[theirs].coll_op != coll::Op::kAllToAll)
      lined_up = false;
    if (m != rank) posts[j] = post_of(m, theirs);
  }
  return transfer_matrix(lined_up ? posts : alone);
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

namespace {

// Ranks are read 0, 1, 2, ... up to the first file missing; a file of a higher rank beside them
// means one from the middle is missing, and reading on would silently shrink the job.
void require_no_rank_after(const std::string& prefix, int32_t missing) {
  const std::filesystem::path p(prefix);
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : ".";
  const std::string stem = p.filename().string() + ".";
  std::error_code ec;
  int32_t highest = -1;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(stem) || !name.ends_with(".et")) continue;
    const std::string number = name.substr(stem.size(), name.size() - stem.size() - 3);
    if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos ||
        number.size() > 9)
      continue;
    highest = std::max(highest, std::stoi(number));
  }
  if (highest > missing)
    throw TraceError(rank_file(prefix, missing) + ": missing, but rank files up to " +
                     rank_file(prefix, highest) + " exist: a trace needs every rank's file");
}

}  // namespace

ChakraFiles read_chakra_files(const std::string& prefix) {
  ChakraFiles out;
  for (int32_t r = 0;; ++r) {
    const std::string path = rank_file(prefix, r);
    // The ranks end at the first missing number; a rank file that is there but cannot be read
    // (a link to /dev/zero, a FIFO, a directory) is an error, not the end.
    if (!input_path_exists(path)) break;
    if (r >= net::kMaxBuildGpus)
      throw TraceError(prefix + ": more ranks than any cluster built here");
    const InputFile file = read_input_file(path, kMaxTraceBytes, "Chakra trace");
    if (!file.ok()) throw TraceError(file.error);
    out.ranks.push_back(parse_chakra_rank(file.bytes, path, r));
    out.files.push_back(path);
  }
  if (out.ranks.empty())
    throw TraceError(rank_file(prefix, 0) + ": cannot open (no Chakra trace there)");
  require_no_rank_after(prefix, static_cast<int32_t>(out.ranks.size()));
  return out;
}

exec::ExplicitWorkload read_chakra(const std::string& prefix, const compute::KernelCostModel& cost,
                                   const CommGroups& groups, const ChakraImportOptions& options,
                                   ChakraSummary* summary) {
  const ChakraFiles files = read_chakra_files(prefix);
  return chakra_to_workload(files.ranks, files.files, cost, groups, options, summary);
}

exec::ExplicitWorkload read_chakra(const std::string& prefix, const compute::KernelCostModel& cost,
                                   const CommGroups& groups) {
  return read_chakra(prefix, cost, groups, ChakraImportOptions{}, nullptr);
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
      // A program per rank: an expert op simply runs as long as this rank's experts need.
      if (o.kind == OpKind::kCompute && o.varies < p.rank_times.size()) {
        o.duration =
            p.rank_times[o.varies][static_cast<std::size_t>(layout.coord(r, workload::Dim::kEp))];
        o.varies = UINT32_MAX;
      }
    }
    p.rank_times.clear();
    w.program_of_rank.push_back(static_cast<uint32_t>(w.programs.size()));
    w.programs.push_back(std::move(p));
  }
  return w;
}

namespace {

void add_chakra_int(Node& node, const std::string& name, int64_t v) {
  auto* a = node.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}

// A compute op: its duration (in microseconds for other readers, in picoseconds for ours), FLOPs
// and kernel bytes.
void chakra_compute_attrs(Node& node, const workload::Program& p, const Op& o) {
  node.set_type(ChakraProtoMsg::COMP_NODE);
  // An explicit program's expert times have one entry: there is no EP coordinate.
  const Time duration =
      o.varies < p.rank_times.size() ? p.rank_times[o.varies].front() : o.duration;
  node.set_duration_micros(static_cast<uint64_t>(std::llround(duration.as_us())));
  add_chakra_int(node, "duration_ps", duration.count_ps());
  if (o.flops > 0) add_chakra_int(node, "num_ops", std::llround(o.flops));
  if (o.kernel < p.kernels.size())
    add_chakra_int(node, "tensor_size", std::llround(p.kernels[o.kernel].kernel.bytes));
}

// Rank `r`'s collective op `i`: its type, communicator and size; an all-to-all-v also gets the
// transfers its group's matching posts make up.
void chakra_collective_attrs(Node& node, const exec::ExplicitWorkload& w,
                             const CollectivesByComm& by_comm, std::size_t r, uint32_t i,
                             const std::string& path) {
  static constexpr ChakraProtoMsg::CollectiveCommType kTypes[] = {
      ChakraProtoMsg::ALL_REDUCE, ChakraProtoMsg::ALL_GATHER, ChakraProtoMsg::REDUCE_SCATTER,
      ChakraProtoMsg::ALL_TO_ALL, ChakraProtoMsg::BROADCAST};
  const auto& p = w.programs[w.program_of_rank[r]];
  const Op& o = p.ops[i];
  if (o.coll_op == coll::Op::kSendRecv)
    throw TraceError(path + ": op " + std::to_string(i) + ": send_recv has no Chakra form");
  node.set_type(ChakraProtoMsg::COMM_COLL_NODE);
  add_chakra_int(node, "comm_type", kTypes[static_cast<int>(o.coll_op)]);
  auto* pg = node.add_attr();
  pg->set_name("pg_name");
  pg->set_string_val(std::to_string(o.comm));
  if (o.varies >= p.all_to_alls.size()) {
    add_chakra_int(node, "comm_size", static_cast<int64_t>(o.bytes));
    return;
  }
  const auto& members = w.groups[static_cast<std::size_t>(o.comm)];
  const auto self = static_cast<std::size_t>(
      std::find(members.begin(), members.end(), static_cast<int32_t>(r)) - members.begin());
  if (self == members.size())
    throw TraceError(path + ": op " + std::to_string(i) +
                     ": this rank is not a member of its all-to-all-v's group");
  const TransferMatrix matrix = matrix_of(w, by_comm, r, i);
  // What this rank sends, as other readers take comm_size; ours reads the exact bytes.
  add_chakra_int(node, "comm_size", std::llround(sent_bytes(matrix, self)));
  add_all_to_all_v_attrs(node, o.bytes, p.all_to_alls[o.varies], matrix, self);
}

void chakra_send_recv_attrs(Node& node, const Op& o) {
  const bool send = o.kind == OpKind::kSend;
  node.set_type(send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE);
  add_chakra_int(node, "comm_type", send ? 5 : 6);
  add_chakra_int(node, "comm_size", static_cast<int64_t>(o.bytes));
  add_chakra_int(node, send ? "comm_dst" : "comm_src", o.peer_rank);
  add_chakra_int(node, "comm_tag", o.tag);
}

// Rank `r`'s op `i` as a Chakra node: its data deps, a ctrl dep on the op before it on its
// stream, and its kind's attributes.
Node chakra_node_of(const exec::ExplicitWorkload& w, const CollectivesByComm& by_comm,
                    std::size_t r, uint32_t i, const std::vector<uint32_t>& stream_prev,
                    const std::string& path) {
  const auto& p = w.programs[w.program_of_rank[r]];
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
    case OpKind::kCompute:
      chakra_compute_attrs(node, p, o);
      break;
    case OpKind::kCollective:
      chakra_collective_attrs(node, w, by_comm, r, i, path);
      break;
    case OpKind::kSend:
    case OpKind::kRecv:
      chakra_send_recv_attrs(node, o);
      break;
  }
  return node;
}

// Rank `r`'s .et file: the global metadata, then one length-prefixed node per op.
void write_chakra_rank(const exec::ExplicitWorkload& w, const CollectivesByComm& by_comm,
                       std::size_t r, const std::string& prefix) {
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
  for (uint32_t i = 0; i < p.ops.size(); ++i)
    emit(chakra_node_of(w, by_comm, r, i, stream_prev, path));
  coded.Trim();
  if (coded.HadError()) throw TraceError(path + ": cannot write");
}

}  // namespace

void write_chakra(const exec::ExplicitWorkload& w, const std::string& prefix) {
  const CollectivesByComm by_comm = collectives_by_comm(w);
  for (std::size_t r = 0; r < w.program_of_rank.size(); ++r)
    write_chakra_rank(w, by_comm, r, prefix);
  const std::string groups_path = prefix + ".comm_groups.json";
  write_comm_groups(w.groups, groups_path);
}

}  // namespace cs::trace
