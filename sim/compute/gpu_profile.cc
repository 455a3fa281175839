#include "sim/compute/gpu_profile.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "sim/coll/nccl_model.h"
#include "sim/config/embedded_presets.h"
#include "sim/config/field_checks.h"
#include "sim/config/text_proto.h"

namespace cs::compute {

namespace {

constexpr std::string_view kFolder = "topologies/gpus";

constexpr const char* kBeyondAnyServer = "beyond any server (a petabyte, or a petabyte per second)";

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  config_fail(source, what);
}

// A profile's text and the name its errors carry, from a preset name or a file path.
std::optional<PresetText> find_profile(const std::string& name_or_path) {
  return find_preset_or_file(kFolder, name_or_path);
}

std::string unknown_gpu(const std::string& name_or_path) {
  return "unknown GPU '" + name_or_path + "': neither a profile (" + preset_list(kFolder) +
         ") nor a readable file";
}

// Parses `text` and, while it names a base, lays it over the base's fields (gpu.proto based_on).
// `chain` holds the labels already on the way down, to report a profile that reaches itself.
GpuProfile parse_with_bases(std::string_view text, const std::string& label,
                            std::vector<std::string>& chain) {
  GpuProfile own;
  parse_text_proto(text, label, &own);
  if (!own.has_based_on()) return own;
  if (!own.has_name()) fail(label, "name must be set in a profile based_on another");
  const auto base_source = find_profile(own.based_on());
  if (!base_source) fail(label, "based_on: " + unknown_gpu(own.based_on()));
  chain.push_back(label);
  if (std::find(chain.begin(), chain.end(), base_source->label) != chain.end()) {
    std::string cycle;
    for (const auto& link : chain) cycle += link + " -> ";
    fail(label, "based_on: profiles base themselves on each other: " + cycle + base_source->label);
  }
  GpuProfile merged = parse_with_bases(base_source->text, base_source->label, chain);
  own.clear_based_on();
  merged.MergeFrom(own);
  return merged;
}

// The figures the NCCL model, offload and cost read: architecture, links, server and price.
void validate_hardware(const GpuProfile& p, const std::string& src) {
  if (!p.has_architecture())
    fail(src, "architecture must be set (one of: " + coll::gpu_arch_names() + ")");
  try {
    coll::parse_gpu_arch(p.architecture());
  } catch (const std::invalid_argument& e) {
    fail(src, std::string("architecture: ") + e.what());
  }
  if (!p.has_nvlinks()) fail(src, "nvlinks must be set (NVLink links per GPU; 0: none)");
  require_int_range(p.nvlinks(), 0, 1024, src, "nvlinks", "NVLink links per GPU");
  if (!p.has_host()) fail(src, "host { ... } must be set (the GPU's usual server)");
  const auto& h = p.host();
  require_int_range(h.gpus_per_node(), 1, 1024, src, "host.gpus_per_node", "GPUs per server");
  for (const auto& [value, field] :
       {std::pair{h.host_memory_gb(), "host.host_memory_gb"},
        {h.nvme_capacity_gb(), "host.nvme_capacity_gb"},
        {h.pcie_bandwidth_gbytes(), "host.pcie_bandwidth_gbytes"},
        {h.nvme_bandwidth_gbytes(), "host.nvme_bandwidth_gbytes"},
        {h.host_memory_bandwidth_gbytes(), "host.host_memory_bandwidth_gbytes"}}) {
    require_positive(value, src, field);
    require_range(value, 0, kMaxServerGb, src, field, kBeyondAnyServer);
  }
  if (h.has_host_op_time_factor())
    require_range(h.host_op_time_factor(), 0.1, 100, src, "host.host_op_time_factor",
                  "the host's time per PyTorch op against an x86 server CPU's");
  require_positive(p.price_per_gpu_hour(), src, "price_per_gpu_hour");
}

}  // namespace

std::vector<std::string> gpu_profile_names() {
  return preset_names(kFolder);
}

