#include "sim/workload/memory.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "sim/compute/precision_formats.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/model_math.h"

namespace cs::workload {
namespace {

using clustersim::ModelConfig;
using clustersim::ParallelConfig;

// Divisor of the norm / dropout / residual regions: tp under sequence parallelism, else 1.
double sp_divisor(const ParallelConfig& p) {
  return sequence_parallel_on(p) ? static_cast<double>(p.tp()) : 1.0;
}

// Tokens of one microbatch on one GPU before any sequence-parallel split: b·s/cp.
double local_tokens(const clustersim::RunConfig& config) {
  return static_cast<double>(config.parallel().microbatch_size()) * config.model().seq_length() /
         config.parallel().cp();
}

bool has_hidden_dropout(const ModelConfig& m) {
  return m.hidden_dropout() > 0;
}

// Bytes per element a quantized linear (FP8, MXFP8, NVFP4) keeps of its input for the weight
// gradient (the copy it multiplied with, its block scales included: MXFP8 1 + 1/32, NVFP4
// 0.5 + 1/16), else 2.
double linear_input_bytes(const clustersim::RunConfig& config) {
  return compute::format_of(config.precision()).quantized &&
                 config.effects().memory_fp8_linear_inputs()
             ? compute::stored_bytes_per_element(config.precision())
             : 2.0;
}

// Bytes per element of an MLP activation's kept input: 1 under activation_fp8_input_store.
double activation_input_bytes(const clustersim::RunConfig& config) {
  return config.precision() == clustersim::FP8 && config.parallel().activation_fp8_input_store()
             ? 1.0
             : 2.0;
}

// Bytes per token an MLP of `ffn` columns on this GPU keeps: the activation's input (gate and up
// for SwiGLU), and fc2's input (the activation's output) unless `recompute_act`.
double mlp_bytes_per_token(const clustersim::RunConfig& config, double ffn, bool recompute_act) {
  const bool swiglu = config.model().activation() == ModelConfig::SWIGLU;
  const double act_in = (swiglu ? 2.0 : 1.0) * activation_input_bytes(config) * ffn;
  return act_in + (recompute_act ? 0.0 : linear_input_bytes(config) * ffn);
}

// Bytes per token of the attention core's own saved tensors (beyond Q, K, V and O): FLASH's fp32
// log-sum-exp per local head; UNFUSED's softmax output over all s keys, plus its dropout mask and
// output when attention dropout is on.
double core_attention_bytes_per_token(const clustersim::RunConfig& config) {
  const auto& m = config.model();
  const double heads = static_cast<double>(m.num_heads()) / config.parallel().tp();
  if (m.attention() == ModelConfig::FLASH) return 4.0 * heads;
  const double per_score = m.attention_dropout() > 0 ? 5.0 : 2.0;
  return per_score * heads * static_cast<double>(m.seq_length());
}

// Bytes the attention block keeps split over TP ranks, before the / tp: Q and the projection input
// (2 bytes x a·d each; the input at linear_input_bytes()), K and V (2 bytes x kv·d each). MLA: Q
// and K of a·qk and V and the projection input of a·v (keys and values per head, no GQA
// sharing); MLA_UP_PROJ recomputation drops Q, K and V.
double attention_split_bytes(const clustersim::RunConfig& config, double tokens) {
  const ModelConfig& m = config.model();
  const HeadDims d = head_dims(m);
  const double a = m.num_heads();
  const double proj_in = linear_input_bytes(config);
  if (m.has_mla()) {
    const double qkv = recomputes(config.parallel(), ParallelConfig::MLA_UP_PROJ)
                           ? 0.0
                           : 2.0 * a * static_cast<double>(2 * d.qk + d.v);
    return tokens * (qkv + proj_in * a * static_cast<double>(d.v));
  }
  const double q_width = a * static_cast<double>(d.qk);
  const double kv_width = static_cast<double>(kv_heads(m) * d.qk);
  return tokens * ((2.0 + proj_in) * q_width + 4.0 * kv_width);
}

// MLA's latents, on every TP rank for its own tokens (/ sp): each LayerNorm + column-parallel up
// projection keeps its input and its norm output (TE _LayerNormLinear), 4·q_lora + 4·kv_lora
// bytes per token; MLA_UP_PROJ recomputation drops the norm outputs. The down projections'
// input is ln1's output, already counted with the norms.
double mla_latent_bytes(const clustersim::RunConfig& config, double tokens) {
  const auto& m = config.model();
  if (!m.has_mla()) return 0.0;
  const double widths = static_cast<double>(m.mla().q_lora_rank()) + m.mla().kv_lora_rank();
  const double kept = recomputes(config.parallel(), ParallelConfig::MLA_UP_PROJ) ? 2.0 : 4.0;
  return kept * widths * tokens / sp_divisor(config.parallel());
}

// What a MoE block keeps on one GPU for backward, for `tokens` = b·s/cp, with balanced routing
// (imbalance is not charged): router scores (fp32, T_in x E); per routed copy (T_in x top_k,
// gathered over ETP) the permuted tokens (fc1's input), the experts' MLP tensors
// (mlp_bytes_per_token(), the fc2 input dropped under MOE_ACT recomputation) and its fp32
// routing weight: Megatron-Core's experts apply the weights in their activation
// (activation_func_with_probs in experts.py), so unpermute keeps no fc2 output; and the shared
// experts' MLP tensors, like a dense MLP's. A MoE model's every layer is charged as a MoE layer
// (its first_k_dense layers' dense MLP is not told apart).
double moe_block_bytes(const clustersim::RunConfig& config, double tokens) {
  const auto& m = config.model();
  const auto& moe = m.moe();
  const auto& p = config.parallel();
  const double t_in = tokens / sp_divisor(p);
  const int32_t etp = expert_tp_of(p);
  const double copies = t_in * moe.top_k() * (etp > 1 ? p.tp() : 1);
  const double ffn_e = static_cast<double>(moe.expert_ffn_hidden_size()) / etp;
  const double h = m.hidden_size();
  const double per_copy =
      linear_input_bytes(config) * h +
      mlp_bytes_per_token(config, ffn_e, recomputes(p, ParallelConfig::MOE_ACT)) + 4.0;
  const double shared =
      tokens *
      mlp_bytes_per_token(config, static_cast<double>(moe.shared_expert_ffn_hidden_size()) / p.tp(),
                          false);
  return 4.0 * t_in * moe.num_experts() + copies * per_copy + shared;
}

// One layer's activations as if nothing were recomputed, with the attention core's own tensors
// when `with_core`: the working set that FULL recompute rematerialises during backward.
double layer_bytes_no_recompute(const clustersim::RunConfig& config, bool with_core) {
  const auto& m = config.model();
  const auto& p = config.parallel();
  const double t = p.tp();
  const double tokens = local_tokens(config);
  const double h = m.hidden_size();
  const double ffn = m.ffn_hidden_size();
  // Two norms' inputs and outputs (16-bit; LAYERNORM recomputation drops the outputs), and two
  // 1-byte dropout masks where there is dropout.
  const double masks = has_hidden_dropout(m) ? 2.0 : 0.0;
  const double norms = recomputes(p, ParallelConfig::LAYERNORM) ? 4.0 : 8.0;
  const double replicated =
      (norms + masks) * tokens * h / sp_divisor(p) + mla_latent_bytes(config, tokens);
  const double mlp_hidden = tokens * mlp_bytes_per_token(config, ffn, false);
  const double split = attention_split_bytes(config, tokens) / t +
                       (m.has_moe() ? moe_block_bytes(config, tokens) : mlp_hidden / t);
  const double core = with_core ? core_attention_bytes_per_token(config) * tokens : 0.0;
  return replicated + split + core;
}

// The attention core's tensors that SELECTIVE recompute rematerialises, when they are scores.
double score_bytes(const clustersim::RunConfig& config) {
  if (config.model().attention() == ModelConfig::FLASH) return 0.0;
  return layer_bytes_no_recompute(config, true) - layer_bytes_no_recompute(config, false);
}

Bytes to_bytes(double b) {
  return static_cast<Bytes>(std::llround(b));
}

// The stage's model-chunk layer counts in chunk order (model_piece() of each chunk).
std::vector<int32_t> chunk_layers_of(const clustersim::RunConfig& config, int32_t stage) {
  const std::vector<int32_t> pieces = layers_per_piece(config);
  const auto& p = config.parallel();
  std::vector<int32_t> out;
  for (int32_t c = 0; c < p.virtual_stages(); ++c) {
    out.push_back(
        pieces.at(static_cast<size_t>(model_piece(pipeline_schedule_of(p), stage, c, p.pp()))));
  }
  return out;
}

// Whether the stage holds the model's first piece (embedding) or its last (head).
bool holds_piece(const clustersim::RunConfig& config, int32_t stage, bool last) {
  const auto& p = config.parallel();
  const PipelineSchedule schedule = pipeline_schedule_of(p);
  const int32_t want = last ? model_pieces(schedule, p.pp(), p.virtual_stages()) - 1 : 0;
  for (int32_t c = 0; c < p.virtual_stages(); ++c)
    if (model_piece(schedule, stage, c, p.pp()) == want) return true;
  return false;
}

bool segmented(const ParallelConfig& p) {
  return p.checkpoint_every_k_layers() > 0 && p.recompute() != ParallelConfig::FULL;
}

// Activations one forward pass of a chunk of `layers` layers keeps, with the embedding / head
// extras when the chunk is the model's first / last piece.
double pass_bytes(const clustersim::RunConfig& config, int32_t layers, bool first_piece,
                  bool last_piece) {
  const auto& p = config.parallel();
  const double full_input =
      2.0 * local_tokens(config) * config.model().hidden_size() / sp_divisor(p);
  double bytes = segmented(p)
                     ? checkpoint_segments(layers, p.checkpoint_every_k_layers()) * full_input
                     : layers * layer_activation_bytes(config);
  if (first_piece) bytes += embedding_activation_bytes(config);
  if (last_piece) bytes += head_activation_bytes(config);
  if (last_piece) bytes += config.model().mtp_layers() * mtp_activation_bytes(config);
  return bytes;
}

// Bytes live at a stage's peak: activations, and unsharded gradient buffers of chunks between
// their first and last backward (holds_chunk_grads_between_backwards()).
struct LiveBytes {
  double activations = 0, gradient_buffers = 0;
  double total() const { return activations + gradient_buffers; }
};

// Each chunk's unsharded gradient buffer, or none when gradients are not held per chunk.
std::vector<double> chunk_gradient_buffers(const clustersim::RunConfig& config, int32_t stage) {
  const auto& par = config.parallel();
  std::vector<double> out(static_cast<size_t>(par.virtual_stages()), 0.0);
  if (!holds_chunk_grads_between_backwards(par)) return out;
  for (int32_t c = 0; c < par.virtual_stages(); ++c)
    out[static_cast<size_t>(c)] =
        grad_bytes(par) * static_cast<double>(chunk_params(config, stage, c));
  return out;
}

// The largest sum of pass_bytes() over the microbatch-chunks `order` holds at once, with the
// gradient buffers live beside them.
LiveBytes exact_peak_bytes(const clustersim::RunConfig& config, int32_t stage,
                           std::span<const WorkItem> order) {
  const auto& par = config.parallel();
  const PipelineSchedule schedule = pipeline_schedule_of(par);
  const std::vector<int32_t> chunks = chunk_layers_of(config, stage);
  const int32_t last_piece = model_pieces(schedule, par.pp(), par.virtual_stages()) - 1;
  std::vector<double> chunk_bytes;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const int32_t piece = model_piece(schedule, stage, static_cast<int32_t>(c), par.pp());
    chunk_bytes.push_back(pass_bytes(config, chunks[c], piece == 0, piece == last_piece));
  }
  const std::vector<double> buffers = chunk_gradient_buffers(config, stage);
  // Whether a (microbatch, chunk) has its W as an item of its own, flat: every layout the
  // planner ranks comes through here.
  int32_t microbatches = 0, chunk_count = 0;
  for (const WorkItem& item : order) {
    microbatches = std::max(microbatches, item.microbatch + 1);
    chunk_count = std::max(chunk_count, item.chunk + 1);
  }
  const auto pass = [&](const WorkItem& item) {
    return static_cast<size_t>(item.microbatch) * static_cast<size_t>(chunk_count) +
           static_cast<size_t>(item.chunk);
  };
  std::vector<bool> split(static_cast<size_t>(microbatches) * static_cast<size_t>(chunk_count));
  for (const WorkItem& item : order)
    if (item.phase == Phase::kWeightGrad) split[pass(item)] = true;
  // The item that frees a pass's activations also makes its weight gradients.
  auto frees = [&](const WorkItem& item) {
    return item.phase == (split[pass(item)] ? Phase::kWeightGrad : Phase::kBackward);
  };
  std::vector<size_t> last_grad(buffers.size(), 0);
  for (size_t i = 0; i < order.size(); ++i)
    if (frees(order[i])) last_grad[static_cast<size_t>(order[i].chunk)] = i;
  std::vector<bool> live(buffers.size(), false);
  LiveBytes now, peak;
  for (size_t i = 0; i < order.size(); ++i) {
    const WorkItem& item = order[i];
    const auto c = static_cast<size_t>(item.chunk);
    if (item.phase == Phase::kForward) {
      now.activations += chunk_bytes.at(c);
    } else if (frees(item) && !live[c]) {
      live[c] = true;  // allocated before this item's activations are freed
      now.gradient_buffers += buffers[c];
    }
    if (now.total() > peak.total()) peak = now;
    if (item.phase != Phase::kForward && frees(item)) {
      now.activations -= chunk_bytes.at(c);
      if (i == last_grad[c]) now.gradient_buffers -= buffers[c];  // reduce-scattered, freed
    }
  }
  return peak;
}

// `in_flight` passes of the stage's largest chunk, each with the stage's embedding / head.
double upper_bound_activation_bytes(const clustersim::RunConfig& config, int32_t stage,
                                    int32_t in_flight) {
  const std::vector<int32_t> chunks = chunk_layers_of(config, stage);
  const int32_t largest = chunks.empty() ? 0 : *std::max_element(chunks.begin(), chunks.end());
  return std::max(in_flight, 0) * pass_bytes(config, largest, holds_piece(config, stage, false),
                                             holds_piece(config, stage, true));
}

}  // namespace

