// How much slower a kernel runs while NCCL kernels of the same GPU run beside it.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/compute/gpu_profile.h"
#include "sim/compute/kernel.h"

namespace cs::exec {

// What communication in flight takes from one GPU: the SMs its CTAs hold (NCCL runs one CTA per
// channel, and a CTA never shares its SM with a compute kernel) and the HBM bandwidth its copies
// use. Integers, so that adding and then removing a collective restores the load exactly.
struct CommLoad {
  int32_t sms = 0;
  int64_t hbm_bytes_per_s = 0;
  int32_t kernels = 0;  // NCCL kernels in flight

  CommLoad& operator+=(const CommLoad& o) {
    sms += o.sms;
    hbm_bytes_per_s += o.hbm_bytes_per_s;
    kernels += o.kernels;
    return *this;
  }
  CommLoad& operator-=(const CommLoad& o) {
    sms -= o.sms;
    hbm_bytes_per_s -= o.hbm_bytes_per_s;
    kernels -= o.kernels;
    return *this;
  }
  bool operator==(const CommLoad&) const = default;
};

// Where a communication op runs, which sets its channel count and link rate.
enum class CommPath : uint8_t {
  kNvlinkCollective,   // every member on one server
  kNetworkCollective,  // the group spans servers
  kPointToPoint,       // one send / receive (pipeline transfers)
  kRingExchange,       // a Transformer Engine userbuffers ring-exchange step beside a GEMM
  kDeepEpNvlink,       // DeepEP's dispatch or combine, every member on one server
  kDeepEpNetwork,      // DeepEP's dispatch or combine across servers
};

// The GPU's resources and the load each kind of communication puts on them.
struct InterferenceModel {
  int32_t sm_count = 0;
  // Kernels whose CTA count is known run whole waves over the SMs communication leaves (a GEMM of
  // one full wave beside NCCL runs a second, near-empty wave); off, or count unknown: they slow by
  // the share of SMs lost.
  bool wave_quantization = true;
  std::vector<compute::GemmTile> gemm_tiles;  // the profile's GEMM output tiles, for kernel_ctas
  double hbm_bytes_per_s = 0;                 // what streaming kernels achieve alone
  CommLoad nvlink_collective, network_collective, point_to_point, ring_exchange;
  CommLoad deepep_nvlink, deepep_network;  // the collectives' loads on DeepEP's SMs

  const CommLoad& load_of(CommPath path) const {
    switch (path) {
      case CommPath::kNvlinkCollective:
        return nvlink_collective;
      case CommPath::kNetworkCollective:
        return network_collective;
      case CommPath::kPointToPoint:
        return point_to_point;
      case CommPath::kDeepEpNvlink:
        return deepep_nvlink;
      case CommPath::kDeepEpNetwork:
        return deepep_network;
      case CommPath::kRingExchange:
        break;
    }
    return ring_exchange;
  }
};

// The model's parameters for `gpu`, each from a cited measurement or source (interference.cc).
InterferenceModel interference_model(const compute::GpuProfile& gpu);

// The factor (>= 1) by which a kernel of `kind` that alone takes `isolated_s` seconds and moves
// `hbm_bytes` is slowed while `load` runs on its GPU: the larger of the loss of SMs (tensor-core
// kernels: GEMMs, attention) and the loss of HBM bandwidth (any kernel whose demand exceeds what
// the communication leaves). `ctas`: the kernel's thread blocks of equal work, one per SM at a
// time (a GEMM's output tiles), 0 when unknown. This is the function the validate command
// compares with published measurements.
double kernel_slowdown(const InterferenceModel& model, compute::KernelKind kind, double isolated_s,
                       double hbm_bytes, const CommLoad& load, int64_t ctas = 0);

// The thread blocks of `kernel` that wave quantization counts: a GEMM's output tiles on the
// model's GPU (compute::gemm_ctas); 0 (unknown) for other kernels.
int64_t kernel_ctas(const InterferenceModel& model, const compute::Kernel& kernel);

// The SM part of that factor: with `ctas` known and wave quantization on, waves over the SMs
// left over waves over all, ceil(ctas / (sm_count - held)) / ceil(ctas / sm_count); otherwise
// sm_count / (sm_count - held).
double sm_slowdown(const InterferenceModel& model, int32_t held_sms, int64_t ctas);

}  // namespace cs::exec