namespace {

// Peak rates, memory, links and the MoE kernels' figures. Rates far outside any GPU's would make
// kernel times no simulator clock holds (64-bit picoseconds: 106 days).
void validate_rates(const GpuProfile& p, const std::string& src) {
  const std::string why = "the range the simulator's clock holds";
  require_range(p.peak_bf16_tflops(), 1e-3, 1e6, src, "peak_bf16_tflops", why);
  if (p.peak_fp8_tflops() != 0)
    require_range(p.peak_fp8_tflops(), 1e-3, 1e6, src, "peak_fp8_tflops", why);
  if (p.peak_fp4_tflops() != 0)
    require_range(p.peak_fp4_tflops(), 1e-3, 1e6, src, "peak_fp4_tflops", why);
  require_range(p.peak_fp32_tflops(), 1e-3, 1e6, src, "peak_fp32_tflops", why);
  require_positive(p.hbm_capacity_gb(), src, "hbm_capacity_gb");
  require_range(p.hbm_capacity_gb(), 0, kMaxServerGb, src, "hbm_capacity_gb", kBeyondAnyServer);
  require_range(p.hbm_bandwidth_tbps(), 1e-3, 1e4, src, "hbm_bandwidth_tbps", why);
  require_fraction(p.hbm_efficiency(), src, "hbm_efficiency");
  require_non_negative(p.nvlink_bandwidth_gbytes(), src, "nvlink_bandwidth_gbytes");
  require_non_negative(p.nic_bandwidth_gbits(), src, "nic_bandwidth_gbits");
  require_range(p.kernel_launch_overhead_us(), 0, 1e6, src, "kernel_launch_overhead_us", why);
  require_range(p.hbm_latency_ns(), 0, 1e9, src, "hbm_latency_ns", why);
  require_fraction(p.nvlink_copy_efficiency(), src, "nvlink_copy_efficiency");
  if (p.has_unvectorized_elementwise_gelems_per_s())
    require_range(p.unvectorized_elementwise_gelems_per_s(), 1e-3, 1e6, src,
                  "unvectorized_elementwise_gelems_per_s", why);
  if (p.has_multi_tensor_hbm_efficiency())
    require_fraction(p.multi_tensor_hbm_efficiency(), src, "multi_tensor_hbm_efficiency");
  if (p.has_deepep_nvlink_share())
    require_fraction(p.deepep_nvlink_share(), src, "deepep_nvlink_share");
  if (p.has_deepep_network_share())
    require_fraction(p.deepep_network_share(), src, "deepep_network_share");
  if (p.has_deepep_call_us())
    require_range(p.deepep_call_us(), 0, 1e4, src, "deepep_call_us", "0 to 10 ms a call");
  if (p.has_deepep_ns_per_token_peer())
    require_range(p.deepep_ns_per_token_peer(), 0, 1e3, src, "deepep_ns_per_token_peer",
                  "0 to 1 us a token and peer");
  if (p.has_token_permute_tbps())
    require_range(p.token_permute_tbps(), 1e-3, 1e4, src, "token_permute_tbps", why);
  if (p.sm_count() <= 0) {
    fail(src, "sm_count must be > 0 (is " + std::to_string(p.sm_count()) + ")");
  }
  if (p.has_deepep_sms() && (p.deepep_sms() < 1 || p.deepep_sms() > p.sm_count())) {
    fail(src, "deepep_sms must be in [1, sm_count = " + std::to_string(p.sm_count()) + "] (is " +
                  std::to_string(p.deepep_sms()) + ")");
  }
}

// The GEMM efficiencies by precision and the tiles the wave model cuts.
void validate_gemm(const GpuProfile& p, const std::string& src) {
  if (!p.has_gemm()) fail(src, "gemm { ... } must be set");
  const auto& g = p.gemm();
  require_fraction(g.efficiency_bf16(), src, "gemm.efficiency_bf16");
  require_fraction(g.efficiency_fp32(), src, "gemm.efficiency_fp32");
  if (has_fp8(p)) require_fraction(g.efficiency_fp8(), src, "gemm.efficiency_fp8");
  if (g.has_efficiency_mxfp8())
    require_fraction(g.efficiency_mxfp8(), src, "gemm.efficiency_mxfp8");
  if (g.has_efficiency_nvfp4())
    require_fraction(g.efficiency_nvfp4(), src, "gemm.efficiency_nvfp4");
  if (g.tile_m() <= 0 || g.tile_n() <= 0) {
    fail(src, "gemm.tile_m and gemm.tile_n must be > 0 (are " + std::to_string(g.tile_m()) + ", " +
                  std::to_string(g.tile_n()) + ")");
  }
  require_non_negative(g.k_half(), src, "gemm.k_half");
  for (int i = 0; i < g.more_tiles_size(); ++i) {
    const auto& t = g.more_tiles(i);
    if (t.m() <= 0 || t.n() <= 0) {
      fail(src, "gemm.more_tiles[" + std::to_string(i) + "] m and n must be > 0 (are " +
                    std::to_string(t.m()) + ", " + std::to_string(t.n()) + ")");
    }
  }
}

// The attention kernels' efficiencies and their per-CTA work terms.
void validate_attention(const GpuProfile& p, const std::string& src) {
  if (!p.has_attention_bf16())
    fail(src, "attention_bf16 { forward: ... backward: ... } must be set");
  require_fraction(p.attention_bf16().forward(), src, "attention_bf16.forward");
  require_fraction(p.attention_bf16().backward(), src, "attention_bf16.backward");
  if (p.has_attention_fa2_bf16()) {
    require_fraction(p.attention_fa2_bf16().forward(), src, "attention_fa2_bf16.forward");
    require_fraction(p.attention_fa2_bf16().backward(), src, "attention_fa2_bf16.backward");
  }
  for (const auto& [name, figures] : {std::pair{"attention_bf16", &p.attention_bf16()},
                                      std::pair{"attention_fa2_bf16", &p.attention_fa2_bf16()},
                                      std::pair{"attention_fp8", &p.attention_fp8()}}) {
    require_range(figures->cta_fixed_blocks(), 0, 1e3, src, std::string(name) + ".cta_fixed_blocks",
                  "blocks of main-loop work per CTA");
    require_range(figures->cta_fixed_blocks_backward(), 0, 1e3, src,
                  std::string(name) + ".cta_fixed_blocks_backward",
                  "blocks of main-loop work per CTA");
    require_range(figures->backward_scalar_per_score(), 0, 1e3, src,
                  std::string(name) + ".backward_scalar_per_score", "exponentials per score");
    require_range(figures->causal_mask_blocks_backward(), 0, 1e3, src,
                  std::string(name) + ".causal_mask_blocks_backward",
                  "blocks of main-loop work per CTA");
  }
  if (p.attention_fp8().has_forward()) {
    require_fraction(p.attention_fp8().forward(), src, "attention_fp8.forward");
  }
  if (p.attention_fp8().has_backward()) {
    require_fraction(p.attention_fp8().backward(), src, "attention_fp8.backward");
  }
}

// The clocks: the sustained one, where given, no higher than the peak.
void validate_clocks(const GpuProfile& p, const std::string& src) {
  if (!p.has_clocks()) return;
  const auto& c = p.clocks();
  require_positive(c.peak_clock_mhz(), src, "clocks.peak_clock_mhz");
  if (c.has_sustained_clock_mhz()) {
    require_positive(c.sustained_clock_mhz(), src, "clocks.sustained_clock_mhz");
    if (c.sustained_clock_mhz() > c.peak_clock_mhz())
      fail(src, "clocks.sustained_clock_mhz must be <= clocks.peak_clock_mhz");
  }
}

// The measured kernels that stand in for the model where a kernel matches their shape.
void validate_measured_kernels(const GpuProfile& p, const std::string& src) {
  for (int i = 0; i < p.measured_kernels_size(); ++i) {
    const auto& m = p.measured_kernels(i);
    const std::string field = "measured_kernels[" + std::to_string(i) + "]";
    require_positive(m.time_us(), src, field + ".time_us");
    if (m.m() < 0 || m.n() < 0 || m.k() < 0 || m.batch() < 0 || m.bytes() < 0) {
      fail(src, field + " shape fields must be >= 0");
    }
  }
}

}  // namespace