double grad_bytes(const ParallelConfig& parallel) {
  return parallel.grad_reduce_dtype() == ParallelConfig::GRAD_BF16 ? 2.0 : 4.0;
}

bool reduces_grads_every_microbatch(const ParallelConfig& parallel) {
  return parallel.zero_stage() >= 2 && parallel.dp() > 1 &&
         parallel.sharded_grad_reduce() == ParallelConfig::EVERY_MICROBATCH;
}

bool holds_chunk_grads_between_backwards(const ParallelConfig& parallel) {
  return parallel.zero_stage() >= 2 && static_cast<int64_t>(parallel.dp()) * parallel.cp() > 1 &&
         parallel.sharded_grad_reduce() == ParallelConfig::ONCE_PER_STEP;
}

ModelStateBytes model_state_bytes(double params, int32_t zero_stage, int64_t shards,
                                  double grad_bytes) {
  const double n = shards > 0 ? static_cast<double>(shards) : 1.0;
  ModelStateBytes s;
  s.weights = 2.0 * params / (zero_stage >= 3 ? n : 1.0);
  s.gradients = grad_bytes * params / (zero_stage >= 2 ? n : 1.0);
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
  return layers / k + (layers % k != 0);  // the ceiling, without layers + k overflowing
}

namespace {

// What op-level selective checkpointing keeps of a layer (bf16): its input, the outputs of its
// odd-numbered matmuls (forward_matrices: 1st, 3rd, ...), the fused attention's output and its
// fp32 log-sum-exp per query head (torchtitan's save list: aten.mm every other call, the SDPA
// ops). TP 1 only (the stacks that run it refuse TP).
double op_sac_layer_bytes(const clustersim::RunConfig& config) {
  const auto& m = config.model();
  const std::vector<MatrixShape> matrices = forward_matrices(config);
  double kept = static_cast<double>(m.hidden_size()) +
                static_cast<double>(m.num_heads()) * static_cast<double>(head_dims(m).v);
  for (std::size_t i = 0; i < matrices.size(); i += 2) kept += matrices[i].out;
  return local_tokens(config) * (2.0 * kept + 4.0 * static_cast<double>(m.num_heads()));
}

}  // namespace

