// Which parallel groups of a layout fill more of an NVLink domain than an 8-GPU server holds (TP
// 16 or EP 64 inside a 72-GPU NVL72 rack), for the planner to say why such a layout wins.
#pragma once

#include <cstdint>
#include <string>

#include "proto/config.pb.h"

namespace cs::plan {

// GPUs of the NVLink domain of a DGX / HGX server: what a group may fill without multi-node NVLink.
inline constexpr int32_t kServerGpus = 8;

// One line naming the parallel dimensions (TP, CP, EP, ...) whose groups have more than
// kServerGpus members and each lie inside one NVLink domain of `gpus_per_node` GPUs (their
// collectives ride NVLink, not the NICs), and those some of whose groups straddle domains; empty
// when every group fits in a server or the domain is a server's.
std::string nvlink_domain_line(const clustersim::RunConfig& config, int32_t gpus_per_node);

}  // namespace cs::plan
