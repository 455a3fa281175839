// The error every configuration reader throws: one message naming the file, place and problem.
#pragma once

#include <stdexcept>

namespace cs {

// Messages read "<file>:<line>:<column>: <reason>" for syntax errors and "<file>: <field> ..." for
// values that parse but make no sense, so a user can jump straight to the offending line.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace cs
