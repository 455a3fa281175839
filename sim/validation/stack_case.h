// Model value of a stack_kernels case: a software stack's listed kernels in some layer slots,
// timed by the kernel cost model as a run times them.
#pragma once

#include <string>

#include "proto/validation.pb.h"

namespace cs::validation {

// The slots' kernels in µs, launches included, of a case check_stack_kernels passed. Throws
// ConfigError "<where>: ..." for an unknown GPU or stack profile.
double stack_kernels_us(const clustersim::StackKernelsCase& s, const std::string& where);

// Field checks, throwing ConfigError "<where>: stack_kernels.<field> ...": an unknown stack, a
// slot it lists no kernel in, a kernel whose extent the case does not size.
void check_stack_kernels(const clustersim::StackKernelsCase& s, const std::string& where);

}  // namespace cs::validation
