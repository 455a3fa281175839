#include "sim/workload/stack.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <unordered_set>

#include "sim/config/config_error.h"
#include "sim/config/field_override.h"
#include "sim/config/stack_profile.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/schedules/registry.h"

namespace cs::workload {

namespace {

using clustersim::RunConfig;
using clustersim::StackProfile;

// The StackProfile fields each effects.stack_* switch covers; off, they are Megatron-TE's. The
// kernel rows split by slot: the copies around gathers and reductions go with the sharding.
// The host's launch of each kernel goes with the kernels, its sharding hooks with the sharding.
constexpr std::string_view kKernelFields[] = {"fused_qkv", "fused_gate_up", "ddp_grad_buffer",
                                              "host_us_per_kernel"};
constexpr std::string_view kAttentionFields[] = {"attention"};
constexpr std::string_view kShardingFields[] = {"gather", "reduce", "param_sync",
                                                "host_us_per_layer_pass"};

template <std::size_t N>
void take_fields(StackProfile& to, const StackProfile& from, const std::string_view (&names)[N]) {
  using google::protobuf::FieldDescriptor;
  const auto* d = StackProfile::descriptor();
  const auto* r = StackProfile::GetReflection();
  for (const auto name : names) {
    const FieldDescriptor* f = d->FindFieldByName(std::string(name));
    r->ClearField(&to, f);
    if (f->is_repeated()) {
      for (int i = 0; i < r->FieldSize(from, f); ++i)
        r->AddMessage(&to, f)->CopyFrom(r->GetRepeatedMessage(from, f, i));
    } else if (!r->HasField(from, f)) {
      continue;
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      r->MutableMessage(&to, f)->CopyFrom(r->GetMessage(from, f));
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {
      r->SetEnum(&to, f, r->GetEnum(from, f));
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
      r->SetDouble(&to, f, r->GetDouble(from, f));
    } else {
      r->SetBool(&to, f, r->GetBool(from, f));  // the other covered scalars are bools
    }
  }
}

bool sharding_slot(clustersim::StackKernel::Slot slot) {
  switch (slot) {
    case clustersim::StackKernel::GATHER_PROLOGUE:
    case clustersim::StackKernel::GATHER_EPILOGUE:
    case clustersim::StackKernel::REDUCE_PROLOGUE:
    case clustersim::StackKernel::REDUCE_EPILOGUE:
    case clustersim::StackKernel::PARAM_SYNC_PROLOGUE:
      return true;
    default:
      return false;
  }
}

// Drops the kernel rows of the sharding slots (`sharding`) or of the others: Megatron-TE lists
// none.
void drop_rows(StackProfile& p, bool sharding) {
  google::protobuf::RepeatedPtrField<clustersim::StackKernel> kept;
  for (const auto& k : p.kernels())
    if (sharding_slot(k.slot()) != sharding) *kept.Add() = k;
  p.mutable_kernels()->Swap(&kept);
}

std::string profile_file(const RunConfig& config) {
  const std::string& v = config.stack_variant();
  if (!v.empty()) return v;
  return default_stack_profile(config.software_stack());
}

// The profile `config` names, an error in finding or reading it prefixed with the source (where
// known) and the field that named it: the loader knows the name only.
StackProfile named_profile(const RunConfig& config, const std::string& source = "") {
  try {
    return load_stack_profile(profile_file(config));
  } catch (const ConfigError& e) {
    const char* field = config.stack_variant().empty() ? "software_stack" : "stack_variant";
    throw ConfigError((source.empty() ? "" : source + ": ") + field + ": " + e.what());
  }
}

bool allows(const clustersim::StackLimit& limit, const std::string& value) {
  return std::find(limit.allowed().begin(), limit.allowed().end(), value) != limit.allowed().end();
}

// `config` as it runs: sequence parallelism without tensor parallelism is off
// (layout_config.h sequence_parallel_on; Megatron-LM's arguments.py turns it off at TP 1 too), so
// a stack's limit on it does not refuse a preset's flag left on at TP 1.
RunConfig as_run(const RunConfig& config) {
  RunConfig c = config;
  c.mutable_parallel()->set_sequence_parallel(sequence_parallel_on(config.parallel()));
  return c;
}

// The first of the profile's limits that `config` (as_run) breaks, or null.
const clustersim::StackLimit* broken_limit(const RunConfig& config, const StackProfile& p) {
  for (const auto& limit : p.limits())
    if (!allows(limit, field_text(config, limit.field()))) return &limit;
  return nullptr;
}

void check_limits(const RunConfig& given, const StackProfile& p, const std::string& source) {
  const RunConfig config = as_run(given);
  if (const clustersim::StackLimit* broken = broken_limit(config, p)) {
    const clustersim::StackLimit& limit = *broken;
    const std::string value = field_text(config, limit.field());
    std::string allowed;
    for (const auto& a : limit.allowed())
      allowed += (allowed.empty() ? "" : ", ") + (a.empty() ? std::string("\"\"") : a);
    throw ConfigError(
        source + ": software_stack " + clustersim::SoftwareStack_Name(config.software_stack()) +
        " (stacks/" + p.name() + ".textproto) cannot run " + limit.field() + " = " +
        (value.empty() ? "\"\"" : value) + " (allowed: " + allowed + "): " + limit.reason());
  }
}

// A profile with its own ZeRO-3 rules is lowered by sim/lower/sharded_pass.h, for one pipeline
// stage of dense layers without tensor or context parallelism; a profile overridden into such
// rules on another layout is refused here rather than lowered wrongly.
void check_sharded_pass(const RunConfig& config, const StackProfile& p, const std::string& source) {
  const auto& par = config.parallel();
  if (par.zero_stage() != 3 || !custom_sharding(p)) return;
  std::string why;
  if (par.tp() != 1 || par.cp() != 1 || par.pp() != 1) {
    why = "parallel.tp, cp and pp above 1";
  } else if (config.model().has_moe() || config.model().mtp_layers() > 0) {
    why = "model.moe or model.mtp_layers";
  } else if (par.checkpoint_every_k_layers() > 0) {
    why = "parallel.checkpoint_every_k_layers";
  } else if (schedule_info(par.schedule()).splits_backward) {
    why = "a split-backward parallel.schedule";
  }
  if (!why.empty()) {
    throw ConfigError(source + ": stacks/" + p.name() +
                      ".textproto's own ZeRO-3 gathers and reductions (gather, reduce) are lowered "
                      "for one pipeline stage of dense layers, not with " +
                      why);
  }
}

}  // namespace

void resolve_stack(RunConfig& config, const std::string& source) {
  StackProfile p = named_profile(config, source);
  if (p.stack() != config.software_stack()) {
    throw ConfigError(source + ": stack_variant '" + config.stack_variant() + "' is a " +
                      clustersim::SoftwareStack_Name(p.stack()) +
                      " profile but software_stack is " +
                      clustersim::SoftwareStack_Name(config.software_stack()));
  }
  check_host_figures(config.stack_profile(), source, "stack_profile.");
  overlay_stack_profile(p, config.stack_profile());
  if (config.torch_compile()) {
    if (p.compiled_kernels_size() == 0) {
      throw ConfigError(source + ": torch_compile: stacks/" + p.name() + ".textproto" +
                        " lists no compiled_kernels, so this stack cannot run compiled");
    }
    replace_kernel_slots(*p.mutable_kernels(), p.compiled_kernels());
    if (p.has_compiled_host_us_per_kernel())
      p.set_host_us_per_kernel(p.compiled_host_us_per_kernel());
  }
  p.clear_compiled_kernels();
  p.clear_compiled_host_us_per_kernel();
  const auto& e = config.effects();
  if (!e.stack_kernels() || !e.stack_attention() || !e.stack_sharding()) {
    const StackProfile megatron =
        load_stack_profile(default_stack_profile(clustersim::MEGATRON_TE));
    if (!e.stack_kernels()) {
      take_fields(p, megatron, kKernelFields);
      drop_rows(p, false);
    }
    if (!e.stack_attention()) take_fields(p, megatron, kAttentionFields);
    if (!e.stack_sharding()) {
      take_fields(p, megatron, kShardingFields);
      drop_rows(p, true);
    }
  }
  check_limits(config, p, source);
  check_sharded_pass(config, p, source);
  *config.mutable_resolved_stack() = std::move(p);
}

const clustersim::StackProfile& stack_of(const RunConfig& config) {
  if (config.has_resolved_stack()) return config.resolved_stack();
  if (config.software_stack() != clustersim::MEGATRON_TE)
    throw std::logic_error("software_stack " +
                           clustersim::SoftwareStack_Name(config.software_stack()) +
                           " used before resolve_stack");
  return clustersim::StackProfile::default_instance();
}

bool stack_allows(const RunConfig& config, const std::string& field, const std::string& value) {
  StackProfile p = named_profile(config);
  overlay_stack_profile(p, config.stack_profile());
  for (const auto& limit : p.limits())
    if (limit.field() == field && !allows(limit, value)) return false;
  return true;
}

bool stack_runs(const RunConfig& config) {
  return broken_limit(as_run(config), stack_of(config)) == nullptr;
}

std::string stack_label(const RunConfig& config) {
  std::string label = clustersim::SoftwareStack_Name(config.software_stack());
  if (config.software_stack() == clustersim::MEGATRON_TE && !config.torch_compile() &&
      config.stack_variant().empty())
    return label;
  const std::string name =
      config.has_resolved_stack() ? config.resolved_stack().name() : config.stack_variant();
  label += " (" + name;
  if (config.torch_compile()) label += ", torch.compile";
  return label + ")";
}

bool custom_sharding(const StackProfile& p) {
  using google::protobuf::util::MessageDifferencer;
  if (!MessageDifferencer::Equivalent(p.gather(), clustersim::WeightGather())) return true;
  if (p.reduce().when() != clustersim::GradReduce::BUCKETS || p.reduce().in_issue_order())
    return true;
  return false;
}

std::string_view intern_kernel_name(std::string_view name) {
  static std::mutex mutex;
  static std::unordered_set<std::string> names;  // node-based: views stay valid
  const std::lock_guard<std::mutex> lock(mutex);
  return *names.emplace(name).first;
}

}  // namespace cs::workload
