#include "sim/compute/kernel_cost.h"

#include <algorithm>
#include <cmath>

namespace cs::compute {

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Fraction of SM-slots busy when `tiles` tiles run one per SM in whole waves.
double wave_use(int64_t tiles, int64_t sms) {
  if (tiles <= 0) return 1.0;
  const int64_t waves = ceil_div(tiles, sms);
  return static_cast<double>(tiles) / static_cast<double>(waves * sms);
}

// Tile and wave use of an m x n output (times batch) cut into tm x tn tiles.
double tiling_use(const Kernel& g, int64_t tm, int64_t tn, int64_t sms) {
  const int64_t tiles_m = ceil_div(g.m, tm);
  const int64_t tiles_n = ceil_div(g.n, tn);
  const double tile_use = static_cast<double>(g.m) * static_cast<double>(g.n) /
                          (static_cast<double>(tiles_m * tm) * static_cast<double>(tiles_n * tn));
  return tile_use * wave_use(tiles_m * tiles_n * std::max<int64_t>(g.batch, 1), sms);
}

// The tile, in the orientation it runs, that wastes least of the SMs: the first on a tie (within
// rounding, so that equal uses computed two ways do not depend on the last bit).
struct Tiling {
  GemmTile tile;
  double use = 0;
};
Tiling best_tiling(const Kernel& g, std::span<const GemmTile> tiles, int64_t sms) {
  Tiling best;
  for (const GemmTile& t : tiles) {
    for (const GemmTile oriented : {t, GemmTile{t.n, t.m}}) {
      const double use = tiling_use(g, oriented.m, oriented.n, sms);
      if (use > best.use + 1e-12) best = {oriented, use};
    }
  }
  return best;
}

clustersim::MeasuredKernel::Kind to_measured(KernelKind kind) {
  switch (kind) {
    case KernelKind::kGemm:
      return clustersim::MeasuredKernel::GEMM;
    case KernelKind::kAttention:
      return clustersim::MeasuredKernel::ATTENTION;
    case KernelKind::kMemoryBound:
      break;
  }
  return clustersim::MeasuredKernel::MEMORY_BOUND;
}

clustersim::MeasuredKernel::Precision to_measured(Precision p) {
  switch (p) {
    case Precision::kFp8:
      return clustersim::MeasuredKernel::FP8;
    case Precision::kFp32:
      return clustersim::MeasuredKernel::FP32;
    case Precision::kMxfp8:
      return clustersim::MeasuredKernel::MXFP8;
    case Precision::kNvfp4:
      return clustersim::MeasuredKernel::NVFP4;
    case Precision::kBf16:
      break;
  }
  return clustersim::MeasuredKernel::BF16;
}

bool name_matches(const std::string& pattern, std::string_view name) {
  if (!pattern.empty() && pattern.back() == '*') {
    return name.starts_with(std::string_view(pattern).substr(0, pattern.size() - 1));
  }
  return name == pattern;
}

// A zero field in the table means "any".
bool dim_matches(int64_t want, int64_t have) {
  return want == 0 || want == have;
}

bool matches(const clustersim::MeasuredKernel& mk, const Kernel& k, Precision p) {
  if (mk.kind() != to_measured(k.kind)) return false;
  if (mk.has_name() && !name_matches(mk.name(), k.name)) return false;
  if (mk.precision() != clustersim::MeasuredKernel::ANY && mk.precision() != to_measured(p)) {
    return false;
  }
  switch (k.kind) {
    case KernelKind::kGemm:
      return dim_matches(mk.m(), k.m) && dim_matches(mk.n(), k.n) && dim_matches(mk.k(), k.k) &&
             dim_matches(mk.batch(), k.batch);
    case KernelKind::kAttention:
      return dim_matches(mk.m(), k.seq_q) && dim_matches(mk.n(), k.seq_kv) &&
             dim_matches(mk.k(), k.head_dim) && dim_matches(mk.batch(), k.heads) &&
             (!mk.has_backward() || mk.backward() == k.backward);
    case KernelKind::kMemoryBound:
      return mk.bytes() == 0 || mk.bytes() == k.bytes;
  }
  return false;
}

// HBM bytes an attention kernel moves outside its main loop (see kernel_cost.h).
struct AttentionTraffic {
  double tile_io = 0;  // each CTA's resident tiles, read before its loop and written after it
  double helpers = 0;  // the backward's preprocess and postprocess kernels
};

// Scores an attention kernel's FLOPs count: batch x heads x s_q x s_kv, halved when causal.
double counted_scores(const Kernel& a) {
  return static_cast<double>(a.heads) * static_cast<double>(a.seq_q) *
         static_cast<double>(a.seq_kv) * (a.causal ? 0.5 : 1.0);
}

// head_dim + v_head_dim, back from kernel.h's FLOP count (2 x width FLOPs per score forward,
// 2.5 x that backward), so that kernels read back from traces or cut into ring pieces (a slice
// of seq_kv with its share of the FLOPs) get the same terms. 0 for a degenerate shape.
double score_width(const Kernel& a) {
  const double scores = counted_scores(a);
  if (!(scores > 0)) return 0;
  return (a.backward ? a.flops / 2.5 : a.flops) / (2.0 * scores);
}

// `e` is the bytes of one input or output element.
AttentionTraffic attention_traffic(const Kernel& a, double e) {
  const double bh = static_cast<double>(a.heads);
  const double sq = static_cast<double>(a.seq_q);
  const double skv = static_cast<double>(a.seq_kv);
  if (!(bh > 0 && sq > 0 && skv > 0)) return {};
  const double widths = score_width(a);
  const double d = static_cast<double>(a.head_dim);
  const double dv = std::max(widths - d, 0.0);
  const double rows = bh * sq;
  if (!a.backward) return {.tile_io = e * rows * widths};  // Q in, O out
  // K and V in, dK and dV out, per query head's CTAs (GQA heads each accumulate their own).
  AttentionTraffic t{.tile_io = 2.0 * e * bh * skv * widths};
  // Preprocess reads O and dO, writes one fp32 per row and zeroes the fp32 dQ accumulator;
  // postprocess reads the accumulator and writes dQ (FlashAttention-2 and -3 backward).
  t.helpers = e * rows * (2.0 * dv + d) + 4.0 * rows + 2.0 * 4.0 * rows * d;
  return t;
}

// Running clock over the clock a figure was measured at, both as fractions of the peak clock.
double clock_factor(double ratio, bool sustained_clocks, bool measured_sustained) {
  return (sustained_clocks ? ratio : 1.0) / (measured_sustained ? ratio : 1.0);
}

}  // namespace

