// Builds Chakra ranks the way chakra's trace linker and PyTorch converter build them from a PyTorch
// execution trace plus its Kineto kernels, one step after another as the Python does it
// (mlcommons/chakra src/trace_link/trace_linker.py, src/converter/pytorch_converter.py and
// pytorch_node.py), so that tests meet the converter's real structure rather than the schema's
// ideal: ids renumbered with each kernel right after its launcher, ctrl_deps = the caller (a
// kernel's: its launcher), data_deps from a walk of the call tree, NCCL kernels chained per
// pg_name, inter-thread and sync dependencies, the process annotation removed while the thread
// roots keep their ctrl_deps on it, durations cut to whole microseconds.
#pragma once

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/trace/chakra.h"

namespace cs::trace::converter_fixture {

using ChakraProtoMsg::Node;

// A GPU op that Kineto correlates with the CPU operator that launched it.
struct Kernel {
  Kernel(std::string kernel_name, double us, std::string kineto_category = "kernel")
      : name(std::move(kernel_name)), dur_us(us), category(std::move(kineto_category)) {}
  std::string name;
  double dur_us = 0;  // Kineto's microseconds; the converter keeps int(dur)
  int64_t stream = 7;
  std::string category = "kernel";  // or gpu_memcpy
  std::string pg_name;              // NCCL kernels: Kineto's "Process Group Name"
  int64_t comm_bytes = 0;           // what the converter sums from the launcher's input tensors
};

// One node of the host execution trace, numbered as PyTorch's observer numbers them.
struct HostOp {
  uint64_t id = 0;
  std::string name;
  uint64_t parent = 0;  // the caller: the host trace's ctrl_deps (0: none)
  double exclusive_us = 0;
  int64_t tid = 1;
  std::string inputs_values = "[]";
  std::vector<Kernel> kernels;
  std::optional<uint64_t> inter_thread_dep;  // a host op on another thread
  // The ET+ sync_dep list: (host op, kernel index) pairs this op is said to wait for. The linker
  // derives them from HTA's synchronization edges, and looks the consumer up with lookup_new_id
  // on an id that is already new, so they land on whichever op's original id equals it: on the
  // kernel's own launcher as often as on a later op.
  std::vector<std::pair<uint64_t, std::size_t>> sync_on;
};

class HostTrace {
 public:
  static constexpr const char* kProcess = "[pytorch|profiler|execution_trace|process]";
  static constexpr const char* kThread = "[pytorch|profiler|execution_trace|thread]";

  uint64_t op(const std::string& name, uint64_t parent, double exclusive_us, int64_t tid = 1) {
    HostOp& o = ops_.emplace_back();
    o.id = next_++;
    o.name = name;
    o.parent = parent;
    o.exclusive_us = exclusive_us;
    o.tid = tid;
    return o.id;
  }
  // Kernel index `launcher` launched.
  std::size_t kernel(uint64_t launcher, Kernel k) {
    auto& ks = at(launcher).kernels;
    ks.push_back(std::move(k));
    return ks.size() - 1;
  }
  HostOp& at(uint64_t id) {
    for (auto& o : ops_)
      if (o.id == id) return o;
    throw std::out_of_range("no host op " + std::to_string(id));
  }
  const std::vector<HostOp>& ops() const { return ops_; }

