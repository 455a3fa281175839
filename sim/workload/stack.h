// A run's software stack: the profile its lowering reads (resolved from software_stack,
// stack_variant, torch_compile, stack_profile and effects.stack_*), and its refusals.
#pragma once

#include <string>
#include <string_view>

#include "proto/config.pb.h"

namespace cs::workload {

// Writes config.resolved_stack: the profile stack_variant names (the stack's default when
// empty), stack_profile's fields over it, torch_compile's kernels over the eager ones, and for
// each effects.stack_* switched off that part taken from stacks/megatron_te.textproto. Then
// refuses what the stack cannot run: ConfigError "<source>: software_stack X (<profile file>)
// cannot run <field> = <value> (allowed: ...): <reason>". The same config always resolves to the
// same profile, so resolving twice changes nothing.
void resolve_stack(clustersim::RunConfig& config, const std::string& source);

// The profile the lowering reads: resolved_stack; a MEGATRON_TE config never resolved reads the
// proto defaults, which are Megatron-TE's lowering. Throws std::logic_error for another stack
// that was not resolved (a caller skipped resolve_stack).
const clustersim::StackProfile& stack_of(const clustersim::RunConfig& config);

// Whether the profile stack_of reads runs `config` (none of its limits broken): what a planner
// or report asks before offering a variant of a resolved config.
bool stack_runs(const clustersim::RunConfig& config);
// Whether the profile `config` names (its software_stack or stack_variant, with its
// stack_profile overrides) lets `field` take `value`, before the config is resolved: what a
// search asks of a choice it is about to try. Throws ConfigError for an unknown profile.
bool stack_allows(const clustersim::RunConfig& config, const std::string& field,
                  const std::string& value);

// "MEGATRON_TE", "PYTORCH_FSDP (pytorch_fsdp2, torch.compile)": what the report names.
std::string stack_label(const clustersim::RunConfig& config);

// The stack's weight gathers and gradient reductions differ from Megatron-TE's lowering (so the
// ZeRO-3 pass is built unit by unit, sim/lower/sharded_pass.h).
bool custom_sharding(const clustersim::StackProfile& profile);

// A kernel name from a profile, kept for the life of the process: Kernel::name is a view, and
// programs outlive the config they were built from.
std::string_view intern_kernel_name(std::string_view name);

}  // namespace cs::workload