KernelCostOptions cost_options(const clustersim::EffectsConfig& effects) {
  KernelCostOptions o;
  o.sustained_clocks = effects.sustained_clocks();
  o.gemm_pipeline_fill = effects.gemm_pipeline_fill();
  o.attention_tile_io = effects.attention_tile_io();
  o.attention_causal_diagonal = effects.attention_causal_diagonal();
  o.attention_backward_helpers = effects.attention_backward_helpers();
  o.attention_causal_tail = effects.attention_causal_tail();
  o.attention_causal_backward_mask = effects.attention_causal_backward_mask();
  o.attention_softmax_exp = effects.attention_softmax_exp();
  o.unvectorized_elementwise = effects.unvectorized_elementwise();
  o.multi_tensor_apply = effects.multi_tensor_apply();
  o.moe_token_permute_rate = effects.moe_token_permute_rate();
  return o;
}

KernelCostOptions cost_options(const clustersim::RunConfig& config) {
  KernelCostOptions o = cost_options(config.effects());
  o.fa2_attention =
      config.resolved_stack().attention() == clustersim::StackProfile::FLASH_ATTENTION_2;
  return o;
}

KernelCostModel::KernelCostModel(const GpuProfile& profile, KernelCostOptions options)
    : profile_(profile),
      options_(options),
      launch_(Time::from_us(profile.kernel_launch_overhead_us())),
      bw_(achievable_hbm_bandwidth(profile).in_bytes_per_s()),
      unvectorized_rate_(options.unvectorized_elementwise
                             ? profile.unvectorized_elementwise_gelems_per_s() * 1e9
                             : 0.0),
      multi_tensor_bw_(options.multi_tensor_apply && profile.has_multi_tensor_hbm_efficiency()
                           ? profile.hbm_bandwidth_tbps() * 1e12 *
                                 profile.multi_tensor_hbm_efficiency()
                           : bw_),
      token_permute_bw_(options.moe_token_permute_rate && profile.has_token_permute_tbps()
                            ? std::min(bw_, profile.token_permute_tbps() * 1e12)
                            : bw_),
      gemm_tiles_(gemm_tiles(profile)) {
  const double ratio = sustained_clock_ratio(profile);
  gemm_clock_ =
      clock_factor(ratio, options.sustained_clocks, profile.gemm().measured_at_sustained_clock());
}