double layer_activation_bytes(const clustersim::RunConfig& config) {
  const auto& p = config.parallel();
  switch (p.recompute()) {
    case ParallelConfig::OP_SELECTIVE:
      return op_sac_layer_bytes(config);
    case ParallelConfig::FULL:
      return 2.0 * local_tokens(config) * config.model().hidden_size() / sp_divisor(p);
    case ParallelConfig::SELECTIVE:
      return layer_bytes_no_recompute(config, false);
    default:
      return layer_bytes_no_recompute(config, true);
  }
}

double embedding_activation_bytes(const clustersim::RunConfig& config) {
  if (!has_hidden_dropout(config.model())) return 0.0;
  return local_tokens(config) * config.model().hidden_size() / sp_divisor(config.parallel());
}

double head_activation_bytes(const clustersim::RunConfig& config) {
  const auto& p = config.parallel();
  const double tokens = local_tokens(config);
  return 4.0 * tokens * config.model().hidden_size() / sp_divisor(p) +
         4.0 * tokens * static_cast<double>(padded_vocab(config.model(), p.tp())) / p.tp();
}

double mtp_activation_bytes(const clustersim::RunConfig& config) {
  // The two norms' inputs and the 2h-wide projection input on this GPU's tokens (bf16), then a
  // block and a head like the model's own.
  const double entry = 2.0 * 4.0 * local_tokens(config) * config.model().hidden_size() /
                       sp_divisor(config.parallel());
  return entry + layer_activation_bytes(config) + head_activation_bytes(config);
}

