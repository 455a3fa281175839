// What a GPU profile tells the rest of the simulator about the machine around the compute: the
// default GPU, NCCL's view of the GPU and its server.
#pragma once

#include <string>
#include <string_view>

#include "sim/coll/nccl_plan.h"
#include "sim/compute/gpu_profile.h"
#include "sim/net/topology.h"

namespace cs::compute {

// The GPU a configuration that names none (no cluster.gpu, no topology) runs on: "h100".
std::string_view default_gpu();
// `configured` when it is set, else default_gpu().
std::string gpu_or_default(const std::string& configured);

// NCCL's view of the profile's GPU: its architecture, NVLinks and NIC bandwidth (GB/s).
coll::NcclHardware nccl_hardware(const GpuProfile& profile);

// NCCL tuning for a GPU named by preset or file (a topology's gpu_type). Throws ConfigError
// listing the profiles for an unknown one. "" (topologies built in code without a GPU type) has
// no NCCL data: plans keep the ideal wire and the size rule.
coll::NcclTuning nccl_tuning(const std::string& gpu, coll::NcclSettings settings = {});

// The same for the GPUs of a built topology, with its servers' parts: whether NVSwitches join the
// GPUs (no NVLS without them) and the NICs' speed (the GPU profile's only where it gives none).
coll::NcclTuning nccl_tuning(const net::Topology& topology, coll::NcclSettings settings = {});

}  // namespace cs::compute