void validate_gpu_profile(const GpuProfile& p, const std::string& src) {
  if (p.name().empty()) fail(src, "name must be set, e.g. name: \"h100\"");
  validate_rates(p, src);
  validate_gemm(p, src);
  validate_attention(p, src);
  validate_clocks(p, src);
  validate_hardware(p, src);
  validate_measured_kernels(p, src);
}

GpuProfile load_gpu_profile_text(std::string_view text, const std::string& source_name) {
  std::vector<std::string> chain;
  GpuProfile profile = parse_with_bases(text, source_name, chain);
  validate_gpu_profile(profile, source_name);
  return profile;
}

GpuProfile load_gpu_profile(const std::string& name_or_path) {
  // An embedded profile is parsed once (parsed_preset); a file is read each time.
  if (const GpuProfile* p = parsed_preset<GpuProfile>(kFolder, name_or_path, [](const auto& f) {
        return load_gpu_profile_text(f.text, std::string(f.path));
      }))
    return *p;
  if (const auto source = find_profile(name_or_path)) {
    return load_gpu_profile_text(source->text, source->label);
  }
  throw ConfigError(unknown_gpu(name_or_path));
}

std::vector<GemmTile> gemm_tiles(const GpuProfile& profile) {
  const auto& g = profile.gemm();
  std::vector<GemmTile> tiles = {{g.tile_m(), g.tile_n()}};
  for (const auto& t : g.more_tiles()) tiles.push_back({t.m(), t.n()});
  return tiles;
}

double sustained_clock_ratio(const GpuProfile& profile) {
  const auto& c = profile.clocks();
  if (!profile.has_clocks() || !c.has_sustained_clock_mhz()) return 1.0;
  return c.sustained_clock_mhz() / c.peak_clock_mhz();
}

double peak_flops(const GpuProfile& profile, Precision precision) {
  switch (precision) {
    case Precision::kFp8:
      return (has_fp8(profile) ? profile.peak_fp8_tflops() : profile.peak_bf16_tflops()) * 1e12;
    case Precision::kFp32:
      return profile.peak_fp32_tflops() * 1e12;
    case Precision::kMxfp8:
      return peak_flops(profile, Precision::kFp8);
    case Precision::kNvfp4:
      // A GPU without FP4 tensor cores refuses NVFP4 (require_precision_supported); the FP8
      // rate keeps a direct caller's arithmetic finite.
      return profile.peak_fp4_tflops() > 0 ? profile.peak_fp4_tflops() * 1e12
                                           : peak_flops(profile, Precision::kFp8);
    case Precision::kBf16:
      break;
  }
  return profile.peak_bf16_tflops() * 1e12;
}

}  // namespace cs::compute