 private:
  std::vector<HostOp> ops_;
  uint64_t next_ = 1;
};

// What the converter wrote, with the ids tests ask about.
struct Converted {
  ChakraRank rank;
  std::map<std::pair<uint64_t, std::size_t>, uint64_t> kernel_id;  // (host op, index) -> node id
  std::map<uint64_t, uint64_t> op_id;                              // host op -> node id
  // The sync dependencies written on the op that launched the kernel: (kernel, op) node ids.
  std::vector<std::pair<uint64_t, uint64_t>> sync_on_own_kernel;
  std::set<uint64_t> removed;  // node ids remove_dangling_nodes dropped
};

namespace detail {

// pytorch_converter.py get_collective_comm_type: the name with '_' and '-' removed, lower case.
inline int64_t comm_type_of(const std::string& name) {
  std::string n;
  for (const char c : name)
    if (c != '_' && c != '-') n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::pair<const char*, int64_t> table[] = {
      {"allreduce", ChakraProtoMsg::ALL_REDUCE},
      {"alltoall", ChakraProtoMsg::ALL_TO_ALL},
      {"allgather", ChakraProtoMsg::ALL_GATHER},
      {"reducescatter", ChakraProtoMsg::REDUCE_SCATTER},
      {"broadcast", ChakraProtoMsg::BROADCAST}};
  for (const auto& [key, type] : table)
    if (n.find(key) != std::string::npos) return type;
  throw std::invalid_argument("the converter raises ValueError on kernel " + name);
}

inline void add_int(Node& n, const std::string& name, int64_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}
inline void add_string(Node& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_string_val(v);
}

// One node of the linked (ET+) JSON: a host op, or a kernel copied from its launcher.
struct JsonNode {
  uint64_t id = 0;
  std::string name;
  uint64_t parent = 0;
  double exclusive_us = 0;
  bool gpu = false;
  const HostOp* host = nullptr;  // the op itself, or the kernel's launcher
  const Kernel* kernel = nullptr;
  std::optional<uint64_t> inter_thread_dep;
  std::vector<uint64_t> sync_dep;
  std::vector<uint64_t> children;  // in the order establish_parent_child_relationships adds them
};

}  // namespace detail

// Links and converts `trace` for one rank: trace_linker.construct_et_plus_data, then
// PyTorchConverter.convert (without its final cycle check, which is what fails on such traces).
// The sync_dep pass is the one the converter ran before it compared start_time_micros (a field
// it never sets, so the comparison now drops every sync dependency; mlcommons/chakra PR 221).
inline Converted convert(const HostTrace& trace) {
  using detail::JsonNode;
  Converted out;
  // --- linker: UniqueIdAssigner from 0 over the ops in original order, each op's kernels taking
  // the next ids right after it.
  std::map<uint64_t, uint64_t> new_id;
  uint64_t next = 0;
  auto assign_or_retrieve = [&](uint64_t original) {
    const auto [it, added] = new_id.emplace(original, next);
    if (added) ++next;
    return it->second;
  };
  std::vector<const HostOp*> sorted;
  for (const auto& o : trace.ops()) sorted.push_back(&o);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->id < b->id; });
  std::map<uint64_t, JsonNode> json;  // by new id: the linker dumps nodes sorted by id
  for (const HostOp* o : sorted) {
    const uint64_t id = assign_or_retrieve(o->id);
    JsonNode& j = json[id];
    j.id = id;
    j.name = o->name;
    j.exclusive_us = o->exclusive_us;
    j.host = o;
    out.op_id[o->id] = id;
    for (std::size_t k = 0; k < o->kernels.size(); ++k) {
      JsonNode& g = json[next];
      g.id = next;
      g.name = o->kernels[k].name;
      g.exclusive_us = o->kernels[k].dur_us;
      g.gpu = true;
      g.host = o;
      g.kernel = &o->kernels[k];
      out.kernel_id[{o->id, k}] = next++;
    }
  }
  // ctrl_deps renumbered in id order; the process annotation's "0" (no caller) is an original id
  // never seen, so it gets a fresh id that no node has.
  for (auto& [id, j] : json) {
    j.parent = assign_or_retrieve(j.gpu ? j.host->id : j.host->parent);
    if (j.gpu) continue;
    if (j.host->inter_thread_dep) j.inter_thread_dep = out.op_id.at(*j.host->inter_thread_dep);
    for (const auto& s : j.host->sync_on) {
      const uint64_t k = out.kernel_id.at(s);
      j.sync_dep.push_back(k);
      if (s.first == j.host->id) out.sync_on_own_kernel.emplace_back(k, id);
    }
  }
  // --- converter: parent -> children, then protobuf nodes (a CPU op, then its GPU children).
  for (auto& [id, j] : json)
    if (auto it = json.find(j.parent); it != json.end()) it->second.children.push_back(id);
  std::map<uint64_t, Node> pb;
  auto to_node = [&](const JsonNode& j) {
    Node n;
    n.set_id(j.id);
    n.set_name(j.name);
    const bool nccl = j.gpu && (j.name.find("ncclKernel") != std::string::npos ||
                                j.name.find("ncclDevKernel") != std::string::npos);
    n.set_type(j.name.find("process_group:init") != std::string::npos
                   ? ChakraProtoMsg::METADATA_NODE
               : nccl ? ChakraProtoMsg::COMM_COLL_NODE
                      : ChakraProtoMsg::COMP_NODE);
    if (pb.count(j.parent)) n.add_ctrl_deps(j.parent);
    n.set_duration_micros(static_cast<uint64_t>(j.exclusive_us));  // int(exclusive_dur)
    if (j.name.find("Optimizer.step") != std::string::npos) n.set_duration_micros(0);
    n.mutable_inputs()->set_values(j.host->inputs_values);
    n.mutable_inputs()->set_shapes("[]");
    n.mutable_inputs()->set_types("[]");
    n.mutable_outputs()->set_values("[]");
    n.mutable_outputs()->set_shapes("[]");
    n.mutable_outputs()->set_types("[]");
    // A kernel is a deep copy of its launcher's JSON: its rf_id, seq_id, tid and op_schema.
    detail::add_int(n, "rf_id", static_cast<int64_t>(j.host->id));
    detail::add_int(n, "fw_parent", 0);
    detail::add_int(n, "seq_id", -1);
    detail::add_int(n, "scope", 0);
    detail::add_int(n, "tid", j.host->tid);
    detail::add_int(n, "fw_tid", 0);
    detail::add_string(n, "op_schema", "");
    auto* cpu = n.add_attr();
    cpu->set_name("is_cpu_op");
    cpu->set_bool_val(!j.gpu);
    // node_data.get("stream", 0): CPU ops carry stream 0 too.
    detail::add_int(n, "stream", j.gpu ? j.kernel->stream : 0);
    if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
      detail::add_int(n, "comm_type", detail::comm_type_of(j.name));
      detail::add_int(n, "comm_size", j.kernel->comm_bytes);
      if (!j.kernel->pg_name.empty()) detail::add_string(n, "pg_name", j.kernel->pg_name);
    }
    return n;
  };
  for (const auto& [id, j] : json) {
    if (j.gpu) continue;
    pb[id] = to_node(j);
    for (const uint64_t c : j.children)
      if (json.at(c).gpu) pb[c] = to_node(json.at(c));
  }
  // convert_ctrl_dep_to_data_dep from each thread root: a depth-first walk of the call tree.
  auto has = [](const Node& n, uint64_t d) {
    return std::find(n.data_deps().begin(), n.data_deps().end(), d) != n.data_deps().end();
  };
  for (const auto& [root_id, root] : json) {
    if (root.name != HostTrace::kThread || !pb.count(root_id)) continue;
    std::set<uint64_t> visited;
    std::vector<uint64_t> stack{root_id};
    std::optional<uint64_t> last_non_gpu, last_any;
    std::map<std::string, std::vector<uint64_t>> pg_ops;
    while (!stack.empty()) {
      const uint64_t id = stack.back();
      stack.pop_back();
      Node& n = pb.at(id);
      const JsonNode& j = json.at(id);
      if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
        auto& chain = pg_ops[j.kernel->pg_name];
        if (!chain.empty()) n.add_data_deps(chain.back());
        chain.push_back(id);
      }
      if (!visited.insert(id).second) continue;
      if (j.gpu) {
        if (last_any && !has(n, *last_any)) n.add_data_deps(*last_any);
        last_any = last_non_gpu;
      } else {
        if (j.inter_thread_dep && !has(n, *j.inter_thread_dep))
          n.add_data_deps(*j.inter_thread_dep);
        if (last_non_gpu && !has(n, *last_non_gpu)) n.add_data_deps(*last_non_gpu);
        last_non_gpu = id;
        last_any = id;
      }
      for (const uint64_t s : j.sync_dep)
        if (!has(n, s)) n.add_data_deps(s);
      std::vector<uint64_t> children = j.children;
      std::sort(children.rbegin(), children.rend());
      for (const uint64_t c : children)
        if (pb.count(c) && !visited.count(c)) stack.push_back(c);
    }
  }
  // remove_dangling_nodes: no data_deps and nobody's data dependency.
  std::set<uint64_t> parents;
  for (const auto& [id, n] : pb) parents.insert(n.data_deps().begin(), n.data_deps().end());
  for (auto it = pb.begin(); it != pb.end();)
    if (!parents.count(it->first) && it->second.data_deps().empty()) {
      out.removed.insert(it->first);
      it = pb.erase(it);
    } else {
      ++it;
    }
  auto attr = [&](const std::string& name) {
    auto* a = out.rank.metadata.add_attr();
    a->set_name(name);
    return a;
  };
  attr("schema")->set_string_val("1.1.0-chakra.0.0.4");
  attr("pid")->set_uint64_val(4242);
  attr("time")->set_string_val("2024-07-16 10:00:00");
  attr("start_ts")->set_uint64_val(1000);
  attr("finish_ts")->set_uint64_val(2000000);
  for (auto& [id, n] : pb) out.rank.nodes.push_back(std::move(n));
  return out;
}

