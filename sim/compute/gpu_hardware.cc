#include "sim/compute/gpu_hardware.h"

namespace cs::compute {

std::string_view default_gpu() {
  return "h100";
}

std::string gpu_or_default(const std::string& configured) {
  return configured.empty() ? std::string(default_gpu()) : configured;
}

coll::NcclHardware nccl_hardware(const GpuProfile& profile) {
  coll::NcclHardware hw;
  hw.arch = coll::parse_gpu_arch(profile.architecture());
  hw.nvlinks = profile.nvlinks();
  hw.nvlink_gbps = profile.nvlink_bandwidth_gbytes();
  hw.nic_gbps = profile.nic_bandwidth_gbits() / 8.0;  // Gb/s to GB/s
  hw.nvlink_copy_efficiency = profile.nvlink_copy_efficiency();
  hw.kernel_launch_us = profile.kernel_launch_overhead_us();
  return hw;
}

coll::NcclTuning nccl_tuning(const std::string& gpu, coll::NcclSettings settings) {
  if (gpu.empty()) return coll::NcclTuning(std::nullopt, settings);
  return coll::NcclTuning(nccl_hardware(load_gpu_profile(gpu)), settings);
}

coll::NcclTuning nccl_tuning(const net::Topology& topology, coll::NcclSettings settings) {
  if (topology.gpu_type.empty()) return coll::NcclTuning(std::nullopt, settings);
  coll::NcclHardware hw = nccl_hardware(load_gpu_profile(topology.gpu_type));
  hw.nvswitch = topology.has_nvswitch();
  hw.pairs_per_nic = topology.nccl_pairs_per_nic;
  hw.ll128_between_servers = !topology.nic_behind_cpu;
  hw.net_efficiency = topology.nic_transport_efficiency;
  if (topology.nic_gbits > 0) hw.nic_gbps = topology.nic_gbits / 8.0;  // Gb/s to GB/s
  // A GPU's NVLink as the links carry it (in a mesh the figure is a pair's: the profile's stands).
  if (hw.nvswitch && topology.nvlink_gbytes > 0) hw.nvlink_gbps = topology.nvlink_gbytes;
  return coll::NcclTuning(hw, settings);
}

}  // namespace cs::compute
