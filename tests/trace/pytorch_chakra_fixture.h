// Builds Chakra ranks shaped like what chakra's PyTorch converter writes from an execution trace
// linked with Kineto (mlcommons/chakra src/converter/pytorch_converter.py, pytorch_node.py): CPU
// operators with is_cpu_op = true and ctrl_deps on their caller, GPU kernels with is_cpu_op =
// false and a data dependency on the CPU op that launched them, NCCL kernels as COMM_COLL_NODE
// with comm_type / comm_size / pg_name, record_param_comms and c10d:: wrappers, the
// "## process_group:init ##" METADATA node holding pg_config, and a GlobalMetadata with schema,
// pid, time, start_ts and finish_ts attributes.
#pragma once

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <fstream>
#include <string>
#include <vector>

#include "sim/trace/chakra.h"

namespace cs::trace::pytorch_fixture {

using ChakraProtoMsg::Node;

inline void set_int(Node& n, const std::string& name, int64_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}
inline void set_string(Node& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_string_val(v);
}

// One rank's trace, node ids given out in order as the execution-trace observer does.
class PtRank {
 public:
  PtRank() {
    auto attr = [&](const std::string& name) {
      auto* a = rank_.metadata.add_attr();
      a->set_name(name);
      return a;
    };
    attr("schema")->set_string_val("1.0.2-chakra.0.0.4");
    attr("pid")->set_uint64_val(4242);
    attr("time")->set_string_val("2024-05-01 12:00:00");
    attr("start_ts")->set_uint64_val(1000);
    attr("finish_ts")->set_uint64_val(900000);
  }
  // The "[pytorch|profiler|execution_trace|thread]" root every CPU op descends from.
  uint64_t thread_root() { return cpu_op("[pytorch|profiler|execution_trace|thread]", 0, {}); }
  // A CPU operator called by `parent` (0: none) that ran `exclusive_us` on the host.
  uint64_t cpu_op(const std::string& name, uint64_t exclusive_us, std::vector<uint64_t> parents,
                  ChakraProtoMsg::NodeType type = ChakraProtoMsg::COMP_NODE) {
    Node& n = add(name, type);
    for (const auto p : parents) n.add_ctrl_deps(p);
    if (!parents.empty()) n.add_data_deps(parents.back());
    n.set_duration_micros(exclusive_us);
    for (const char* a : {"rf_id", "fw_parent", "seq_id", "scope", "tid", "fw_tid"})
      set_int(n, a, 1);
    set_string(n, "op_schema", "");
    auto* cpu = n.add_attr();
    cpu->set_name("is_cpu_op");
    cpu->set_bool_val(true);
    return n.id();
  }
  // A GPU kernel launched by CPU op `launcher`.
  uint64_t kernel(const std::string& name, uint64_t launcher, uint64_t dur_us) {
    Node& n = gpu(name, ChakraProtoMsg::COMP_NODE, launcher);
    n.set_duration_micros(dur_us);
    return n.id();
  }
  // An NCCL kernel (ncclDevKernel_*), with the attributes the converter adds.
  uint64_t nccl(int64_t comm_type, int64_t bytes, uint64_t launcher, const std::string& pg = "") {
    Node& n = gpu("ncclDevKernel_Generic", ChakraProtoMsg::COMM_COLL_NODE, launcher);
    set_int(n, "comm_type", comm_type);
    set_int(n, "comm_size", bytes);
    if (!pg.empty()) set_string(n, "pg_name", pg);
    return n.id();
  }
  // The process-group metadata node, inputs.values as Python's str() of the one-string list.
  uint64_t pg_init(const std::string& pg_config_json, uint64_t parent) {
    Node& n = add("## process_group:init ##", ChakraProtoMsg::METADATA_NODE);
    n.add_ctrl_deps(parent);
    n.mutable_inputs()->set_values("['" + pg_config_json + "']");
    return n.id();
  }
  Node& node(uint64_t id) {
    for (auto& n : rank_.nodes)
      if (n.id() == id) return n;
    throw std::out_of_range("no node " + std::to_string(id));
  }
  // A node id the file will not have (the converter removed that node).
  uint64_t missing() { return next_++; }
  const ChakraRank& rank() const { return rank_; }

 private:
  Node& add(const std::string& name, ChakraProtoMsg::NodeType type) {
    Node& n = rank_.nodes.emplace_back();
    n.set_id(next_++);
    n.set_name(name);
    n.set_type(type);
    return n;
  }
  Node& gpu(const std::string& name, ChakraProtoMsg::NodeType type, uint64_t launcher) {
    Node& n = add(name, type);
    n.add_ctrl_deps(launcher);
    n.add_data_deps(launcher);
    for (const char* a : {"rf_id", "fw_parent", "seq_id", "scope", "tid", "fw_tid"})
      set_int(n, a, 1);
    auto* cpu = n.add_attr();
    cpu->set_name("is_cpu_op");
    cpu->set_bool_val(false);
    set_int(n, "stream", 7);
    return n;
  }
  ChakraRank rank_;
  uint64_t next_ = 1;
};

// Writes `rank` as a .et file: varint32-length-prefixed GlobalMetadata, then the nodes.
inline void write_et(const ChakraRank& rank, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  google::protobuf::io::OstreamOutputStream zero_copy(&out);
  google::protobuf::io::CodedOutputStream coded(&zero_copy);
  auto emit = [&](const google::protobuf::Message& m) {
    coded.WriteVarint32(static_cast<uint32_t>(m.ByteSizeLong()));
    m.SerializeWithCachedSizes(&coded);
  };
  emit(rank.metadata);
  for (const auto& n : rank.nodes) emit(n);
}

}  // namespace cs::trace::pytorch_fixture
