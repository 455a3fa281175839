// The --set overrides that turn one run configuration into another: how `plan` prints each
// ranked layout as a command to run.
#pragma once

#include <string>
#include <vector>

#include "proto/config.pb.h"

namespace cs {

// "dotted.path=value" for every field, at any depth, whose value in `to` differs from `from`'s
// (a repeated field as its values joined by ','; an enum by name), in field-number order, so that
// applying them to `from` with apply_override gives `to`'s values. A field set in `from` and
// cleared in `to` is given its default value. resolved_stack, which preparing a step writes, is
// left out.
std::vector<std::string> override_diff(const clustersim::RunConfig& from,
                                       const clustersim::RunConfig& to);

}  // namespace cs