double KernelCostModel::gemm_ceiling(Precision precision) const {
  const auto& g = profile_.gemm();
  switch (precision) {
    case Precision::kFp8:
      return gemm_clock_ * (has_fp8(profile_) ? g.efficiency_fp8() : g.efficiency_bf16());
    case Precision::kFp32:
      return gemm_clock_ * g.efficiency_fp32();
    case Precision::kMxfp8:
      return gemm_clock_ * (g.has_efficiency_mxfp8() ? g.efficiency_mxfp8() : g.efficiency_fp8());
    case Precision::kNvfp4:
      return gemm_clock_ * (g.has_efficiency_nvfp4() ? g.efficiency_nvfp4() : g.efficiency_fp8());
    case Precision::kBf16:
      break;
  }
  return gemm_clock_ * g.efficiency_bf16();
}

double KernelCostModel::gemm_shape_efficiency(const Kernel& g, Precision precision) const {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) return 0;
  const double tiling = best_tiling(g, gemm_tiles_, profile_.sm_count()).use;
  const double k = static_cast<double>(g.k);
  return gemm_ceiling(precision) * tiling * (k / (k + profile_.gemm().k_half()));
}

bool KernelCostModel::attention_in_fp8(const Kernel& kernel, Precision precision) const {
  // FlashAttention-3 has an FP8 forward pass only; its backward stays in BF16.
  return options_.fp8_attention && precision == Precision::kFp8 && has_fp8(profile_) &&
         !kernel.backward && profile_.attention_fp8().has_forward();
}

const clustersim::AttentionEfficiency& KernelCostModel::attention_figures(
    const Kernel& a, Precision precision) const {
  if (attention_in_fp8(a, precision)) return profile_.attention_fp8();
  if (options_.fa2_attention && profile_.has_attention_fa2_bf16())
    return profile_.attention_fa2_bf16();
  return profile_.attention_bf16();
}

int64_t KernelCostModel::attention_blocks(int64_t length) const {
  return ceil_div(std::max<int64_t>(length, 1), std::max<int64_t>(profile_.gemm().tile_m(), 1));
}

int64_t KernelCostModel::attention_ctas(const Kernel& a) const {
  return std::max<int64_t>(a.heads, 1) * attention_blocks(a.seq_q);
}

double KernelCostModel::attention_wave_use(const Kernel& a) const {
  return wave_use(attention_ctas(a), profile_.sm_count());
}

double KernelCostModel::attention_efficiency(const Kernel& a, Precision precision) const {
  const auto& eff = attention_figures(a, precision);
  const double clock = clock_factor(sustained_clock_ratio(profile_), options_.sustained_clocks,
                                    eff.measured_at_sustained_clock());
  const double base = (a.backward ? eff.backward() : eff.forward()) * clock;
  return base * attention_wave_use(a);
}

double KernelCostModel::attention_softmax_seconds(const Kernel& a, Precision precision) const {
  if (!options_.attention_softmax_exp || a.kind != KernelKind::kAttention) return 0;
  if (measured(a, precision)) return 0;
  const auto& figures = attention_figures(a, precision);
  const double measured_width = 2.0 * figures.head_dim();
  const double width = score_width(a);
  if (!(measured_width > 0) || !(width > 0) || width >= measured_width) return 0;
  // Exponentials per second: the SFU rate of every SM at the clock tensor work runs at.
  const double clock_hz = profile_.clocks().peak_clock_mhz() * 1e6 *
                          (options_.sustained_clocks ? sustained_clock_ratio(profile_) : 1.0);
  const double rate =
      profile_.sfu_ops_per_clock_per_sm() * static_cast<double>(profile_.sm_count()) * clock_hz;
  if (!(rate > 0)) return 0;
  // One exponential per computed score forward; the backward recomputes it (P = exp(S - L)) and
  // may spend more per score outside the tensor cores (backward_scalar_per_score).
  const double per_score = a.backward ? figures.backward_scalar_per_score() : 1.0;
  const double scores = counted_scores(a) * causal_diagonal_factor(a) * per_score;
  return scores * (1.0 - width / measured_width) / (rate * attention_wave_use(a));
}