// The shapes of a training step to build.
struct StepShape {
  int ranks = 2;
  int layers = 2;
  // Layers whose aten::mul carries a sync_dep on its own kernel (the linker's misplaced edge).
  std::set<int> mul_waits_on_own_kernel;
  // aten::_local_scalar_dense waits for its own device-to-host copy: a real wait that a node graph
  // can only write as a cycle.
  bool item_waits_on_own_copy = true;
  int all_reduce_buckets = 2;
};

// One rank of a small data-parallel training step as PyTorch records it: a main thread running
// the forward pass (aten::linear -> aten::addmm -> GEMM, aten::mul, aten::relu with a kernel under
// a microsecond), the loss read back by aten::item (a real sync on an earlier kernel and on its own
// copy), the backward pass on the autograd thread (inter-thread dependency on the main thread), the
// gradient all-reduce buckets through c10d::allreduce_ -> record_param_comms -> NCCL kernel on
// pg "0", and Optimizer.step with a fused multi-tensor kernel.
inline HostTrace training_step(const StepShape& shape) {
  HostTrace t;
  const uint64_t process = t.op(HostTrace::kProcess, 0, 0);
  const uint64_t main = t.op(HostTrace::kThread, process, 0, 1);
  const uint64_t pg = t.op("## process_group:init ##", main, 0, 1);
  std::string ranks;
  for (int r = 0; r < shape.ranks; ++r) ranks += (r ? ", " : "") + std::to_string(r);
  t.at(pg).inputs_values = R"(['[{"pg_name": "0", "pg_desc": "default_pg", "backend_config": )"
                           R"("cuda:nccl", "pg_size": )" +
                           std::to_string(shape.ranks) + R"(, "ranks": [)" + ranks + "]}]']";
  const uint64_t step = t.op("ProfilerStep#3", main, 12, 1);
  const std::string mul_kernel =
      "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, "
      "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, "
      "at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
      "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, "
      "3>)";
  const std::string gemm =
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1";
  for (int l = 0; l < shape.layers; ++l) {
    const uint64_t linear = t.op("aten::linear", step, 9);
    t.op("aten::t", linear, 4);
    const uint64_t addmm = t.op("aten::addmm", linear, 14);
    t.kernel(addmm, {gemm, 41.6});
    const uint64_t mul = t.op("aten::mul", step, 8);
    const std::size_t k = t.kernel(mul, {mul_kernel, 3.7});
    if (shape.mul_waits_on_own_kernel.count(l)) t.at(mul).sync_on.emplace_back(mul, k);
    const uint64_t relu = t.op("aten::relu", step, 6);
    t.kernel(relu, {"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
                    "namespace)::launch_clamp_scalar<...>>",
                    0.8});
  }
  const uint64_t sum = t.op("aten::sum", step, 11);
  const std::size_t reduce = t.kernel(sum, {"void at::native::reduce_kernel<512, 1, ...>", 5.2});
  const uint64_t item = t.op("aten::item", step, 3);
  const uint64_t dense = t.op("aten::_local_scalar_dense", item, 7);
  const std::size_t copy = t.kernel(dense, {"Memcpy DtoH (Device -> Pageable)", 1.9, "gpu_memcpy"});
  // The read-back waits for the loss reduction, launched earlier: a sync edge that holds.
  t.at(dense).sync_on.emplace_back(sum, reduce);
  if (shape.item_waits_on_own_copy) t.at(dense).sync_on.emplace_back(dense, copy);
  const uint64_t backward = t.op("aten::backward", step, 5);

  // Autograd's own thread: the layers in reverse.
  const uint64_t engine = t.op(HostTrace::kThread, process, 0, 2);
  bool first = true;
  uint64_t last_backward = engine;
  for (int l = shape.layers - 1; l >= 0; --l) {
    const uint64_t ev_mul = t.op("autograd::engine::evaluate_function: MulBackward0", engine, 4, 2);
    if (first) t.at(ev_mul).inter_thread_dep = backward;
    first = false;
    const uint64_t mb = t.op("MulBackward0", ev_mul, 3, 2);
    const uint64_t m = t.op("aten::mul", mb, 8, 2);
    t.kernel(m, {mul_kernel, 3.9});
    const uint64_t ev_mm =
        t.op("autograd::engine::evaluate_function: AddmmBackward0", engine, 4, 2);
    const uint64_t ab = t.op("AddmmBackward0", ev_mm, 5, 2);
    const uint64_t mm1 = t.op("aten::mm", ab, 12, 2);
    t.kernel(mm1, {gemm, 40.9});
    last_backward = t.op("aten::mm", ab, 12, 2);
    t.kernel(last_backward, {gemm, 42.3});
  }
  // Gradient buckets, back on the main thread once autograd is done.
  for (int b = 0; b < shape.all_reduce_buckets; ++b) {
    const uint64_t c10d = t.op("c10d::allreduce_", step, 9);
    if (b == 0) t.at(c10d).inter_thread_dep = last_backward;
    const uint64_t record = t.op("record_param_comms", c10d, 6);
    Kernel nccl{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 120.0};
    nccl.stream = 20;
    nccl.pg_name = "0";
    nccl.comm_bytes = int64_t{25} << 20;
    t.kernel(record, nccl);
  }
  const uint64_t opt = t.op("Optimizer.step#AdamW.step", step, 180);
  const uint64_t foreach = t.op("aten::_foreach_add_", opt, 15);
  t.kernel(foreach,
           {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>", 22.5});
  return t;
}

}  // namespace cs::trace::converter_fixture
