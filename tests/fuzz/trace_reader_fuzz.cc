// libFuzzer target: our trace reader on arbitrary bytes must throw TraceError or succeed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/trace/trace_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto trace =
        cs::trace::parse_trace(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    cs::trace::from_trace(trace, "fuzz");
  } catch (const cs::trace::TraceError&) {
  }
  return 0;
}
