// Shared by the trace tests: a workload trace taken through its bytes, as a file would carry it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "sim/trace/trace_format.h"

namespace cs::testing_support {

// Serializes `t` and loads it back under the file name "mem.pb".
inline trace::LoadedTrace round_trip(const clustersim::trace::Trace& t) {
  std::string bytes;
  EXPECT_TRUE(t.SerializeToString(&bytes));
  return trace::from_trace(trace::parse_trace(bytes, "mem.pb"), "mem.pb");
}

}  // namespace cs::testing_support
