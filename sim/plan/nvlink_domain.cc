#include "sim/plan/nvlink_domain.h"

#include <vector>

#include "sim/workload/dims.h"
#include "sim/workload/layout.h"
#include "sim/workload/layout_config.h"

namespace cs::plan {

namespace {

// Whether every group of dimension `d` lies inside one domain: each rank is visited once, in the
// group it belongs to.
bool all_inside_domains(const workload::Layout& layout, workload::Dim d, int32_t gpus_per_node) {
  std::vector<bool> seen(static_cast<std::size_t>(layout.world()));
  for (int32_t rank = 0; rank < layout.world(); ++rank) {
    if (seen[static_cast<std::size_t>(rank)]) continue;
    for (const int32_t r : layout.group_members(rank, d)) {
      seen[static_cast<std::size_t>(r)] = true;
      if (r / gpus_per_node != rank / gpus_per_node) return false;
    }
  }
  return true;
}

}  // namespace

std::string nvlink_domain_line(const clustersim::RunConfig& config, int32_t gpus_per_node) {
  if (gpus_per_node <= kServerGpus) return "";
  const workload::Layout layout = workload::layout_of(config.parallel());
  std::string inside, across;
  for (const workload::DimInfo& d : workload::kDims) {
    // Data, expert-data and pipeline groups are meant to cross domains; what a rack adds is room
    // for the groups that talk every layer.
    if (d.dim == workload::Dim::kDp || d.dim == workload::Dim::kPp || d.dim == workload::Dim::kEdp)
      continue;
    const auto size = layout.group_members(0, d.dim).size();
    if (static_cast<int32_t>(size) <= kServerGpus) continue;
    std::string& list = all_inside_domains(layout, d.dim, gpus_per_node) ? inside : across;
    list += (list.empty() ? "" : ", ") + std::string(d.label) + " " + std::to_string(size);
  }
  std::string line;
  const std::string domain = std::to_string(gpus_per_node) + "-GPU NVLink domain";
  if (!inside.empty())
    line = inside + " inside one " + domain + " (more GPUs than an 8-GPU server): " +
           "its collectives ride NVLink rather than the NICs";
  if (!across.empty())
    line += (line.empty() ? "" : "; ") + across + " straddles " + domain + "s (crosses the NICs)";
  return line;
}

}  // namespace cs::plan
