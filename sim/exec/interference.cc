#include "sim/exec/interference.h"

#include <algorithm>
#include <cmath>

#include "sim/compute/kernel_cost.h"

namespace cs::exec {

namespace {

// NVLink 3 (A100) and NVLink 4 (H100) links both carry 25 GB/s per direction (A100: 12 links,
// 300 GB/s; H100: 18 links, 450 GB/s, NVIDIA datasheets), so a profile's NVLink bandwidth tells
// its link count.
constexpr double kNvlinkLinkBytesPerS = 25e9;
// NCCL runs two CTAs per NVLink for ring collectives inside a server: 24 CTAs on DGX A100's 12
// NVLinks (NVIDIA/nccl issue 1225), capped by NCCL's MAXCHANNELS of 32 (NVIDIA/nccl issue 1429,
// where NCCL's developers tie the channel count to Hopper's 18 NVLinks).
constexpr int32_t kCtasPerNvlink = 2;
constexpr int32_t kNcclMaxChannels = 32;
// Collectives over the network: 16 channels, as NCCL logs "Channel 00/16" for rings over three
// DGX H100 servers (NVIDIA/nccl issue 1453) and its developers state that a DGX with 8 NICs uses
// 16 SMs (NVIDIA/nccl issue 689).
constexpr int32_t kNetworkCollectiveChannels = 16;
// A point-to-point transfer: 2 channels, the minimum NCCL launches (NVIDIA/nccl issue 689, "it
// should just launch 2 SMs ... 2 is the minimum").
constexpr int32_t kPointToPointChannels = 2;
// A userbuffers ring-exchange step: one SM, RingExchangeOverlapCfg's num_sm default in NeMo's
// nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py.
constexpr int32_t kRingExchangeSms = 1;
// HBM bytes per byte on the link: a collective stores what arrives and reads it back, and reads
// or writes user buffers too, "at least 2x ... it can be 3x" (NCCL developer, NVIDIA/nccl issue
// 1428); a send reads its buffer once and the receive writes it once: 2x.
constexpr double kCollectiveHbmPerLinkByte = 3.0;
constexpr double kPointToPointHbmPerLinkByte = 2.0;
// Compute never gets less than this share of HBM bandwidth: memory controllers serve both
// requesters, so a kernel is slowed, not stopped.
constexpr double kMinHbmShare = 0.1;

CommLoad load(int32_t channels, double link_bytes_per_s, double hbm_per_link_byte) {
  CommLoad l;
  l.sms = channels;
  l.hbm_bytes_per_s = std::llround(link_bytes_per_s * hbm_per_link_byte);
  l.kernels = 1;
  return l;
}

}  // namespace

InterferenceModel interference_model(const compute::GpuProfile& gpu) {
  InterferenceModel m;
  m.sm_count = gpu.sm_count();
  m.gemm_tiles = compute::gemm_tiles(gpu);
  m.hbm_bytes_per_s = compute::achievable_hbm_bandwidth(gpu).in_bytes_per_s();
  const double nvlink = compute::nvlink_bandwidth(gpu).in_bytes_per_s();
  const double nic = compute::nic_bandwidth(gpu).in_bytes_per_s();
  const auto links = static_cast<int32_t>(std::lround(nvlink / kNvlinkLinkBytesPerS));
  const int32_t nvlink_channels = std::clamp(kCtasPerNvlink * links, 1, kNcclMaxChannels);
  m.nvlink_collective = load(nvlink_channels, nvlink, kCollectiveHbmPerLinkByte);
  m.network_collective = load(kNetworkCollectiveChannels, nic, kCollectiveHbmPerLinkByte);
  m.point_to_point = load(kPointToPointChannels, nic, kPointToPointHbmPerLinkByte);
  m.ring_exchange = load(kRingExchangeSms, nvlink, kPointToPointHbmPerLinkByte);
  // DeepEP's dispatch and combine run on the SMs the profile gives them (gpu.proto deepep_sms;
  // the default 20 is refused only where the profile sets it, so a small GPU keeps all of its).
  const int32_t deepep_sms = std::min(gpu.deepep_sms(), gpu.sm_count());
  m.deepep_nvlink = load(deepep_sms, nvlink, kCollectiveHbmPerLinkByte);
  m.deepep_network = load(deepep_sms, nic, kCollectiveHbmPerLinkByte);
  return m;
}

int64_t kernel_ctas(const InterferenceModel& model, const compute::Kernel& kernel) {
  return compute::gemm_ctas(kernel, model.gemm_tiles, model.sm_count);
}

double sm_slowdown(const InterferenceModel& model, int32_t held_sms, int64_t ctas) {
  if (model.sm_count <= 1 || held_sms <= 0) return 1.0;
  const int32_t left = std::max(model.sm_count - held_sms, 1);
  if (!model.wave_quantization || ctas <= 0) return static_cast<double>(model.sm_count) / left;
  // The block scheduler hands a CTA to an SM when one frees up, and an SM that NCCL holds never
  // frees during the kernel: the CTAs run in ceil(ctas / left) waves of one CTA's time, where
  // alone they ran in ceil(ctas / sm_count). A one-wave GEMM (132 CTAs on 132 SMs) beside 24 NCCL
  // CTAs runs 108, then the other 24: twice its time, the "tail effect" NVIDIA's forum thread
  // 337991 profiles.
  const auto waves = [ctas](int64_t sms) { return (ctas + sms - 1) / sms; };
  return static_cast<double>(waves(left)) / static_cast<double>(waves(model.sm_count));
}

double kernel_slowdown(const InterferenceModel& model, compute::KernelKind kind, double isolated_s,
                       double hbm_bytes, const CommLoad& load, int64_t ctas) {
  if (load.kernels <= 0 || isolated_s <= 0) return 1.0;
  double slowdown = 1.0;
  // Tensor-core kernels spread their tiles over every SM; with `load.sms` held by NCCL the same
  // tiles run on fewer SMs. Memory-bound kernels saturate HBM with a fraction of the SMs, so for
  // them only bandwidth counts.
  if (kind != compute::KernelKind::kMemoryBound) slowdown = sm_slowdown(model, load.sms, ctas);
  // HBM: the kernel needs hbm_bytes / isolated_s; communication leaves the rest of the bandwidth.
  const double demand = hbm_bytes / isolated_s;
  const double left = std::max(model.hbm_bytes_per_s - static_cast<double>(load.hbm_bytes_per_s),
                               kMinHbmShare * model.hbm_bytes_per_s);
  if (demand > left) slowdown = std::max(slowdown, demand / left);
  return slowdown;
}

}  // namespace cs::exec
