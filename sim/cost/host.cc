#include "sim/cost/host.h"

#include "sim/config/field_checks.h"

namespace cs::cost {

HostFigures host_figures(const compute::GpuProfile& gpu, const clustersim::OffloadConfig& o) {
  // The server's figures, each cited in the GPU's profile (topologies/gpus/*.textproto host).
  const auto& server = gpu.host();
  HostFigures h;
  h.gpus_per_node = server.gpus_per_node();
  h.host_memory_bytes = server.host_memory_gb() * 1e9;
  h.nvme_capacity_bytes = server.nvme_capacity_gb() * 1e9;
  h.pcie_bytes_per_s = server.pcie_bandwidth_gbytes() * 1e9;
  h.nvme_bytes_per_s = server.nvme_bandwidth_gbytes() * 1e9;
  h.host_memory_bytes_per_s = server.host_memory_bandwidth_gbytes() * 1e9;
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
  const std::string why = "an unset figure takes the server's default";
  auto figure = [&](bool set, double v, const char* field) {
    if (set && !(v > 0))
      config_fail(source, std::string("offload.") + field + " must be > 0 (is " + number_text(v) +
                              "); " + why);
    if (set) require_range(v, 0, kMaxServerGb, source, std::string("offload.") + field);
  };
  figure(o.has_host_memory_gb(), o.host_memory_gb(), "host_memory_gb");
  figure(o.has_nvme_capacity_gb(), o.nvme_capacity_gb(), "nvme_capacity_gb");
  figure(o.has_pcie_bandwidth_gbytes(), o.pcie_bandwidth_gbytes(), "pcie_bandwidth_gbytes");
  figure(o.has_nvme_bandwidth_gbytes(), o.nvme_bandwidth_gbytes(), "nvme_bandwidth_gbytes");
  figure(o.has_host_memory_bandwidth_gbytes(), o.host_memory_bandwidth_gbytes(),
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

double price_per_gpu_hour(const compute::GpuProfile& gpu, const clustersim::CostConfig& cost) {
  return cost.price_per_gpu_hour() > 0 ? cost.price_per_gpu_hour() : gpu.price_per_gpu_hour();
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