namespace {

// Per token, the largest backward working set of MLA's linears: output gradient + re-gathered
// input (SP) + full-sequence input gradient of each up projection (their inputs are the
// latents), the row-parallel output projection, and the down projections on this GPU's tokens.
double mla_working_set_per_token(const clustersim::RunConfig& config) {
  const auto& m = config.model();
  const double t = config.parallel().tp(), sp = sp_divisor(config.parallel());
  const double h = m.hidden_size(), a = m.num_heads() / t;
  const HeadDims d = head_dims(m);
  const double q_lora = m.mla().q_lora_rank(), kv_lora = m.mla().kv_lora_rank();
  const double q_in = q_lora > 0 ? q_lora : h;
  const double q_up =
      2.0 * a * static_cast<double>(d.qk) + (sp > 1.0 ? 2.0 * q_in : 0.0) + 2.0 * q_in;
  const double kv_up = 2.0 * a * static_cast<double>(m.mla().qk_nope_head_dim() + d.v) +
                       (sp > 1.0 ? 2.0 * kv_lora : 0.0) + 2.0 * kv_lora;
  const double proj = 2.0 * h + 2.0 * a * static_cast<double>(d.v);
  const double down = (2.0 * (kv_lora + m.mla().qk_rope_head_dim()) + 2.0 * h) / sp;
  return std::max({q_up, kv_up, proj, down});
}

// The same for the QKV and output projections of multi-head / grouped-query attention.
double dense_attention_working_set_per_token(const clustersim::RunConfig& config) {
  const auto& m = config.model();
  const auto& p = config.parallel();
  const double t = p.tp();
  const double h = m.hidden_size();
  const double q_width = static_cast<double>(m.num_heads() * head_dim(m));  // h unless head_dim
  const double kv_width = static_cast<double>(kv_heads(m) * head_dim(m));
  const double gathered_input = sp_divisor(p) > 1.0 ? 2.0 * h : 0.0;
  const double qkv = 2.0 * (q_width + 2.0 * kv_width) / t + gathered_input + 2.0 * h;
  const double proj = 2.0 * h + 2.0 * q_width / t;  // row-parallel: output grad full (SP: gathered)
  return std::max(qkv, proj);
}

}  // namespace

