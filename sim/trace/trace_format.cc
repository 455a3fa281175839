#include "sim/trace/trace_format.h"

#include <google/protobuf/io/coded_stream.h>

#include <climits>
#include <cmath>
#include <fstream>
#include <sstream>

#include "sim/compute/gpu_profile.h"
#include "sim/compute/kernel_cost.h"
#include "sim/core/input_file.h"
#include "sim/net/topology_builder.h"
#include "sim/trace/validate.h"
#include "sim/trace/varying_ops.h"
#include "sim/workload/layout.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/model_math.h"

namespace cs::trace {

namespace pb = clustersim::trace;

namespace {

constexpr const char* kProducer = "clustersim 0.1";

bool in_range(int value, int count) {
  return value >= 0 && value < count;
}

// The group a kernel of `kind` has when its trace does not say.
compute::KernelGroup default_group(compute::KernelKind kind) {
  switch (kind) {
    case compute::KernelKind::kGemm:
      return compute::KernelGroup::kGemm;
    case compute::KernelKind::kAttention:
      return compute::KernelGroup::kAttention;
    case compute::KernelKind::kMemoryBound:
      break;
  }
  return compute::KernelGroup::kOther;
}

// Version 1 unless a program varies by rank: then 2, which version-1 readers refuse rather than
// replay uniform work in its place.
uint32_t format_version(const std::vector<workload::Program>& programs) {
  for (const auto& p : programs)
    if (has_varying_ops(p)) return kFormatVersion;
  return kPlainFormatVersion;
}

pb::Program program_to_proto(const workload::Program& p) {
  pb::Program out;
  out.mutable_labels()->Reserve(static_cast<int>(p.labels.size()));
  for (const auto& l : p.labels) out.add_labels(l);
  for (const auto& call : p.kernels) {
    const auto& k = call.kernel;
    auto* pk = out.add_kernels();
    if (k.kind != compute::KernelKind::kGemm) pk->set_kind(static_cast<pb::KernelKind>(k.kind));
    if (!k.name.empty()) pk->set_name(std::string(k.name));
    if (k.m) pk->set_m(k.m);
    if (k.n) pk->set_n(k.n);
    if (k.k) pk->set_k(k.k);
    if (k.batch != 1) pk->set_batch(k.batch);
    if (k.heads) pk->set_heads(k.heads);
    if (k.seq_q) pk->set_seq_q(k.seq_q);
    if (k.seq_kv) pk->set_seq_kv(k.seq_kv);
    if (k.head_dim) pk->set_head_dim(k.head_dim);
    if (k.causal) pk->set_causal(true);
    if (k.backward) pk->set_backward(true);
    if (k.flops != 0) pk->set_flops(k.flops);
    if (k.bytes != 0) pk->set_bytes(k.bytes);
    if (k.unvectorized_elements != 0) pk->set_unvectorized_elements(k.unvectorized_elements);
    if (k.multi_tensor) pk->set_multi_tensor(true);
    if (k.token_permute) pk->set_token_permute(true);
    if (call.precision != compute::Precision::kBf16)
      pk->set_precision(static_cast<pb::Precision>(call.precision));
    if (k.group != default_group(k.kind)) pk->set_group(static_cast<uint32_t>(k.group));
  }
  out.mutable_ops()->Reserve(static_cast<int>(p.ops.size()));
  for (const auto& o : p.ops) {
    auto* po = out.add_ops();
    if (o.kind != workload::OpKind::kCompute) po->set_kind(static_cast<pb::OpKind>(o.kind));
    if (o.stream != workload::Stream::kCompute) po->set_stream(static_cast<pb::Stream>(o.stream));
    if (o.op_class != workload::OpClass::kForward)
      po->set_op_class(static_cast<pb::OpClass>(o.op_class));
    if (o.dim != workload::Dim::kTp) po->set_dim(static_cast<pb::Dim>(o.dim));
    if (o.coll_op != coll::Op::kAllReduce)
      po->set_collective(static_cast<pb::CollectiveType>(o.coll_op));
    if (o.duration.count_ps() != 0) po->set_duration_ps(o.duration.count_ps());
    if (o.bytes != 0) po->set_bytes(static_cast<int64_t>(o.bytes));
    if (o.flops != 0) po->set_flops(o.flops);
    if (o.peer_stage != -1) po->set_peer_stage(o.peer_stage);
    if (o.tag != 0) po->set_tag(o.tag);
    if (o.microbatch != -1) po->set_microbatch(o.microbatch);
    if (o.layer != -1) po->set_layer(o.layer);
    if (o.label != 0) po->set_label(o.label);
    if (o.kernel != UINT32_MAX) po->set_kernel(o.kernel);
    for (uint32_t d = o.deps_begin; d < o.deps_end; ++d) po->add_deps(p.deps[d]);
    if (o.peer_rank != -1) po->set_peer_rank(o.peer_rank);
    if (o.comm != -1) po->set_comm(o.comm);
    if (o.varies != UINT32_MAX) po->set_varies(o.varies);
  }
  varying_to_proto(p, out);
  for (int s = 0; s < workload::kNumStreams; ++s) {
    if (p.streams[s].empty()) continue;
    auto* ps = out.add_streams();
    if (s != 0) ps->set_stream(static_cast<pb::Stream>(s));
    ps->mutable_ops()->Add(p.streams[s].begin(), p.streams[s].end());
  }
  if (p.dataflow) out.set_dataflow(true);
  return out;
}

// Throws TraceError for `why`, naming `where` (a file, or a program in one).
[[noreturn]] void fail_trace_at(const std::string& where, const std::string& why) {
  throw TraceError(where + ": " + why);
}

// The program's kernel table (names shared by every copy of the program), checked.
void kernels_from_proto(const pb::Program& in, workload::Program& p, const std::string& where) {
  auto names = std::make_shared<std::vector<std::string>>();
  names->reserve(static_cast<std::size_t>(in.kernels_size()));
  for (const auto& pk : in.kernels()) names->push_back(pk.name());
  for (int i = 0; i < in.kernels_size(); ++i) {
    const auto& pk = in.kernels(i);
    if (!in_range(pk.kind(), 3) || !in_range(pk.precision(), 3))
      fail_trace_at(where, "kernel " + std::to_string(i) + ": unknown kind or precision");
    workload::KernelCall call;
    auto& k = call.kernel;
    k.kind = static_cast<compute::KernelKind>(pk.kind());
    k.name = (*names)[static_cast<std::size_t>(i)];
    k.m = pk.m(), k.n = pk.n(), k.k = pk.k(), k.batch = pk.batch();
    k.heads = pk.heads(), k.seq_q = pk.seq_q(), k.seq_kv = pk.seq_kv(), k.head_dim = pk.head_dim();
    k.causal = pk.causal(), k.backward = pk.backward();
    k.flops = pk.flops(), k.bytes = pk.bytes();
    k.unvectorized_elements = pk.unvectorized_elements();
    k.multi_tensor = pk.multi_tensor();
    k.token_permute = pk.token_permute();
    for (const double v : {k.flops, k.bytes, k.unvectorized_elements}) {
      if (!std::isfinite(v) || v < 0)
        fail_trace_at(where,
                      "kernel " + std::to_string(i) +
                          ": flops, bytes and unvectorized_elements must be finite and >= 0");
    }
    if (pk.has_group() && pk.group() >= static_cast<uint32_t>(compute::KernelGroup::kNumGroups))
      fail_trace_at(
          where, "kernel " + std::to_string(i) + ": unknown group " + std::to_string(pk.group()));
    k.group =
        pk.has_group() ? static_cast<compute::KernelGroup>(pk.group()) : default_group(k.kind);
    call.precision = static_cast<compute::Precision>(pk.precision());
    p.kernels.push_back(call);
  }
  p.kernel_names = std::move(names);
}

// Throws TraceError unless op `i`'s enums are known and its duration and size are sane; adds its
// duration to `total_ps`. Simulated time is a signed 64-bit count of picoseconds (106 days): a
// program whose durations add up to more would wrap the clock, and the simulator would then see
// events in its past. Ten days is far beyond any step and leaves room for the waits between ops.
void check_proto_op(const pb::Op& po, int i, int64_t& total_ps, const std::string& where) {
  constexpr int64_t kMaxProgramPs = 10LL * 86400 * 1'000'000'000'000;
  if (!in_range(po.kind(), 4) || !in_range(po.stream(), workload::kNumStreams) ||
      !in_range(po.op_class(), 6) || !in_range(po.dim(), workload::kNumDims) ||
      !in_range(po.collective(), coll::kNumOps))
    fail_trace_at(where, "op " + std::to_string(i) +
                             ": unknown kind, stream, class, dimension or collective");
  if (po.duration_ps() < 0 || po.bytes() < 0)
    fail_trace_at(where, "op " + std::to_string(i) + ": negative duration or size");
  if (po.duration_ps() > kMaxProgramPs - total_ps)
    fail_trace_at(where, "op " + std::to_string(i) +
                             ": duration_ps = " + std::to_string(po.duration_ps()) +
                             " takes the program's ops past 10 days (" +
                             std::to_string(kMaxProgramPs) + " ps), beyond any step");
  total_ps += po.duration_ps();
}

// One op as the simulator holds it, its dependencies appended to p.deps.
workload::Op op_from_proto(const pb::Op& po, workload::Program& p) {
  workload::Op o;
  o.kind = static_cast<workload::OpKind>(po.kind());
  o.stream = static_cast<workload::Stream>(po.stream());
  o.op_class = static_cast<workload::OpClass>(po.op_class());
  o.dim = static_cast<workload::Dim>(po.dim());
  o.coll_op = static_cast<coll::Op>(po.collective());
  o.duration = Time::ps(po.duration_ps());
  o.bytes = static_cast<Bytes>(po.bytes());
  o.flops = po.flops();
  o.peer_stage = po.peer_stage();
  o.tag = po.tag();
  o.microbatch = po.microbatch();
  o.layer = po.layer();
  o.label = po.label();
  o.kernel = po.kernel();
  o.peer_rank = po.peer_rank();
  o.comm = po.comm();
  o.varies = po.varies();
  o.deps_begin = static_cast<uint32_t>(p.deps.size());
  p.deps.insert(p.deps.end(), po.deps().begin(), po.deps().end());
  o.deps_end = static_cast<uint32_t>(p.deps.size());
  return o;
}

workload::Program program_from_proto(const pb::Program& in, const std::string& where) {
  workload::Program p;
  p.labels.assign(in.labels().begin(), in.labels().end());
  for (uint32_t i = 0; i < p.labels.size(); ++i) p.label_index.emplace(p.labels[i], i);
  kernels_from_proto(in, p, where);
  p.ops.reserve(static_cast<std::size_t>(in.ops_size()));
  int64_t total_ps = 0;
  for (int i = 0; i < in.ops_size(); ++i) {
    check_proto_op(in.ops(i), i, total_ps, where);
    p.ops.push_back(op_from_proto(in.ops(i), p));
  }
  for (const auto& ps : in.streams()) {
    if (!in_range(ps.stream(), workload::kNumStreams)) fail_trace_at(where, "unknown stream");
    auto& stream = p.streams[static_cast<std::size_t>(ps.stream())];
    if (!stream.empty())
      fail_trace_at(where, "stream " + std::to_string(ps.stream()) + " is listed twice");
    stream.assign(ps.ops().begin(), ps.ops().end());
  }
  p.dataflow = in.dataflow();
  varying_from_proto(in, p, where);
  check_program(p, where);
  return p;
}

}  // namespace

pb::Trace to_trace(const run::PreparedStep& step) {
  pb::Trace out;
  auto* meta = out.mutable_metadata();
  meta->set_producer(kProducer);
  meta->set_format_version(format_version(step.programs));
  meta->set_time_unit("ps");
  meta->set_size_unit("bytes");
  *meta->mutable_config() = step.config;
  const workload::Layout layout = workload::layout_of(step.config.parallel());
  workload::set_dim_sizes(layout.sizes(), *meta->mutable_layout());
  meta->mutable_layout()->set_etp(step.config.parallel().etp());
  meta->mutable_layout()->set_pipeline_outermost(
      workload::pipeline_outermost_of(step.config.parallel()));
  meta->set_world_size(layout.world());
  meta->set_timed_for_gpu(step.timed_for_gpu);
  for (const int32_t h : step.peak_held) meta->add_peak_held(h);
  meta->mutable_costs()->set_t_f(step.costs.t_f);
  meta->mutable_costs()->set_t_b(step.costs.t_b);
  meta->mutable_costs()->set_t_w(step.costs.t_w);
  for (std::size_t s = 0; s < step.programs.size(); ++s) {
    auto program = program_to_proto(step.programs[s]);
    program.set_name("stage " + std::to_string(s));
    *out.add_programs() = std::move(program);
  }
  out.mutable_rank_program()->Reserve(layout.world());
  for (int32_t r = 0; r < layout.world(); ++r)
    out.add_rank_program(static_cast<uint32_t>(layout.coord(r, workload::Dim::kPp)));
  for (int d = 0; d < workload::kNumDims; ++d) {
    const auto dim = static_cast<workload::Dim>(d);
    if (layout.size(dim) == 1 || !layout.uses(dim)) continue;
    for (int32_t r = 0; r < layout.world(); ++r) {
      if (layout.coord(r, dim) != 0) continue;  // one group per set of members, from its first
      auto* c = out.add_communicators();
      c->set_name(std::string(workload::info(dim).key) + std::to_string(layout.group_id(r, dim)));
      c->set_dim(static_cast<pb::Dim>(d));
      for (const int32_t m : layout.group_members(r, dim)) c->add_ranks(m);
    }
  }
  return out;
}

pb::Trace to_trace(const exec::ExplicitWorkload& workload, const std::string& source) {
  pb::Trace out;
  auto* meta = out.mutable_metadata();
  meta->set_producer(kProducer);
  meta->set_format_version(format_version(workload.programs));
  meta->set_time_unit("ps");
  meta->set_size_unit("bytes");
  meta->set_world_size(static_cast<int32_t>(workload.program_of_rank.size()));
  meta->set_source(source);
  for (std::size_t p = 0; p < workload.programs.size(); ++p) {
    auto program = program_to_proto(workload.programs[p]);
    program.set_name("program " + std::to_string(p));
    *out.add_programs() = std::move(program);
  }
  out.mutable_rank_program()->Add(workload.program_of_rank.begin(), workload.program_of_rank.end());
  for (std::size_t g = 0; g < workload.groups.size(); ++g) {
    auto* c = out.add_communicators();
    c->set_name("group " + std::to_string(g));
    c->mutable_ranks()->Add(workload.groups[g].begin(), workload.groups[g].end());
  }
  return out;
}

namespace {

// Checks the metadata every trace needs (version, units, the rank count) and returns the ranks.
int64_t checked_trace_world(const pb::Trace& trace, const std::string& file) {
  if (!trace.has_metadata()) fail_trace_at(file, "no metadata: not a clustersim trace");
  const auto& meta = trace.metadata();
  if (meta.format_version() < kPlainFormatVersion || meta.format_version() > kFormatVersion)
    fail_trace_at(file, "trace format version " + std::to_string(meta.format_version()) +
                            ", this build reads " + std::to_string(kPlainFormatVersion) + " to " +
                            std::to_string(kFormatVersion));
  if (meta.time_unit() != "ps" || meta.size_unit() != "bytes")
    fail_trace_at(
        file, "units must be ps and bytes, not " + meta.time_unit() + " and " + meta.size_unit());
  const int64_t world = trace.rank_program_size();
  if (world == 0) fail_trace_at(file, "no ranks");
  if (meta.world_size() != world)
    fail_trace_at(file, "metadata.world_size = " + std::to_string(meta.world_size()) +
                            " but the trace maps " + std::to_string(world) + " ranks to programs");
  if (world > net::kMaxBuildGpus)
    fail_trace_at(file, "more ranks than any cluster this simulator builds");
  return world;
}

// Every program, checked, and every rank's program present.
std::vector<workload::Program> programs_from_trace(const pb::Trace& trace, const std::string& file,
                                                   int64_t world) {
  std::vector<workload::Program> programs;
  programs.reserve(static_cast<std::size_t>(trace.programs_size()));
  for (int i = 0; i < trace.programs_size(); ++i)
    programs.push_back(
        program_from_proto(trace.programs(i), file + ": program " + std::to_string(i)));
  for (int64_t r = 0; r < world; ++r)
    if (trace.rank_program(static_cast<int>(r)) >= programs.size())
      fail_trace_at(file, "rank " + std::to_string(r) + " runs program " +
                              std::to_string(trace.rank_program(static_cast<int>(r))) +
                              ", which is absent");
  return programs;
}

// A layout trace's programs: one per pipeline stage, run by that stage's ranks, with peers named
// by stage only and per-rank rows sized to their dimension.
void check_layout_programs(const pb::Trace& trace, const std::string& file,
                           const clustersim::ParallelConfig& par,
                           const std::vector<workload::Program>& programs) {
  const workload::Layout layout = workload::layout_of(par);
  if (static_cast<int32_t>(programs.size()) != par.pp())
    fail_trace_at(file, "a layout trace needs one program per pipeline stage");
  for (int32_t r = 0; r < layout.world(); ++r)
    if (trace.rank_program(r) != static_cast<uint32_t>(layout.coord(r, workload::Dim::kPp)))
      fail_trace_at(file,
                    "rank " + std::to_string(r) + " does not run its pipeline stage's program");
  for (std::size_t s = 0; s < programs.size(); ++s)
    for (const auto& o : programs[s].ops) {
      const bool p2p = o.kind == workload::OpKind::kSend || o.kind == workload::OpKind::kRecv;
      if (p2p && (o.peer_stage < 0 || o.peer_stage >= par.pp()))
        fail_trace_at(file,
                      "program " + std::to_string(s) + ": a send or receive names an absent stage");
      if (programs[s].dataflow || o.peer_rank >= 0 || o.comm >= 0)
        fail_trace_at(file, "program " + std::to_string(s) + ": explicit peers in a layout trace");
    }
  for (std::size_t s = 0; s < programs.size(); ++s)
    check_varying_sizes(
        programs[s], file + ": program " + std::to_string(s),
        static_cast<std::size_t>(layout.size(workload::Dim::kEp)), "one per EP rank",
        [&](const workload::Op& o) { return static_cast<std::size_t>(layout.size(o.dim)); });
}

// A layout trace's metadata: one peak_held entry per stage, in range, and finite pass costs.
void check_layout_metadata(const pb::Metadata& meta, const std::string& file,
                           const clustersim::ParallelConfig& par) {
  if (meta.peak_held_size() != par.pp()) fail_trace_at(file, "peak_held needs one entry per stage");
  // Microbatches whose activations a stage holds at its peak: at least 0, at most the step's.
  const int32_t microbatches = workload::num_microbatches(par);
  for (int s = 0; s < meta.peak_held_size(); ++s)
    if (meta.peak_held(s) < 0 || meta.peak_held(s) > microbatches * par.virtual_stages())
      fail_trace_at(file, "metadata.peak_held[" + std::to_string(s) +
                              "] = " + std::to_string(meta.peak_held(s)) + " is not in [0, " +
                              std::to_string(microbatches * par.virtual_stages()) +
                              "] (microbatches x virtual stages)");
  for (const auto& [v, field] : {std::pair{meta.costs().t_f(), "t_f"},
                                 {meta.costs().t_b(), "t_b"},
                                 {meta.costs().t_w(), "t_w"}})
    if (!(v >= 0) || !std::isfinite(v))
      fail_trace_at(file, "metadata.costs." + std::string(field) + " must be a finite time >= 0");
}

// A layout trace (its metadata holds a config): programs are per pipeline stage and ranks
// follow the layout.
run::PreparedStep layout_step_from_trace(const pb::Trace& trace, const std::string& file,
                                         int64_t world, std::vector<workload::Program> programs) {
  const auto& meta = trace.metadata();
  run::PreparedStep step;
  step.config = meta.config();
  const auto& par = step.config.parallel();
  if (workload::world_of(workload::dim_sizes(par)) != world)
    fail_trace_at(
        file, "the layout in the config does not match the " + std::to_string(world) + " ranks");
  check_layout_programs(trace, file, par, programs);
  check_layout_metadata(meta, file, par);
  step.programs = std::move(programs);
  step.peak_held.assign(meta.peak_held().begin(), meta.peak_held().end());
  step.costs.t_f = meta.costs().t_f();
  step.costs.t_b = meta.costs().t_b();
  step.costs.t_w = meta.costs().t_w();
  step.timed_for_gpu = meta.timed_for_gpu();
  return step;
}

// The trace's communicators, each non-empty, of present ranks, with no rank twice.
std::vector<std::vector<int32_t>> communicators_from_trace(const pb::Trace& trace,
                                                           const std::string& file, int64_t world) {
  std::vector<std::vector<int32_t>> groups;
  for (const auto& c : trace.communicators()) {
    std::vector<int32_t> members(c.ranks().begin(), c.ranks().end());
    std::vector<int32_t> sorted = members;
    std::sort(sorted.begin(), sorted.end());
    if (members.empty()) fail_trace_at(file, "communicator " + c.name() + " has no members");
    if (sorted.front() < 0 || sorted.back() >= world)
      fail_trace_at(file, "communicator " + c.name() + " names an absent rank");
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      fail_trace_at(file, "communicator " + c.name() + " lists a rank twice");
    groups.push_back(std::move(members));
  }
  return groups;
}

// An explicit trace: every rank names its program, and ops name peer ranks and communicators.
exec::ExplicitWorkload explicit_workload_from_trace(const pb::Trace& trace, const std::string& file,
                                                    int64_t world,
                                                    std::vector<workload::Program> programs) {
  exec::ExplicitWorkload w;
  w.program_of_rank.assign(trace.rank_program().begin(), trace.rank_program().end());
  w.groups = communicators_from_trace(trace, file, world);
  for (std::size_t p = 0; p < programs.size(); ++p)
    for (uint32_t i = 0; i < programs[p].ops.size(); ++i) {
      const auto& o = programs[p].ops[i];
      const std::string where = "program " + std::to_string(p) + " op " + std::to_string(i);
      if ((o.kind == workload::OpKind::kSend || o.kind == workload::OpKind::kRecv) &&
          (o.peer_rank < 0 || o.peer_rank >= world))
        fail_trace_at(file, where + ": peer rank " + std::to_string(o.peer_rank) + " is absent");
      if (o.kind == workload::OpKind::kCollective &&
          (o.comm < 0 || static_cast<std::size_t>(o.comm) >= w.groups.size()))
        fail_trace_at(file, where + ": communicator " + std::to_string(o.comm) + " is absent");
    }
  for (std::size_t p = 0; p < programs.size(); ++p)
    check_varying_sizes(programs[p], file + ": program " + std::to_string(p), 1,
                        "an explicit program has no EP coordinate", [&](const workload::Op& o) {
                          return w.groups[static_cast<std::size_t>(o.comm)].size();
                        });
  w.programs = std::move(programs);
  return w;
}

}  // namespace

LoadedTrace from_trace(const pb::Trace& trace, const std::string& file) {
  const int64_t world = checked_trace_world(trace, file);
  std::vector<workload::Program> programs = programs_from_trace(trace, file, world);
  if (trace.metadata().format_version() == kDeepEpImpliedVersion)
    for (auto& p : programs)
      for (auto& v : p.all_to_alls) v.deduplicated = v.max_nodes > 0;
  LoadedTrace loaded;
  loaded.source = trace.metadata().source();
  if (trace.metadata().has_config())
    loaded.step = layout_step_from_trace(trace, file, world, std::move(programs));
  else
    loaded.workload = explicit_workload_from_trace(trace, file, world, std::move(programs));
  return loaded;
}

pb::Trace parse_trace(std::string_view bytes, const std::string& file) {
  if (bytes.size() > static_cast<std::size_t>(INT_MAX))
    throw TraceError(file + ": larger than the 2 GiB a protobuf message can hold");
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  input.SetTotalBytesLimit(INT_MAX);
  pb::Trace trace;
  if (!trace.ParseFromCodedStream(&input) || !input.ConsumedEntireMessage())
    throw TraceError(file + ": not a clustersim trace (truncated or corrupt protobuf)");
  return trace;
}

pb::Trace read_trace_file(const std::string& path) {
  const InputFile file = read_input_file(path, kMaxTraceBytes, "trace");
  if (!file.ok()) throw TraceError(file.error);  // "<path>: cannot open (<the system's reason>)"
  return parse_trace(file.bytes, path);
}

void write_trace_file(const pb::Trace& trace, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !trace.SerializeToOstream(&out)) throw TraceError(path + ": cannot write");
  out.close();
  if (!out) throw TraceError(path + ": cannot write");
}

void retime_workload(exec::ExplicitWorkload& workload, const std::string& gpu) {
  const compute::KernelCostModel cost(compute::load_gpu_profile(gpu));
  for (auto& program : workload.programs)
    for (auto& op : program.ops) {
      if (op.kind != workload::OpKind::kCompute || op.kernel >= program.kernels.size()) continue;
      const auto& call = program.kernels[op.kernel];
      op.duration = cost.time(call.kernel, call.precision);
      // An explicit program's row holds its one rank's time: that of its own kernel.
      if (op.varies != UINT32_MAX) program.rank_times.at(op.varies).assign(1, op.duration);
    }
}

}  // namespace cs::trace
