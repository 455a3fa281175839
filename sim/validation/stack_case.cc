#include "sim/validation/stack_case.h"

#include <algorithm>
#include <vector>

#include "sim/compute/gpu_profile.h"
#include "sim/compute/kernel_cost.h"
#include "sim/compute/stack_kernel.h"
#include "sim/config/config_error.h"
#include "sim/config/field_checks.h"
#include "sim/config/stack_profile.h"

namespace cs::validation {

namespace {

using clustersim::StackKernel;

// Elements of `extent` over the case's rows, or ConfigError naming the kernel whose extent the
// case does not size.
double elements(const clustersim::StackKernelsCase& s, StackKernel::Extent extent,
                const StackKernel& row, const std::string& where) {
  const auto rows = static_cast<double>(s.rows());
  const auto sized = [&](int64_t width, const char* field) {
    if (width <= 0)
      config_fail(where, std::string("stack_kernels.") + field + " must be set: kernel \"" +
                             row.name() + "\" of stack " + s.stack() + " has extent " +
                             StackKernel::Extent_Name(extent));
    return rows * static_cast<double>(width);
  };
  switch (extent) {
    case StackKernel::HIDDEN:
      return sized(s.hidden(), "hidden");
    case StackKernel::FFN:
      return sized(s.ffn(), "ffn");
    case StackKernel::ROWS:
      return rows;
    case StackKernel::LOGITS:
      return sized(s.vocab(), "vocab");
    case StackKernel::NONE:
      return 0;
    default:
      break;
  }
  config_fail(where, "stack_kernels: kernel \"" + row.name() + "\" of stack " + s.stack() +
                         " has extent " + StackKernel::Extent_Name(extent) +
                         ", which a stack_kernels case does not size (HIDDEN, FFN, ROWS, LOGITS)");
}

// The profile's rows the case times: those in its slots, less the copies only grouped-query
// attention makes (a case has no attention).
std::vector<const StackKernel*> timed_rows(const clustersim::StackProfile& stack,
                                           const clustersim::StackKernelsCase& s) {
  std::vector<const StackKernel*> rows;
  for (const auto& row : stack.kernels()) {
    const bool in_slots =
        std::find(s.slots().begin(), s.slots().end(), row.slot()) != s.slots().end();
    if (in_slots && !row.gqa_only()) rows.push_back(&row);
  }
  return rows;
}

// The case's stack profile, or ConfigError naming the case's field.
clustersim::StackProfile case_stack(const clustersim::StackKernelsCase& s,
                                    const std::string& where) {
  try {
    return load_stack_profile(s.stack());
  } catch (const ConfigError& e) {
    config_fail(where, std::string("stack_kernels.stack: ") + e.what());
  }
}

}  // namespace

double stack_kernels_us(const clustersim::StackKernelsCase& s, const std::string& where) {
  const clustersim::StackProfile stack = case_stack(s, where);
  const compute::KernelCostModel model(compute::load_gpu_profile(s.gpu()));
  double us = 0;
  for (const StackKernel* row : timed_rows(stack, s)) {
    const double n = elements(s, row->extent(), *row, where);
    const double written =
        row->has_write_extent() ? elements(s, row->write_extent(), *row, where) : n;
    const compute::Kernel k =
        compute::stack_kernel(*row, row->name(), n, written, compute::KernelGroup::kOther);
    us += model.time(k, compute::Precision::kBf16).as_us();
  }
  return us;
}

void check_stack_kernels(const clustersim::StackKernelsCase& s, const std::string& where) {
  if (s.gpu().empty()) config_fail(where, "stack_kernels.gpu must be set, e.g. gpu: \"h200\"");
  if (s.stack().empty())
    config_fail(where, "stack_kernels.stack must be set, e.g. stack: \"deepspeed_zero\"");
  if (s.slots().empty()) config_fail(where, "stack_kernels.slots must name at least one slot");
  // Bounds that keep every kernel's time within the simulator's clock.
  const std::string why = "one GPU's tokens and widths";
  require_int_range(s.rows(), 1, 100'000'000, where, "stack_kernels.rows", why);
  require_int_range(s.hidden(), 0, 10'000'000, where, "stack_kernels.hidden", why);
  require_int_range(s.ffn(), 0, 10'000'000, where, "stack_kernels.ffn", why);
  require_int_range(s.vocab(), 0, 10'000'000, where, "stack_kernels.vocab", why);
  const clustersim::StackProfile stack = case_stack(s, where);
  const auto rows = timed_rows(stack, s);
  if (rows.empty())
    config_fail(where, "stack_kernels.slots: stack " + s.stack() + " lists no kernel there");
  for (const StackKernel* row : rows) {  // each extent the rows use is one the case sizes
    elements(s, row->extent(), *row, where);
    if (row->has_write_extent()) elements(s, row->write_extent(), *row, where);
  }
}

}  // namespace cs::validation
