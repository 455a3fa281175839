#include "sim/compute/grouped_gemm.h"

#include <algorithm>
#include <cmath>

namespace cs::compute {
namespace {

int64_t ceil_ratio(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

bool is_empty(const Kernel& g) {
  return g.m <= 0 || g.n <= 0 || g.k <= 0;
}

// What one SM does with one output tile, and how many SMs there are.
struct TileCosts {
  double flops_per_sm = 0;  // the per-SM share of peak x ceiling
  double k_half = 0;        // per-tile fixed cost, in k (gemm.k_half)
  double store_s = 0;       // every SM storing one a x b tile at once, per tile element
  int64_t sms = 1;
};

// Seconds of the tiles of `gemms` cut into a x b output tiles: whole waves of one tile per SM,
// each wave as long as its mean tile (mainloop over k plus the tile's store).
double tiled_seconds(std::span<const Kernel> gemms, int64_t a, int64_t b, const TileCosts& c) {
  int64_t tiles = 0;
  double work = 0;
  const double area = static_cast<double>(a) * static_cast<double>(b);
  for (const Kernel& g : gemms) {
    if (is_empty(g)) continue;
    const int64_t t = ceil_ratio(g.m, a) * ceil_ratio(g.n, b) * std::max<int64_t>(g.batch, 1);
    const double mainloop = 2.0 * area * (static_cast<double>(g.k) + c.k_half) / c.flops_per_sm;
    tiles += t;
    work += static_cast<double>(t) * (mainloop + area * c.store_s);
  }
  if (tiles == 0) return 0;
  const auto waves = static_cast<double>(ceil_ratio(tiles, c.sms));
  return waves * work / static_cast<double>(tiles);
}

}  // namespace

Time grouped_gemm_time(const KernelCostModel& cost, std::span<const Kernel> gemms,
                       Precision precision) {
  const GpuProfile& p = cost.profile();
  const auto live = std::find_if_not(gemms.begin(), gemms.end(), is_empty);
  if (live == gemms.end()) return cost.launch_overhead();
  const double bw = achievable_hbm_bandwidth(p).in_bytes_per_s();
  TileCosts c;
  c.sms = std::max<int64_t>(p.sm_count(), 1);
  c.flops_per_sm = cost.compute_peak(*live, precision) * cost.gemm_ceiling(precision) /
                   static_cast<double>(c.sms);
  c.k_half = p.gemm().k_half();
  c.store_s = kGroupedGemmOutputBytes * static_cast<double>(c.sms) / bw;
  const int64_t tm = p.gemm().tile_m(), tn = p.gemm().tile_n();
  const double compute = std::min(tiled_seconds(gemms, tm, tn, c), tiled_seconds(gemms, tn, tm, c));
  double bytes = 0;
  for (const Kernel& g : gemms) bytes += g.bytes;
  double seconds = std::max(compute, bytes / bw);
  if (cost.options().gemm_pipeline_fill) seconds += p.hbm_latency_ns() * 1e-9;
  return Time::from_seconds(seconds) + cost.launch_overhead();
}

Time ideal_grouped_gemm_time(const KernelCostModel& cost, std::span<const Kernel> gemms,
                             Precision precision) {
  const GpuProfile& p = cost.profile();
  const auto live = std::find_if_not(gemms.begin(), gemms.end(), is_empty);
  if (live == gemms.end()) return cost.launch_overhead();
  double flops = 0, bytes = 0;
  for (const Kernel& g : gemms) {
    if (!is_empty(g)) flops += g.flops;
    bytes += g.bytes;
  }
  const double rate = cost.compute_peak(*live, precision) * cost.gemm_ceiling(precision);
  double seconds = std::max(flops / rate, bytes / achievable_hbm_bandwidth(p).in_bytes_per_s());
  if (cost.options().gemm_pipeline_fill) seconds += p.hbm_latency_ns() * 1e-9;
  return Time::from_seconds(seconds) + cost.launch_overhead();
}

Time expert_part_time(const KernelCostModel& cost, std::span<const Kernel> parts,
                      Precision precision, GroupedGemmModel model) {
  if (parts.empty()) return Time{};
  if (parts.front().kind == KernelKind::kGemm)
    return model == GroupedGemmModel::kKernel ? grouped_gemm_time(cost, parts, precision)
                                              : ideal_grouped_gemm_time(cost, parts, precision);
  return cost.time(merged_parts(parts), precision);
}

Kernel merged_parts(std::span<const Kernel> parts) {
  if (parts.empty()) return {};
  Kernel whole = parts.front();
  whole.bytes = whole.flops = 0;
  for (const Kernel& k : parts) {
    whole.bytes += k.bytes;
    whole.flops += k.flops;
  }
  return whole;
}

}  // namespace cs::compute
