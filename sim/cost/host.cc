#include "sim/cost/host.h"

#include "sim/config/field_checks.h"

namespace cs::cost {

namespace {

// DGX H100 / H200 (NVIDIA DGX H100 and DGX H200 datasheets): 2 TB DDR5 system memory, 8x 3.84 TB
// U.2 NVMe internal storage (30 TB), two Intel Xeon Platinum 8480C. Each Xeon has 8 DDR5-4800
// channels (Intel ARK): 8 x 38.4 GB/s = 307 GB/s per socket, 614 GB/s per node. PCIe Gen5 x16:
// 32 GT/s x 16 x 128/130 = 63 GB/s per direction. NVMe bandwidth is an assumption: ~3.5 GB/s of
// sustained write per PCIe Gen4 data-center U.2 drive (reads are ~2x faster), 8 drives = 28 GB/s.
HostFigures dgx_h100() {
  HostFigures h;
  h.gpus_per_node = 8;
  h.host_memory_bytes = 2e12;
  h.nvme_capacity_bytes = 8 * 3.84e12;
  h.pcie_bytes_per_s = 63e9;
  h.nvme_bytes_per_s = 8 * 3.5e9;
  h.host_memory_bytes_per_s = 2 * 307.2e9;
  return h;
}

// DGX A100 (NVIDIA DGX A100 datasheet): 1 TB system memory, 15 TB internal NVMe (4x 3.84 TB),
// two AMD EPYC 7742 with 8 DDR4-3200 channels each (AMD spec: 204.8 GB/s per socket). PCIe Gen4
// x16: 16 GT/s x 16 x 128/130 = 31.5 GB/s per direction. NVMe: 4 drives x 3.5 GB/s (assumption
// as above).
HostFigures dgx_a100() {
  HostFigures h;
  h.gpus_per_node = 8;
  h.host_memory_bytes = 1e12;
  h.nvme_capacity_bytes = 4 * 3.84e12;
  h.pcie_bytes_per_s = 31.5e9;
  h.nvme_bytes_per_s = 4 * 3.5e9;
  h.host_memory_bytes_per_s = 2 * 204.8e9;
  return h;
}

}  // namespace

HostFigures host_figures(const std::string& gpu, const clustersim::OffloadConfig& o) {
  HostFigures h = gpu == "a100" ? dgx_a100() : dgx_h100();
  if (o.has_gpus_per_node() && o.gpus_per_node() > 0) h.gpus_per_node = o.gpus_per_node();
  if (o.host_memory_gb() > 0) h.host_memory_bytes = o.host_memory_gb() * 1e9;
  if (o.nvme_capacity_gb() > 0) h.nvme_capacity_bytes = o.nvme_capacity_gb() * 1e9;
  if (o.pcie_bandwidth_gbytes() > 0) h.pcie_bytes_per_s = o.pcie_bandwidth_gbytes() * 1e9;
  if (o.nvme_bandwidth_gbytes() > 0) h.nvme_bytes_per_s = o.nvme_bandwidth_gbytes() * 1e9;
  if (o.host_memory_bandwidth_gbytes() > 0)
    h.host_memory_bytes_per_s = o.host_memory_bandwidth_gbytes() * 1e9;
  return h;
}

void validate_offload(const clustersim::OffloadConfig& o, const std::string& source) {
  // Bounds far beyond any server (a petabyte of memory or storage, a petabyte per second), so
  // that a typo fails instead of turning into an infinite byte count.
  constexpr double kMaxGb = 1e6, kMaxGbPerS = 1e6;
  const std::string why = "an unset figure takes the server's default";
  auto figure = [&](bool set, double v, double max, const char* field) {
    if (set && !(v > 0))
      config_fail(source, std::string("offload.") + field + " must be > 0 (is " + number_text(v) +
                              "); " + why);
    if (set) require_range(v, 0, max, source, std::string("offload.") + field);
  };
  figure(o.has_host_memory_gb(), o.host_memory_gb(), kMaxGb, "host_memory_gb");
  figure(o.has_nvme_capacity_gb(), o.nvme_capacity_gb(), kMaxGb, "nvme_capacity_gb");
  figure(o.has_pcie_bandwidth_gbytes(), o.pcie_bandwidth_gbytes(), kMaxGbPerS,
         "pcie_bandwidth_gbytes");
  figure(o.has_nvme_bandwidth_gbytes(), o.nvme_bandwidth_gbytes(), kMaxGbPerS,
         "nvme_bandwidth_gbytes");
  figure(o.has_host_memory_bandwidth_gbytes(), o.host_memory_bandwidth_gbytes(), kMaxGbPerS,
         "host_memory_bandwidth_gbytes");
  if (o.has_gpus_per_node())
    require_int_range(o.gpus_per_node(), 1, 1024, source, "offload.gpus_per_node",
                      "GPUs sharing one server's host memory and NVMe; " + why);
}

void validate_cost(const clustersim::CostConfig& c, const std::string& source) {
  // $1M per GPU-hour and 1e18 tokens (about 70,000 times Llama 3's 15T) are far beyond any run;
  // beyond them a typo would only turn into astronomically many dollars or days.
  require_range(c.price_per_gpu_hour(), 0, 1e6, source, "cost.price_per_gpu_hour",
                "dollars per GPU-hour, 0 for the GPU type's default");
  if (!(c.train_tokens() > 0))
    config_fail(source, "cost.train_tokens must be > 0 (is " + number_text(c.train_tokens()) + ")");
  require_range(c.train_tokens(), 0, 1e18, source, "cost.train_tokens");
}

double cpu_adam_seconds(const HostFigures& host, double params, bool states_on_nvme) {
  const double dram = host.host_memory_bytes_per_s * host.cpu_adam_efficiency / host.gpus_per_node;
  double s = kCpuAdamBytesPerParam * params / dram;
  if (states_on_nvme) s += 2.0 * 12.0 * params / (host.nvme_bytes_per_s / host.gpus_per_node);
  return s;
}

double price_per_gpu_hour(const std::string& gpu, const clustersim::CostConfig& cost) {
  if (cost.price_per_gpu_hour() > 0) return cost.price_per_gpu_hour();
  // A100 $2, H100 $3.50, H800 $2: the figures of the lesson this project grows from (DESIGN.md).
  // H200 $4.50: the low end of hyperscaler on-demand H200 SXM rates (mercatus-ai.com "Cloud GPU
  // pricing", May 2026: $4.50-7.00; Spheron on-demand $4.54/h, March 2026).
  if (gpu == "a100" || gpu == "h800") return 2.0;
  if (gpu == "h200") return 4.5;
  return 3.5;
}

RunCost run_cost(double step_seconds, double tokens_per_step, int64_t gpus, double price_per_hour,
                 double train_tokens) {
  RunCost c;
  c.price_per_gpu_hour = price_per_hour;
  c.train_tokens = train_tokens;
  if (tokens_per_step <= 0 || step_seconds <= 0) return c;
  c.steps = train_tokens / tokens_per_step;
  const double seconds = c.steps * step_seconds;
  c.wall_days = seconds / 86400.0;
  c.gpu_hours = seconds / 3600.0 * static_cast<double>(gpus);
  c.dollars = c.gpu_hours * price_per_hour;
  return c;
}

}  // namespace cs::cost
