// Software stack profiles (stacks/*.textproto, proto/stack.proto): loading by name or path with
// based_on, laying one profile's fields over another's, and the checks every profile passes.
#pragma once

#include <string>
#include <vector>

#include "proto/stack.pb.h"

namespace cs {

using StackProfile = clustersim::StackProfile;

// Names (file stems) of the embedded profiles under stacks/, sorted.
std::vector<std::string> stack_profile_names();

// `name_or_path` is a profile name ("pytorch_fsdp2") or a text-format file; its based_on chain is
// laid under it (overlay_stack_profile) and the result validated. Throws ConfigError naming the
// file (and field) on an unknown name, a syntax error, a based_on cycle or a bad value.
StackProfile load_stack_profile(const std::string& name_or_path);

// The name of `stack`'s default profile: the embedded file with default_variant. Throws
// ConfigError when there is none.
std::string default_stack_profile(clustersim::SoftwareStack stack);

// Lays the fields set in `top` over `base`: singular fields replace, sub-messages merge field by
// field, kernels and compiled_kernels replace `base`'s rows slot by slot (a slot `top` lists is
// wholly `top`'s) and `top`'s removed_slots drop `base`'s rows, limits replace `base`'s limit on
// the same field, sources add.
void overlay_stack_profile(StackProfile& base, const StackProfile& top);

// `kernels` with the slots `replacement` lists taken from it (torch.compile's kernels over eager).
void replace_kernel_slots(
    google::protobuf::RepeatedPtrField<clustersim::StackKernel>& kernels,
    const google::protobuf::RepeatedPtrField<clustersim::StackKernel>& replacement);

// Throws ConfigError "<source>: <field> ..." when a profile is inconsistent: no name or stack, a
// kernel without slot, name or extent or with negative bytes, a prefetch below 0, a bucket of no
// parameters, a limit on a field RunConfig does not have or with no allowed value or reason.
void validate_stack_profile(const StackProfile& profile, const std::string& source);
// ConfigError "<source>: <prefix>host_us_per_kernel must be in [0, 1e+06] ..." for a host figure
// that is negative, not finite or beyond a second a launch.
void check_host_figures(const StackProfile& profile, const std::string& source,
                        const std::string& prefix);

}  // namespace cs