double backward_working_set_bytes(const clustersim::RunConfig& config) {
  const auto& m = config.model();
  const auto& p = config.parallel();
  const double t = p.tp();
  const double h = m.hidden_size();
  const double ffn = m.ffn_hidden_size();
  const bool sp = sp_divisor(p) > 1.0;
  const double gathered_input = sp ? 2.0 * h : 0.0;  // ln_out re-gathered for the wgrad GEMM
  const double fc1_out = (m.activation() == ModelConfig::SWIGLU ? 4.0 : 2.0) * ffn / t;
  // Per token: output gradient + re-gathered input + full-sequence input gradient.
  const double attention = m.has_mla() ? mla_working_set_per_token(config)
                                       : dense_attention_working_set_per_token(config);
  const double fc1 = fc1_out + gathered_input + 2.0 * h;
  const double fc2 = 2.0 * h + 2.0 * ffn / t;
  return std::max({attention, fc1, fc2}) * local_tokens(config);
}

double head_working_set_bytes(const clustersim::RunConfig& config) {
  const auto& p = config.parallel();
  return 2.0 * local_tokens(config) * static_cast<double>(padded_vocab(config.model(), p.tp())) /
         p.tp();
}

int64_t expert_state_shards(const clustersim::ParallelConfig& p) {
  return p.ep() > 1 ? dim_sizes(p)[static_cast<std::size_t>(Dim::kEdp)]
                    : static_cast<int64_t>(p.dp()) * p.cp();
}