double KernelCostModel::causal_diagonal_factor(const Kernel& a) const {
  if (!a.causal || !options_.attention_causal_diagonal) return 1.0;
  // Each query block computes one diagonal block in full where the FLOPs count half of it: half
  // a block per query block over the half of n_q x n_kv counted, 1 / n_kv (a context-parallel
  // chunk of queries sees all n_kv key blocks).
  return 1.0 + 1.0 / static_cast<double>(attention_blocks(a.seq_kv));
}

double KernelCostModel::cta_loop_blocks(const Kernel& a) const {
  // Forward over the keys, backward over the queries; causal counts half of them plus what the
  // diagonal adds.
  return static_cast<double>(attention_blocks(a.backward ? a.seq_q : a.seq_kv)) *
         (a.causal ? 0.5 : 1.0) * causal_diagonal_factor(a);
}

double KernelCostModel::causal_mask_factor(const Kernel& a, Precision precision) const {
  const auto& figures = attention_figures(a, precision);
  const double extra = figures.causal_mask_blocks_backward();
  if (!a.causal || !a.backward || !options_.attention_causal_backward_mask || !(extra > 0))
    return 1.0;
  // The extra is a time, given in blocks at the figures' head width: a narrower head's blocks
  // take less tensor-core time, so the same time is more of them.
  const double measured_width = 2.0 * figures.head_dim();
  const double width = score_width(a);
  const double scale = measured_width > 0 && width > 0 ? measured_width / width : 1.0;
  const double blocks = cta_loop_blocks(a);
  return (blocks + extra * scale) / blocks;
}

double KernelCostModel::cta_fixed_factor(const Kernel& a, Precision precision) const {
  const auto& figures = attention_figures(a, precision);
  const double fixed = a.backward && figures.has_cta_fixed_blocks_backward()
                           ? figures.cta_fixed_blocks_backward()
                           : figures.cta_fixed_blocks();
  if (!options_.attention_tile_io || !(fixed > 0)) return 1.0;
  const double blocks = cta_loop_blocks(a);
  return (blocks + fixed) / blocks;
}

double KernelCostModel::causal_tail_factor(const Kernel& a, Precision precision) const {
  if (!a.causal || a.backward || !options_.attention_causal_tail ||
      !attention_figures(a, precision).causal_shortest_first())
    return 1.0;
  // Greedy list scheduling of CTAs whose loops grow 1 .. n blocks, the longest last: the last
  // starts once the others' work is spread over the SMs and runs its n blocks after that
  // (Graham's bound, W / P + n (1 - 1 / P)), where balanced waves would take W / P. The wave use
  // the efficiency already charges is that balance's, so it is taken back out here.
  const double sms = static_cast<double>(profile_.sm_count());
  const double n = static_cast<double>(attention_blocks(a.seq_kv));
  const double balanced = static_cast<double>(attention_ctas(a)) * cta_loop_blocks(a) / sms;
  return attention_wave_use(a) * (balanced + n * (1.0 - 1.0 / sms)) / balanced;
}

double KernelCostModel::attention_seconds(const Kernel& a, Precision precision) const {
  const double eff = attention_efficiency(a, precision);
  const double loop = eff > 0
                          ? a.flops * causal_diagonal_factor(a) * causal_mask_factor(a, precision) *
                                cta_fixed_factor(a, precision) * causal_tail_factor(a, precision) /
                                (compute_peak(a, precision) * eff)
                          : 0.0;
  // 16-bit inputs and outputs (kernel.h's attention callers), 8-bit when it runs in FP8.
  const AttentionTraffic traffic = attention_traffic(a, attention_in_fp8(a, precision) ? 1.0 : 2.0);
  const double io = options_.attention_tile_io ? traffic.tile_io / bw_ : 0.0;
  const double softmax = attention_softmax_seconds(a, precision);
  double seconds = std::max(loop + softmax + io, a.bytes / bw_);
  if (options_.attention_backward_helpers && traffic.helpers > 0) {
    seconds += traffic.helpers / bw_ + 2.0 * launch_.as_seconds();
  }
  return seconds;
}

