// The last check of a step report before anything prints or writes it: every figure a number that
// can be true (finite, times and money not negative, MFU a fraction of the peak).
#pragma once

#include <stdexcept>

#include "sim/report/step_report.h"

namespace cs::report {

// A figure the simulator computed that cannot be true: a bug in the simulator, not in the input
// (inputs are refused earlier with a ConfigError naming their field). The message names the
// report field and never prints the figure as if it were a result.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Throws InternalError naming the first field that is NaN, infinite, negative where it is a time,
// a size, a count or money, or outside [0, 1] where it is a fraction (MFU, HFU, bubbles, goodput).
void check_report(const StepReport& r);

}  // namespace cs::report