namespace {

// Model states, transients and offload of `stage`; activations are the caller's.
MemoryBreakdown stage_memory_without_activations(const clustersim::RunConfig& config,
                                                 int32_t stage) {
  const auto& m = config.model();
  const auto& p = config.parallel();
  MemoryBreakdown out;
  out.stage = stage;
  out.params = stage_params(config, stage);
  const int64_t shards = static_cast<int64_t>(p.dp()) * p.cp();
  const double g = grad_bytes(p);
  out.expert_params = stage_expert_params(config, stage);
  const ModelStateBytes dense = model_state_bytes(
      static_cast<double>(out.params - out.expert_params), p.zero_stage(), shards, g);
  const ModelStateBytes experts = model_state_bytes(static_cast<double>(out.expert_params),
                                                    p.zero_stage(), expert_state_shards(p), g);
  out.weights = to_bytes(dense.weights + experts.weights);
  out.gradients = to_bytes(dense.gradients + experts.gradients);
  out.optimizer = to_bytes(dense.optimizer + experts.optimizer);
  out.expert_states = to_bytes(experts.total());

  const std::vector<int32_t> chunks = chunk_layers_of(config, stage);
  const int32_t chunk_layers = chunks.empty() ? 0 : *std::max_element(chunks.begin(), chunks.end());
  const int32_t k = p.checkpoint_every_k_layers();
  double temporary = 0;
  if (p.recompute() == ParallelConfig::FULL) {
    temporary += layer_bytes_no_recompute(config, true);
  } else if (p.recompute() == ParallelConfig::OP_SELECTIVE) {
    // The recomputed rest of the layer in its backward.
    temporary += std::max(0.0, layer_bytes_no_recompute(config, true) - op_sac_layer_bytes(config));
  } else if (p.recompute() == ParallelConfig::SELECTIVE) {
    temporary += score_bytes(config);
  }
  if (segmented(p)) {
    temporary += std::min(k, chunk_layers) * layer_activation_bytes(config);
  }
  if (p.zero_stage() >= 3 && shards > 1) {
    const ParamCounts counts = count_params(m);
    temporary += 2.0 * 2.0 * static_cast<double>(counts.per_layer_on_tp_rank(p.tp()));
  }
  if (p.zero_stage() >= 2 && shards > 1 && !holds_chunk_grads_between_backwards(p)) {
    const int64_t buckets = p.overlap_grad_reduce() ? 2 : 1;
    temporary +=
        g * static_cast<double>(std::min<int64_t>(buckets * p.dp_bucket_params(), out.params));
  }
  out.temporary = to_bytes(temporary);
  if (config.effects().memory_backward_working_set()) {
    double ws = backward_working_set_bytes(config);
    if (holds_piece(config, stage, true)) ws = std::max(ws, head_working_set_bytes(config));
    out.working_set = to_bytes(ws);
  }

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

}  // namespace

MemoryBreakdown estimate_stage_memory(const clustersim::RunConfig& config, int32_t stage,
                                      std::span<const WorkItem> order) {
  if (!config.effects().memory_exact_pipeline_peak()) {
    return estimate_stage_memory(
        config, stage, peak_held_activations(std::vector<WorkItem>(order.begin(), order.end())));
  }
  MemoryBreakdown out = stage_memory_without_activations(config, stage);
  const LiveBytes peak = exact_peak_bytes(config, stage, order);
  out.activations = to_bytes(peak.activations);
  out.gradients += to_bytes(peak.gradient_buffers);
  return out;
}

MemoryBreakdown estimate_stage_memory(const clustersim::RunConfig& config, int32_t stage,
                                      int32_t in_flight) {
  MemoryBreakdown out = stage_memory_without_activations(config, stage);
  out.activations = to_bytes(upper_bound_activation_bytes(config, stage, in_flight));
  for (const double buffer : chunk_gradient_buffers(config, stage))
    out.gradients += to_bytes(buffer);
  return out;
}

namespace {

// The stage whose breakdown has the largest total (the first of equals).
template <typename StageFn>
MemoryBreakdown peak_over_stages(int32_t stages, StageFn&& stage_memory) {
  MemoryBreakdown peak;
  for (int32_t s = 0; s < stages; ++s) {
    MemoryBreakdown b = stage_memory(s);
    if (s == 0 || b.total() > peak.total()) peak = b;
  }
  return peak;
}

}  // namespace

MemoryBreakdown estimate_memory(const clustersim::RunConfig& config,
                                std::span<const int32_t> in_flight_per_stage) {
  return peak_over_stages(config.parallel().pp(), [&](int32_t s) {
    const int32_t held =
        static_cast<size_t>(s) < in_flight_per_stage.size() ? in_flight_per_stage[s] : 0;
    return estimate_stage_memory(config, s, held);
  });
}

MemoryBreakdown estimate_memory(const clustersim::RunConfig& config,
                                const std::vector<std::vector<WorkItem>>& orders) {
  return peak_over_stages(config.parallel().pp(), [&](int32_t s) {
    const size_t i = static_cast<size_t>(s);
    return i < orders.size()
               ? estimate_stage_memory(config, s, std::span<const WorkItem>(orders[i]))
               : estimate_stage_memory(config, s, 0);
  });
}

MemoryBreakdown estimate_memory(const clustersim::RunConfig& config,
                                int32_t in_flight_microbatches) {
  const std::vector<int32_t> held(static_cast<size_t>(std::max(config.parallel().pp(), 0)),
                                  in_flight_microbatches);
  return estimate_memory(config, std::span<const int32_t>(held));
}

}  // namespace cs::workload