double KernelCostModel::compute_peak(const Kernel& kernel, Precision precision) const {
  switch (kernel.kind) {
    case KernelKind::kGemm:
      return peak_flops(profile_, precision);
    case KernelKind::kAttention:
      if (attention_in_fp8(kernel, precision)) return peak_flops(profile_, Precision::kFp8);
      return peak_flops(profile_,
                        precision == Precision::kFp32 ? Precision::kFp32 : Precision::kBf16);
    case KernelKind::kMemoryBound:
      break;
  }
  return peak_flops(profile_, Precision::kBf16);
}

const clustersim::MeasuredKernel* KernelCostModel::measured(const Kernel& kernel,
                                                            Precision precision) const {
  for (const auto& mk : profile_.measured_kernels()) {
    if (matches(mk, kernel, precision)) return &mk;
  }
  return nullptr;
}

double KernelCostModel::token_permute_extra_seconds(const Kernel& kernel,
                                                    Precision precision) const {
  if (!kernel.token_permute || measured(kernel, precision)) return 0;
  Kernel streaming = kernel;
  streaming.token_permute = false;
  return model_seconds(kernel, precision) - model_seconds(streaming, precision);
}

double KernelCostModel::memory_bandwidth(const Kernel& kernel) const {
  if (kernel.multi_tensor) return multi_tensor_bw_;
  return kernel.token_permute ? token_permute_bw_ : bw_;
}

double KernelCostModel::model_seconds(const Kernel& kernel, Precision precision) const {
  if (kernel.kind == KernelKind::kAttention) return attention_seconds(kernel, precision);
  const double memory = kernel.bytes / memory_bandwidth(kernel);
  const double peak = compute_peak(kernel, precision);
  double eff = 1.0;
  double fill = 0.0;
  if (kernel.kind == KernelKind::kGemm) {
    eff = gemm_shape_efficiency(kernel, precision);
    if (options_.gemm_pipeline_fill) fill = profile_.hbm_latency_ns() * 1e-9;
  }
  const double compute = kernel.flops > 0 && eff > 0 ? kernel.flops / (peak * eff) : 0.0;
  const double elements = kernel.kind == KernelKind::kMemoryBound && unvectorized_rate_ > 0
                              ? kernel.unvectorized_elements / unvectorized_rate_
                              : 0.0;
  return std::max({compute, memory, elements}) + fill;
}

Time KernelCostModel::time(const Kernel& kernel, Precision precision) const {
  // A measured time is the whole kernel as seen on the GPU, launch included.
  if (const auto* mk = measured(kernel, precision)) return Time::from_us(mk->time_us());
  return Time::from_seconds(model_seconds(kernel, precision)) + launch_;
}

double KernelCostModel::efficiency(const Kernel& kernel, Precision precision) const {
  const auto* mk = measured(kernel, precision);
  const double seconds = mk ? mk->time_us() * 1e-6 : model_seconds(kernel, precision);
  if (!(seconds > 0)) return 0;
  if (kernel.kind == KernelKind::kMemoryBound) {
    return kernel.bytes / (seconds * hbm_bandwidth(profile_).in_bytes_per_s());
  }
  return kernel.flops / (seconds * compute_peak(kernel, precision));
}

int64_t gemm_ctas(const Kernel& g, std::span<const GemmTile> tiles, int64_t sms) {
  if (g.kind != KernelKind::kGemm || g.m <= 0 || g.n <= 0) return 0;
  const GemmTile t = best_tiling(g, tiles, sms).tile;
  if (t.m <= 0 || t.n <= 0) return 0;
  return ceil_div(g.m, t.m) * ceil_div(g.n, t.n) * std::max<int64_t>(g.batch, 1);
}

int64_t KernelCostModel::gemm_ctas(const Kernel& g) const {
  return compute::gemm_ctas(g, gemm_tiles_, profile_.sm_count());
}

}  // namespace cs::compute
