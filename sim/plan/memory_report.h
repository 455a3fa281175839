// `clustersim memory`: the instant per-GPU memory breakdown of a configuration per pipeline stage,
// with mixed-precision, checkpointing and offload comparisons (no simulation).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "proto/config.pb.h"
#include "sim/workload/memory.h"

namespace cs::plan {

struct StageMemory {
  int32_t stage = 0;
  int32_t layers = 0;
  int32_t in_flight = 0;  // microbatch-chunks held at the peak (pipeline_orders)
  workload::MemoryBreakdown mem;
  double master = 0, adam_m = 0, adam_v = 0;  // the optimizer bytes split (0 when offloaded)
};

// One row of a side-by-side comparison; per GPU of the peak stage, in bytes.
struct VariantRow {
  std::string name;
  std::string note;
  double weights = 0, gradients = 0, optimizer = 0, activations = 0, temporary = 0;
  double working_set = 0;
  double total = 0;
  double extra_flops_fraction = 0;  // recompute FLOPs over model FLOPs (checkpointing rows)
  double extra_seconds = 0;         // that work per step at the GPU's large-GEMM throughput
  bool fits = false;
};

struct MemoryReport {
  std::string name, layout, schedule, gpu, precision;
  int32_t gpus = 0;
  int32_t microbatches = 0;
  double capacity = 0;  // HBM bytes per GPU
  std::vector<StageMemory> stages;
  int32_t peak_stage = 0;
  double peak = 0;            // bytes per GPU on the peak stage
  double total_all_gpus = 0;  // sum over every GPU
  bool fits = false;
  // Host side, per GPU: offloaded bytes against the node's share.
  double host_dram = 0, host_nvme = 0, host_dram_capacity = 0, host_nvme_capacity = 0;
  bool fits_host = true;
  // Bytes per element of the quantized copies that FP8 / MXFP8 / NVFP4 linears keep for their
  // weight gradient, block scales included (compute::stored_bytes_per_element); 0 when the
  // linears keep 16-bit inputs (BF16, or effects.memory_fp8_linear_inputs off).
  double quantized_input_bytes = 0;
  std::vector<VariantRow> precision_rows;
  std::vector<VariantRow> checkpoint_rows;
};

// Each stage's exact order of work items under the configuration's schedule.
std::vector<std::vector<workload::WorkItem>> stage_orders(const clustersim::RunConfig& config);

// Microbatch-chunks whose activations each stage holds at its peak, from the schedule's exact
// order (GPipe m, 1F1B p − s, interleaved its warm-up).
std::vector<int32_t> held_per_stage(const clustersim::RunConfig& config);

// Validates `config` (naming `source` in errors; cluster.gpu must name a GPU profile, or the
// topology's GPU is taken) and builds the report.
MemoryReport build_memory_report(const clustersim::RunConfig& config, const std::string& source);

// Peak bytes per GPU and whether GPU and host memory fit: the planner's filter.
struct FitCheck {
  double peak = 0;
  double capacity = 0;
  bool fits = false;
};
FitCheck check_fit(const clustersim::RunConfig& config, double hbm_capacity_bytes);

void print_memory_report(std::ostream& out, const MemoryReport& r);
void write_memory_json(std::ostream& out, const MemoryReport& r);

}  // namespace cs::plan
