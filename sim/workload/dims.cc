#include "sim/workload/dims.h"

namespace cs::workload {

static_assert(
    [] {
      for (int d = 0; d < kNumDims; ++d)
        if (static_cast<int>(kDims[static_cast<std::size_t>(d)].dim) != d) return false;
      return true;
    }(),
    "kDims lists the dimensions in Dim order");

std::string dims_text(const DimSizes& sizes, std::string_view separator) {
  std::string text;
  const bool experts = sizes[static_cast<std::size_t>(Dim::kEp)] > 1;
  for (const DimInfo& d : kDims) {
    if (d.expert && !experts) continue;
    if (!text.empty()) text += separator;
    text += std::string(d.label) + " " + std::to_string(sizes[static_cast<std::size_t>(d.dim)]);
  }
  return text;
}

}  // namespace cs::workload
