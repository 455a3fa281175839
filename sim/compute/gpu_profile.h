// GPU profiles (peak throughput, memory, links, efficiencies) loaded from cited preset files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proto/gpu.pb.h"
#include "sim/compute/kernel.h"
#include "sim/config/config_error.h"
#include "sim/core/units.h"

namespace cs::compute {

// The profile is the schema message itself: one source of truth for fields and their docs.
using GpuProfile = clustersim::GpuProfile;

// Names (file stems) of the embedded profiles under topologies/gpus/, sorted.
std::vector<std::string> gpu_profile_names();

// `name_or_path` is a preset name ("h100") or a text-format file. Throws ConfigError listing the
// preset names when it is neither, "<file>:<line>:<column>: ..." on syntax errors and
// "<file>: <field> ..." on values that make no sense.
GpuProfile load_gpu_profile(const std::string& name_or_path);

// Parses and validates one profile; `source_name` labels errors.
GpuProfile load_gpu_profile_text(std::string_view text, const std::string& source_name);

// Throws ConfigError naming `source_name` and the field when `profile` is inconsistent.
void validate_gpu_profile(const GpuProfile& profile, const std::string& source_name);

// Peak dense FLOP/s that GEMMs of `precision` run at. FP8 on a GPU without FP8 tensor cores runs
// at the BF16 peak (the kernels fall back to BF16); MXFP8 at the FP8 peak, NVFP4 at the FP4 peak
// (runs on GPUs without them are refused: precision_formats.h).
double peak_flops(const GpuProfile& profile, Precision precision);

// Sustained over peak SM clock of dense tensor-core work at the power limit (ClockModel); 1 when
// the profile has no sustained-clock measurement.
double sustained_clock_ratio(const GpuProfile& profile);

// One output tile of a GEMM kernel: m x n elements per thread block.
struct GemmTile {
  int64_t m = 0, n = 0;
};
// The tiles a profile's GEMMs may run: gemm.tile_m x tile_n first, then gemm.more_tiles.
std::vector<GemmTile> gemm_tiles(const GpuProfile& profile);

// The host CPU's time per PyTorch op against the x86 servers the stacks' host figures come from.
inline double host_op_time_factor(const GpuProfile& profile) {
  return profile.host().has_host_op_time_factor() ? profile.host().host_op_time_factor() : 1.0;
}
// Whether the GPU has FP8 tensor cores.
inline bool has_fp8(const GpuProfile& profile) {
  return profile.peak_fp8_tflops() > 0;
}

inline Bandwidth hbm_bandwidth(const GpuProfile& profile) {
  return Bandwidth::bytes_per_s(profile.hbm_bandwidth_tbps() * 1e12);
}
// What streaming kernels actually get: peak x hbm_efficiency.
inline Bandwidth achievable_hbm_bandwidth(const GpuProfile& profile) {
  return Bandwidth::bytes_per_s(profile.hbm_bandwidth_tbps() * 1e12 * profile.hbm_efficiency());
}
inline Bytes hbm_capacity_bytes(const GpuProfile& profile) {
  return static_cast<Bytes>(profile.hbm_capacity_gb() * 1e9);
}
inline Bandwidth nvlink_bandwidth(const GpuProfile& profile) {
  return Bandwidth::gigabytes_per_s(profile.nvlink_bandwidth_gbytes());
}
inline Bandwidth nic_bandwidth(const GpuProfile& profile) {
  return Bandwidth::gigabits_per_s(profile.nic_bandwidth_gbits());
}

}  // namespace cs::compute
