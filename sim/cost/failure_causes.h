// The root causes of job interruptions that clustersim counts, and what each is counted per.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace cs::cost {

// What a component's rate is counted per (proto/config.proto: per_gpu_day, per_server_day,
// per_nic_day).
enum class FailureUnit : uint8_t { kGpu, kServer, kNic };

struct FailureCause {
  FailureUnit unit;
  std::string_view name;  // the field in that unit's rates message, and the report's key
};

// Every cause of proto/config.proto's three rates messages, in their field order.
inline constexpr std::array<FailureCause, 18> kFailureCauses = {{
    {FailureUnit::kGpu, "faulty_gpu"},
    {FailureUnit::kGpu, "hbm"},
    {FailureUnit::kGpu, "sram"},
    {FailureUnit::kGpu, "system_processor"},
    {FailureUnit::kGpu, "silent_data_corruption"},
    {FailureUnit::kGpu, "thermal"},
    {FailureUnit::kGpu, "software_bug"},
    {FailureUnit::kGpu, "dependency"},
    {FailureUnit::kGpu, "nccl_watchdog"},
    {FailureUnit::kServer, "host_maintenance"},
    {FailureUnit::kServer, "ssd"},
    {FailureUnit::kServer, "power_supply"},
    {FailureUnit::kServer, "chassis"},
    {FailureUnit::kServer, "io_expansion_board"},
    {FailureUnit::kServer, "cpu"},
    {FailureUnit::kServer, "system_memory"},
    {FailureUnit::kNic, "network_switch_cable"},
    {FailureUnit::kNic, "nic"},
}};
inline constexpr std::size_t kNumFailureCauses = kFailureCauses.size();

}  // namespace cs::cost
