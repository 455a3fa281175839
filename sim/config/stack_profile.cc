#include "sim/config/stack_profile.h"

#include <algorithm>
#include <optional>
#include <set>

#include "proto/config.pb.h"
#include "sim/config/embedded_presets.h"
#include "sim/config/field_checks.h"
#include "sim/config/field_override.h"
#include "sim/config/text_proto.h"

namespace cs {

namespace {

constexpr std::string_view kFolder = "stacks";
using Kernels = google::protobuf::RepeatedPtrField<clustersim::StackKernel>;

std::optional<PresetText> find_profile(const std::string& name_or_path) {
  return find_preset_or_file(kFolder, name_or_path);
}

std::string unknown_profile(const std::string& name_or_path) {
  return "unknown stack profile '" + name_or_path + "': neither a profile (" +
         preset_list(kFolder) + ") nor a readable file";
}

// Parses `text` and lays it over its based_on chain; `chain` holds the labels on the way down.
StackProfile parse_with_bases(const PresetText& source, std::vector<std::string>& chain) {
  StackProfile own;
  parse_text_proto(source.text, source.label, &own);
  if (!own.has_based_on()) return own;
  const auto base = find_profile(own.based_on());
  if (!base) config_fail(source.label, "based_on: " + unknown_profile(own.based_on()));
  chain.push_back(source.label);
  if (std::find(chain.begin(), chain.end(), base->label) != chain.end()) {
    std::string cycle;
    for (const auto& link : chain) cycle += link + " -> ";
    config_fail(source.label,
                "based_on: profiles base themselves on each other: " + cycle + base->label);
  }
  StackProfile merged = parse_with_bases(*base, chain);
  own.clear_based_on();
  overlay_stack_profile(merged, own);
  merged.clear_default_variant();  // a variant is not its base's default
  if (own.has_default_variant()) merged.set_default_variant(own.default_variant());
  return merged;
}

void replace_limits(google::protobuf::RepeatedPtrField<clustersim::StackLimit>& limits,
                    const google::protobuf::RepeatedPtrField<clustersim::StackLimit>& top) {
  for (const auto& limit : top) {
    auto same = std::find_if(limits.begin(), limits.end(),
                             [&](const auto& l) { return l.field() == limit.field(); });
    if (same != limits.end()) {
      *same = limit;
    } else {
      *limits.Add() = limit;
    }
  }
}

void check_kernel(const clustersim::StackKernel& k, const std::string& source,
                  const std::string& where) {
  if (!k.has_slot()) config_fail(source, where + ".slot must be set");
  if (k.name().empty()) config_fail(source, where + ".name must be set");
  if (!k.has_extent()) config_fail(source, where + " (" + k.name() + "): extent must be set");
  require_non_negative(k.read_bytes(), source, where + ".read_bytes");
  require_non_negative(k.write_bytes(), source, where + ".write_bytes");
  require_non_negative(k.flops(), source, where + ".flops");
}

void check_limit(const clustersim::StackLimit& limit, const std::string& source,
                 const std::string& where) {
  if (limit.field().empty()) config_fail(source, where + ".field must be set");
  try {
    (void)field_text(clustersim::RunConfig(), limit.field());
  } catch (const ConfigError& e) {
    config_fail(source, where + ".field: " + e.what());
  }
  if (limit.allowed_size() == 0)
    config_fail(source, where + " (" + limit.field() + "): no allowed value");
  if (limit.reason().empty())
    config_fail(source, where + " (" + limit.field() + "): reason must be set");
}

}  // namespace

std::vector<std::string> stack_profile_names() {
  return preset_names(kFolder);
}

void replace_kernel_slots(Kernels& kernels, const Kernels& replacement) {
  std::set<int> slots;
  for (const auto& k : replacement) slots.insert(k.slot());
  Kernels kept;
  for (const auto& k : kernels)
    if (!slots.count(k.slot())) *kept.Add() = k;
  for (const auto& k : replacement) *kept.Add() = k;
  kernels.Swap(&kept);
}

void overlay_stack_profile(StackProfile& base, const StackProfile& top) {
  StackProfile scalars = top;
  scalars.clear_kernels();
  scalars.clear_compiled_kernels();
  scalars.clear_limits();
  scalars.clear_removed_slots();
  base.MergeFrom(scalars);
  replace_kernel_slots(*base.mutable_kernels(), top.kernels());
  const std::set<int> removed(top.removed_slots().begin(), top.removed_slots().end());
  Kernels kept;
  for (const auto& k : base.kernels())
    if (!removed.count(k.slot())) *kept.Add() = k;
  base.mutable_kernels()->Swap(&kept);
  replace_kernel_slots(*base.mutable_compiled_kernels(), top.compiled_kernels());
  replace_limits(*base.mutable_limits(), top.limits());
}

namespace {

StackProfile parse_and_validate(const std::string& name_or_path) {
  const auto source = find_profile(name_or_path);
  if (!source) throw ConfigError(unknown_profile(name_or_path));
  std::vector<std::string> chain;
  StackProfile profile = parse_with_bases(*source, chain);
  validate_stack_profile(profile, source->label);
  return profile;
}

// An embedded profile, parsed once (parsed_preset); nullptr for a file.
const StackProfile* embedded_profile(const std::string& name) {
  return parsed_preset<StackProfile>(kFolder, name,
                                     [&](const EmbeddedFile&) { return parse_and_validate(name); });
}

}  // namespace

StackProfile load_stack_profile(const std::string& name_or_path) {
  if (const StackProfile* p = embedded_profile(name_or_path)) return *p;
  return parse_and_validate(name_or_path);
}

std::string default_stack_profile(clustersim::SoftwareStack stack) {
  for (const auto& name : stack_profile_names()) {
    const StackProfile* p = embedded_profile(name);
    if (p->stack() == stack && p->default_variant()) return name;
  }
  throw ConfigError("no stack profile under stacks/ has stack: " +
                    clustersim::SoftwareStack_Name(stack) + " and default_variant: true");
}

void check_host_figures(const StackProfile& p, const std::string& src, const std::string& prefix) {
  const std::string why = "microseconds of host time to launch one kernel";
  require_range(p.host_us_per_kernel(), 0, 1e6, src, prefix + "host_us_per_kernel", why);
  require_range(p.compiled_host_us_per_kernel(), 0, 1e6, src,
                prefix + "compiled_host_us_per_kernel", why);
  require_range(p.host_us_per_layer_pass(), 0, 1e6, src, prefix + "host_us_per_layer_pass",
                "microseconds of host time as a layer's forward or backward begins");
}

void validate_stack_profile(const StackProfile& p, const std::string& src) {
  if (p.name().empty()) config_fail(src, "name must be set, e.g. name: \"pytorch_fsdp2\"");
  if (!p.has_stack())
    config_fail(src, "stack must be set (MEGATRON_TE, PYTORCH_FSDP, DEEPSPEED_ZERO)");
  check_host_figures(p, src, "");
  for (int i = 0; i < p.kernels_size(); ++i)
    check_kernel(p.kernels(i), src, "kernels[" + std::to_string(i) + "]");
  for (int i = 0; i < p.compiled_kernels_size(); ++i)
    check_kernel(p.compiled_kernels(i), src, "compiled_kernels[" + std::to_string(i) + "]");
  const auto& g = p.gather();
  if (g.forward_prefetch_units() < 0 || g.backward_prefetch_units() < 0)
    config_fail(src, "gather.forward_prefetch_units and backward_prefetch_units must be >= 0");
  if (g.prefetch_params() < 0) config_fail(src, "gather.prefetch_params must be >= 0");
  if (g.max_reuse_params() < 0 || g.max_live_params() < 0)
    config_fail(src, "gather.max_reuse_params and max_live_params must be >= 0");
  if (p.reduce().has_bucket_params() && p.reduce().bucket_params() <= 0)
    config_fail(src, "reduce.bucket_params = " + std::to_string(p.reduce().bucket_params()) +
                         " must be positive");
  for (int i = 0; i < p.limits_size(); ++i)
    check_limit(p.limits(i), src, "limits[" + std::to_string(i) + "]");
}

}  // namespace cs
