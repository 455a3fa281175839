#include "sim/workload/memory.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/workload/model_math.h"

namespace cs::workload {
namespace {

using clustersim::ParallelConfig;

// Divisor of the norm / dropout / residual regions: tp under sequence parallelism, else 1.
double sp_divisor(const ParallelConfig& p) {
  return p.sequence_parallel() && p.tp() > 1 ? static_cast<double>(p.tp()) : 1.0;
}

// Tokens of one microbatch on one GPU before any sequence-parallel split: b·s/cp.
double local_tokens(const clustersim::RunConfig& config) {
  return static_cast<double>(config.parallel().microbatch_size()) * config.model().seq_length() /
         config.parallel().cp();
}

// One layer's activations as if nothing were recomputed and the scores were stored when
// `with_scores`: the working set that FULL recompute rematerialises during backward.
double layer_bytes_no_recompute(const clustersim::RunConfig& config, bool with_scores) {
  const auto& m = config.model();
  const auto& p = config.parallel();
  const double t = p.tp();
  const double tokens = local_tokens(config);
  const double h = m.hidden_size();
  const double kv_width = static_cast<double>(kv_heads(m) * head_dim(m));
  const double ffn = m.ffn_hidden_size();
  // Norm inputs 2+2, QKV input 2, MLP input 2 (16-bit) and two 1-byte dropout masks.
  const double replicated = 10.0 * tokens * h / sp_divisor(p);
  const double mlp_hidden =
      (m.activation() == clustersim::ModelConfig::SWIGLU ? 6.0 : 4.0) * tokens * ffn;
  // Q and the projection input (2 bytes x h each), K and V (2 bytes x kv width each).
  const double split = (4.0 * tokens * h + 4.0 * tokens * kv_width + mlp_hidden) / t;
  const double scores =
      with_scores ? 5.0 * (m.num_heads() / t) * tokens * static_cast<double>(m.seq_length()) : 0.0;
  return replicated + split + scores;
}

double score_bytes(const clustersim::RunConfig& config) {
  return layer_bytes_no_recompute(config, true) - layer_bytes_no_recompute(config, false);
}

Bytes to_bytes(double b) {
  return static_cast<Bytes>(std::llround(b));
}

}  // namespace

ModelStateBytes model_state_bytes(double params, int32_t zero_stage, int64_t shards) {
  const double n = shards > 0 ? static_cast<double>(shards) : 1.0;
  ModelStateBytes s;
  s.weights = 2.0 * params / (zero_stage >= 3 ? n : 1.0);
  s.gradients = 2.0 * params / (zero_stage >= 2 ? n : 1.0);
  s.optimizer = 12.0 * params / (zero_stage >= 1 ? n : 1.0);
  return s;
}

ModelStateDetail model_state_detail(double params, int32_t zero_stage, int64_t shards,
                                    StatePrecision precision) {
  const double n = shards > 0 ? static_cast<double>(shards) : 1.0;
  const double opt = zero_stage >= 1 ? n : 1.0;
  const bool fp32 = precision == StatePrecision::kFp32;
  ModelStateDetail d;
  d.weights = (fp32 ? 4.0 : 2.0) * params / (zero_stage >= 3 ? n : 1.0);
  d.gradients = (fp32 ? 4.0 : 2.0) * params / (zero_stage >= 2 ? n : 1.0);
  d.master = fp32 ? 0.0 : 4.0 * params / opt;
  d.adam_m = 4.0 * params / opt;
  d.adam_v = 4.0 * params / opt;
  return d;
}

int32_t checkpoint_segments(int32_t layers, int32_t k) {
  if (k <= 0) return layers;
  return (layers + k - 1) / k;
}

double layer_activation_bytes(const clustersim::RunConfig& config, const MemoryOptions& options) {
  const auto& p = config.parallel();
  switch (p.recompute()) {
    case ParallelConfig::FULL:
      return 2.0 * local_tokens(config) * config.model().hidden_size() / sp_divisor(p);
    case ParallelConfig::SELECTIVE:
      return layer_bytes_no_recompute(config, false);
    default:
      return layer_bytes_no_recompute(config, !options.flash_attention);
  }
}

double embedding_activation_bytes(const clustersim::RunConfig& config) {
  return local_tokens(config) * config.model().hidden_size() / sp_divisor(config.parallel());
}

double head_activation_bytes(const clustersim::RunConfig& config) {
  const auto& p = config.parallel();
  const double tokens = local_tokens(config);
  return 4.0 * tokens * config.model().hidden_size() / sp_divisor(p) +
         4.0 * tokens * static_cast<double>(padded_vocab(config.model(), p.tp())) / p.tp();
}

MemoryBreakdown estimate_stage_memory(const clustersim::RunConfig& config, int32_t stage,
                                      int32_t in_flight, const MemoryOptions& options) {
  const auto& m = config.model();
  const auto& p = config.parallel();
  MemoryBreakdown out;
  out.stage = stage;
  out.params = stage_params(config, stage);
  const int64_t shards = static_cast<int64_t>(p.dp()) * p.cp();
  const ModelStateBytes states =
      model_state_bytes(static_cast<double>(out.params), p.zero_stage(), shards);
  out.weights = to_bytes(states.weights);
  out.gradients = to_bytes(states.gradients);
  out.optimizer = to_bytes(states.optimizer);

  const std::vector<int32_t> pieces = layers_per_piece(config);
  int32_t chunk_layers = 0;
  for (size_t j = stage; j < pieces.size(); j += static_cast<size_t>(p.pp())) {
    chunk_layers = std::max(chunk_layers, pieces[j]);
  }
  const int32_t k = p.checkpoint_every_k_layers();
  const bool segmented = k > 0 && p.recompute() != ParallelConfig::FULL;
  const double full_input = 2.0 * local_tokens(config) * m.hidden_size() / sp_divisor(p);
  double per_pass = segmented ? checkpoint_segments(chunk_layers, k) * full_input
                              : chunk_layers * layer_activation_bytes(config, options);
  if (stage == 0) per_pass += embedding_activation_bytes(config);
  if (stage == p.pp() - 1) per_pass += head_activation_bytes(config);
  out.activations = to_bytes(std::max(in_flight, 0) * per_pass);

  double temporary = 0;
  if (p.recompute() == ParallelConfig::FULL) {
    temporary += layer_bytes_no_recompute(config, !options.flash_attention);
  } else if (p.recompute() == ParallelConfig::SELECTIVE && !options.flash_attention) {
    temporary += score_bytes(config);
  }
  if (segmented) {
    temporary += std::min(k, chunk_layers) * layer_activation_bytes(config, options);
  }
  if (p.zero_stage() >= 3 && shards > 1) {
    const ParamCounts counts = count_params(m);
    temporary += 2.0 * 2.0 *
                 static_cast<double>((counts.attention_per_layer + counts.mlp_per_layer) / p.tp() +
                                     counts.norms_per_layer);
  }
  if (p.zero_stage() >= 2 && shards > 1) {
    temporary += 2.0 * static_cast<double>(std::min<int64_t>(p.dp_bucket_params(), out.params));
  }
  out.temporary = to_bytes(temporary);

  using clustersim::OffloadConfig;
  const auto& off = config.offload();
  auto move = [&](OffloadConfig::Target target, Bytes& bytes) {
    if (target == OffloadConfig::NONE) return;
    (target == OffloadConfig::NVME ? out.host_nvme : out.host_dram) += bytes;
    bytes = 0;
  };
  move(off.optimizer(), out.optimizer);
  move(off.parameters(), out.weights);
  return out;
}

MemoryBreakdown estimate_memory(const clustersim::RunConfig& config,
                                std::span<const int32_t> in_flight_per_stage,
                                const MemoryOptions& options) {
  MemoryBreakdown peak;
  bool first = true;
  for (int32_t s = 0; s < config.parallel().pp(); ++s) {
    const int32_t held =
        static_cast<size_t>(s) < in_flight_per_stage.size() ? in_flight_per_stage[s] : 0;
    MemoryBreakdown b = estimate_stage_memory(config, s, held, options);
    if (first || b.total() > peak.total()) peak = b;
    first = false;
  }
  return peak;
}

MemoryBreakdown estimate_memory(const clustersim::RunConfig& config, int32_t in_flight_microbatches,
                                const MemoryOptions& options) {
  const std::vector<int32_t> held(static_cast<size_t>(std::max(config.parallel().pp(), 0)),
                                  in_flight_microbatches);
  return estimate_memory(config, std::span<const int32_t>(held), options);
}

}  // namespace cs::workload
