// Host-side figures of a GPU type's usual server (RAM, NVMe, PCIe, CPU memory bandwidth) and its
// rental price, from its profile with the run config's overrides applied: what offload and cost
// estimates need, shared by run (the step's offload ops and cost) and plan (memory fit, layout
// ranking).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "proto/config.pb.h"
#include "sim/compute/gpu_profile.h"
#include "sim/cost/failure_causes.h"

namespace cs::cost {

// One server's host resources, per node unless marked per GPU.
struct HostFigures {
  int32_t gpus_per_node = 8;
  double host_memory_bytes = 0;
  double nvme_capacity_bytes = 0;
  double pcie_bytes_per_s = 0;         // per GPU, per direction
  double nvme_bytes_per_s = 0;         // per node
  double host_memory_bytes_per_s = 0;  // per node, peak DRAM bandwidth
  // Fraction of peak DRAM bandwidth a streaming CPU Adam reaches.
  double cpu_adam_efficiency = 0.75;

  double host_memory_per_gpu() const { return host_memory_bytes / gpus_per_node; }
  double nvme_per_gpu() const { return nvme_capacity_bytes / gpus_per_node; }
};

// The figures of the GPU profile's `host`, with every field set in config.offload() replacing
// its default.
HostFigures host_figures(const compute::GpuProfile& gpu,
                         const clustersim::OffloadConfig& offload = {});
// Throws ConfigError naming `source` and the field for a node figure that is set but not a
// positive finite number in its range (an unset one takes the server's default).
void validate_offload(const clustersim::OffloadConfig& offload, const std::string& source);

// Bytes of host DRAM traffic per parameter of one CPU Adam step: read fp32 master, m, v (12) and
// the bf16 gradient (2); write master, m, v (12) and the bf16 weights sent back (2).
inline constexpr double kCpuAdamBytesPerParam = 28.0;

// Seconds of one GPU's share of CPU Adam over `params` parameters, with the node's DRAM bandwidth
// shared by its GPUs' optimizer processes; with NVMe offload the 12 bytes of state per parameter
// are also read and written back at the node's NVMe bandwidth (not overlapped: an upper bound).
double cpu_adam_seconds(const HostFigures& host, double params, bool states_on_nvme);

// Dollars per GPU-hour: config.cost.price_per_gpu_hour when > 0, else the profile's.
double price_per_gpu_hour(const compute::GpuProfile& gpu, const clustersim::CostConfig& cost = {});
// Throws ConfigError naming `source` and the field for a negative, non-finite or absurd price
// (0 keeps the default) or a run of no, negative or absurdly many tokens.
void validate_cost(const clustersim::CostConfig& cost, const std::string& source);

// A whole training run at a simulated step time: what `run` reports under "cost" and `plan`
// ranks by. run_cost fills the figures without failures; the goodput ones are filled from
// sim/cost/goodput.h by whoever knows the fleet.
struct RunCost {
  double price_per_gpu_hour = 0;
  double train_tokens = 0;
  double steps = 0;
  // Without failures.
  double wall_days = 0;
  double gpu_hours = 0;
  double dollars = 0;
  // Under interruptions, checkpoints and restarts (sim/cost/goodput.h); the effective figures
  // are the ones above over the goodput, 0 when the goodput is 0 (the run never finishes).
  double goodput = 1;
  double mtbf_hours = 0;
  double checkpoint_tb = 0, checkpoint_write_s = 0, checkpoint_interval_s = 0, restart_s = 0;
  double effective_wall_days = 0, effective_dollars = 0;
  // Interruptions per day of the whole job by cause (in kFailureCauses' order) and in all, and
  // the servers and NICs its GPUs hold, which the per-server and per-NIC rates count.
  std::array<double, kNumFailureCauses> interruptions_per_day{};
  double interruptions_total_per_day = 0;
  int64_t servers = 0, nics = 0;
};
RunCost run_cost(double step_seconds, double tokens_per_step, int64_t gpus, double price_per_hour,
                 double train_tokens);

}  // namespace cs::cost
