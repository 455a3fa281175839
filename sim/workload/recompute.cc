#include "sim/workload/recompute.h"

#include <array>
#include <stdexcept>

namespace cs::workload {

namespace {

using clustersim::ParallelConfig;

// From keeping every activation to keeping only each layer's input: the order the planner tries
// them in and the memory report lists them.
constexpr std::array kModes{
    RecomputeInfo{ParallelConfig::NONE, "none", ""},
    RecomputeInfo{ParallelConfig::SELECTIVE, "selective", "sel. recompute"},
    RecomputeInfo{ParallelConfig::OP_SELECTIVE, "op selective", "op-sel. recompute"},
    RecomputeInfo{ParallelConfig::FULL, "full", "full recompute"},
};

}  // namespace

std::span<const RecomputeInfo> recompute_modes() {
  return kModes;
}

const RecomputeInfo& recompute_info(ParallelConfig::Recompute mode) {
  for (const RecomputeInfo& m : kModes)
    if (m.mode == mode) return m;
  throw std::invalid_argument("no recompute entry for ParallelConfig.Recompute " +
                              std::to_string(static_cast<int>(mode)));
}

std::string recompute_label(const ParallelConfig& p) {
  std::string s(recompute_info(p.recompute()).label);
  if (p.checkpoint_every_k_layers() > 0)
    s += (s.empty() ? "" : ", ") + std::string("checkpoint every ") +
         std::to_string(p.checkpoint_every_k_layers()) + " layers";
  return s;
}

}  // namespace cs::workload
