#include "sim/workload/model_math.h"

#include <algorithm>
#include <vector>

#include "sim/workload/layout_config.h"
#include "sim/workload/moe.h"
#include "sim/workload/schedules/registry.h"
#include "sim/workload/stack.h"

namespace cs::workload {

int64_t kv_heads(const clustersim::ModelConfig& model) {
  return model.num_kv_heads() > 0 ? model.num_kv_heads() : model.num_heads();
}

int64_t head_dim(const clustersim::ModelConfig& model) {
  if (model.head_dim() > 0) return model.head_dim();
  return model.num_heads() > 0 ? model.hidden_size() / model.num_heads() : 0;
}

HeadDims head_dims(const clustersim::ModelConfig& model) {
  if (!model.has_mla()) return {head_dim(model), head_dim(model)};
  const auto& mla = model.mla();
  return {int64_t{mla.qk_nope_head_dim()} + mla.qk_rope_head_dim(), mla.v_head_dim()};
}

int64_t padded_vocab(const clustersim::ModelConfig& model, int64_t tp) {
  const int64_t v = model.vocab_size();
  if (tp <= 1) return v;
  return (v + tp - 1) / tp * tp;
}

namespace {

// MLA's matrices into p (attention_per_layer, tp_replicated_per_layer) and its two latent norms
// (q_a_layernorm, kv_a_layernorm in HF DeepSeek-V3) into norms_per_layer.
void count_mla_params(const clustersim::ModelConfig& model, ParamCounts& p) {
  const auto& mla = model.mla();
  const int64_t h = model.hidden_size(), a = model.num_heads();
  const HeadDims d = head_dims(model);
  const int64_t q_lora = mla.q_lora_rank(), kv_lora = mla.kv_lora_rank();
  const int64_t q_down = h * q_lora;  // 0 without q LoRA
  const int64_t q_up = (q_lora > 0 ? q_lora : h) * a * d.qk;
  const int64_t kv_down = h * (kv_lora + mla.qk_rope_head_dim());
  const int64_t kv_up = kv_lora * a * (int64_t{mla.qk_nope_head_dim()} + d.v);
  p.attention_per_layer = q_down + q_up + kv_down + kv_up + a * d.v * h;
  p.tp_replicated_per_layer = q_down + kv_down;
  p.norms_per_layer += q_lora + kv_lora;
}

}  // namespace

ParamCounts count_params(const clustersim::ModelConfig& model) {
  const int64_t h = model.hidden_size();
  const int64_t q_width = model.num_heads() * head_dim(model);  // h unless head_dim is set
  const int64_t kv_width = kv_heads(model) * head_dim(model);
  const int64_t ffn = model.ffn_hidden_size();
  const int64_t vocab = model.vocab_size();
  ParamCounts p;
  p.num_layers = model.num_layers();
  p.embedding = vocab * h;
  p.attention_per_layer = h * q_width + 2 * h * kv_width + q_width * h;
  p.mlp_per_layer = (model.activation() == clustersim::ModelConfig::SWIGLU ? 3 : 2) * h * ffn;
  p.norms_per_layer = 2 * h;
  if (model.has_mla()) count_mla_params(model, p);
  if (model.has_moe() && model.moe().num_experts() > 0) {
    const auto& moe = model.moe();
    const int64_t matrices = model.activation() == clustersim::ModelConfig::SWIGLU ? 3 : 2;
    p.moe_layers = std::max(0, model.num_layers() - moe.first_k_dense());
    p.num_experts = moe.num_experts();
    p.top_k = moe.top_k();
    p.router_per_layer = h * moe.num_experts();
    p.shared_per_layer = matrices * h * moe.shared_expert_ffn_hidden_size();
    p.expert_params = matrices * h * moe.expert_ffn_hidden_size();
  }
  p.mtp_modules = model.mtp_layers();
  p.mtp_projection = 2 * h * h;
  p.mtp_norms = 3 * h;
  p.mtp_block_is_moe = is_moe_layer(model, model.num_layers());
  p.final_norm = h;
  p.output_head = model.tied_embeddings() ? 0 : vocab * h;
  p.vocab_matmul = vocab * h;
  return p;
}

double attention_flops_per_token(const clustersim::ModelConfig& model) {
  const HeadDims d = head_dims(model);
  // The mean of the qk and v widths: head_dim() exactly without MLA.
  const double width = static_cast<double>(d.qk + d.v) / 2.0;
  const double h = static_cast<double>(model.num_heads()) * width;
  // Causal: the kernels compute only the scores at or below the diagonal (kernel.h halves their
  // FLOPs too). Counting the whole square would credit the GPUs with work they never do, and at
  // long sequences, where attention dominates, put MFU above 100%.
  const double causal = model.causal() ? 0.5 : 1.0;
  return 12.0 * causal * (model.num_layers() + model.mtp_layers()) * h * model.seq_length();
}

double model_flops_per_token(const clustersim::ModelConfig& model) {
  return 6.0 * static_cast<double>(count_params(model).dense_matmul()) +
         attention_flops_per_token(model);
}

double tokens_per_step(const clustersim::RunConfig& config) {
  return static_cast<double>(config.parallel().global_batch_size()) *
         static_cast<double>(config.model().seq_length());
}

double model_flops_per_step(const clustersim::RunConfig& config) {
  return model_flops_per_token(config.model()) * tokens_per_step(config);
}

std::vector<MatrixShape> forward_matrices(const clustersim::RunConfig& config) {
  const auto& m = config.model();
  const auto& stack = stack_of(config);
  const double h = static_cast<double>(m.hidden_size());
  const double ffn = static_cast<double>(m.ffn_hidden_size());
  const double d = static_cast<double>(head_dim(m));
  const double q = static_cast<double>(m.num_heads()) * d;
  const double kv =
      static_cast<double>(m.num_kv_heads() > 0 ? m.num_kv_heads() : m.num_heads()) * d;
  std::vector<MatrixShape> out;
  if (stack.fused_qkv())
    out.push_back({h, q + 2 * kv});
  else
    out.insert(out.end(), {{h, q}, {h, kv}, {h, kv}});
  out.push_back({q, h});
  const bool swiglu = m.activation() == clustersim::ModelConfig::SWIGLU;
  if (swiglu && !stack.fused_gate_up())
    out.insert(out.end(), {{h, ffn}, {h, ffn}});
  else
    out.push_back({h, swiglu ? 2 * ffn : ffn});
  out.push_back({ffn, h});
  return out;
}

double hardware_flops_per_step(const clustersim::RunConfig& config) {
  const auto& model = config.model();
  // Forward attention core is a third of the forward+backward 12·L·h·s.
  const double attention_forward = attention_flops_per_token(model) / 3.0;
  const ParamCounts p = count_params(model);
  const double layer_forward = 2.0 * static_cast<double>(p.dense_matmul() - p.vocab_matmul);
  double extra_per_token = 0;
  switch (config.parallel().recompute()) {
    case clustersim::ParallelConfig::SELECTIVE:
      extra_per_token = attention_forward;
      break;
    case clustersim::ParallelConfig::FULL:
      extra_per_token = layer_forward + attention_forward;
      break;
    case clustersim::ParallelConfig::OP_SELECTIVE: {
      const std::vector<MatrixShape> matrices = forward_matrices(config);
      for (std::size_t i = 1; i < matrices.size(); i += 2)
        extra_per_token += 2.0 * matrices[i].in * matrices[i].out * model.num_layers();
      break;
    }
    default:
      break;
  }
  // MLA_UP_PROJ recomputation runs each layer's q and kv up projections again.
  if (model.has_mla() && config.parallel().recompute() != clustersim::ParallelConfig::FULL &&
      recomputes(config.parallel(), clustersim::ParallelConfig::MLA_UP_PROJ)) {
    const auto& mla = model.mla();
    const double heads = model.num_heads();
    const double q_in = mla.q_lora_rank() > 0 ? mla.q_lora_rank() : model.hidden_size();
    const double q_up = q_in * heads * static_cast<double>(head_dims(model).qk);
    const double kv_up = static_cast<double>(mla.kv_lora_rank()) * heads *
                         static_cast<double>(mla.qk_nope_head_dim() + mla.v_head_dim());
    // Multi-token-prediction blocks are transformer layers with the same recompute settings.
    extra_per_token += 2.0 * (q_up + kv_up) * (model.num_layers() + model.mtp_layers());
  }
  return model_flops_per_step(config) + extra_per_token * tokens_per_step(config);
}

std::vector<int32_t> layers_per_piece(const clustersim::RunConfig& config) {
  const auto& par = config.parallel();
  if (par.layers_per_stage_size() > 0) {
    return {par.layers_per_stage().begin(), par.layers_per_stage().end()};
  }
  const int32_t pieces = model_pieces(pipeline_schedule_of(par), par.pp(), par.virtual_stages());
  std::vector<int32_t> out(static_cast<size_t>(pieces > 0 ? pieces : 0));
  // Validated configs divide evenly; otherwise the earlier pieces take the remainder.
  const int32_t base = pieces > 0 ? config.model().num_layers() / pieces : 0;
  const int32_t extra = pieces > 0 ? config.model().num_layers() % pieces : 0;
  for (int32_t j = 0; j < pieces; ++j) out[static_cast<size_t>(j)] = base + (j < extra ? 1 : 0);
  return out;
}

int32_t layers_on_stage(const clustersim::RunConfig& config, int32_t stage) {
  const std::vector<int32_t> pieces = layers_per_piece(config);
  const auto& par = config.parallel();
  const PipelineSchedule schedule = pipeline_schedule_of(par);
  int32_t total = 0;
  for (int32_t c = 0; c < par.virtual_stages(); ++c)
    total += pieces.at(static_cast<size_t>(model_piece(schedule, stage, c, par.pp())));
  return total;
}

std::vector<int32_t> stage_layers(const clustersim::RunConfig& config, int32_t stage) {
  const std::vector<int32_t> pieces = layers_per_piece(config);
  const auto& par = config.parallel();
  std::vector<int32_t> out;
  for (int32_t c = 0; c < par.virtual_stages(); ++c) {
    const int32_t piece = model_piece(pipeline_schedule_of(par), stage, c, par.pp());
    int32_t first = 0;
    for (int32_t q = 0; q < piece; ++q) first += pieces[static_cast<size_t>(q)];
    for (int32_t l = 0; l < pieces[static_cast<size_t>(piece)]; ++l) out.push_back(first + l);
    // Multi-token prediction modules run after the head, on the stage of the last piece.
    if (piece == static_cast<int32_t>(pieces.size()) - 1)
      for (int32_t k = 0; k < config.model().mtp_layers(); ++k)
        out.push_back(config.model().num_layers() + k);
  }
  std::sort(out.begin(), out.end());
  return out;
}

int64_t layer_dense_params(const clustersim::RunConfig& config, int32_t layer) {
  const ParamCounts counts = count_params(config.model());
  const int64_t t = config.parallel().tp();
  const int64_t block = is_moe_layer(config.model(), layer) ? counts.moe_layer_dense_on_tp_rank(t)
                                                            : counts.per_layer_on_tp_rank(t);
  // A multi-token prediction block also holds its column-parallel projection and three norms.
  if (layer < config.model().num_layers()) return block;
  return block + counts.mtp_projection / t + counts.mtp_norms;
}

int64_t layer_expert_params(const clustersim::RunConfig& config, int32_t layer) {
  if (!is_moe_layer(config.model(), layer)) return 0;
  const ParamCounts counts = count_params(config.model());
  const auto& p = config.parallel();
  return counts.num_experts / p.ep() * counts.expert_params / expert_tp_of(p);
}

int64_t stage_expert_params(const clustersim::RunConfig& config, int32_t stage) {
  int64_t params = 0;
  for (const int32_t l : stage_layers(config, stage)) params += layer_expert_params(config, l);
  return params;
}

int64_t chunk_params(const clustersim::RunConfig& config, int32_t stage, int32_t chunk) {
  const auto& m = config.model();
  const auto& p = config.parallel();
  const int64_t t = p.tp();
  const ParamCounts counts = count_params(m);
  const int64_t vocab_shard = padded_vocab(m, t) * m.hidden_size() / t;
  const PipelineSchedule schedule = pipeline_schedule_of(p);
  const std::vector<int32_t> pieces = layers_per_piece(config);
  const int32_t piece = model_piece(schedule, stage, chunk, p.pp());
  const int32_t last = static_cast<int32_t>(pieces.size()) - 1;
  int32_t first_layer = 0;
  for (int32_t q = 0; q < piece; ++q) first_layer += pieces[static_cast<size_t>(q)];
  std::vector<int32_t> layers;
  for (int32_t l = 0; l < pieces[static_cast<size_t>(piece)]; ++l)
    layers.push_back(first_layer + l);
  // Multi-token prediction modules run after the head, with the last piece.
  if (piece == last)
    for (int32_t k = 0; k < m.mtp_layers(); ++k) layers.push_back(m.num_layers() + k);
  int64_t params = 0;
  for (const int32_t l : layers)
    params += layer_dense_params(config, l) + layer_expert_params(config, l);
  // The embedding lives with the first piece, the final norm and head with the last: stage 0 and
  // p-1 under Megatron's placement, stage 0 for both in ZB-V's V, both ends twice for DualPipe.
  if (piece == 0) params += vocab_shard;
  if (piece == last) {
    params += counts.final_norm;
    if (!m.tied_embeddings() || p.pp() > 1) params += vocab_shard;
  }
  return params;
}

int64_t stage_params(const clustersim::RunConfig& config, int32_t stage) {
  const auto& m = config.model();
  const auto& p = config.parallel();
  const PipelineSchedule schedule = pipeline_schedule_of(p);
  const int32_t last = model_pieces(schedule, p.pp(), p.virtual_stages()) - 1;
  int64_t params = 0;
  bool first_piece = false, last_piece = false;
  for (int32_t c = 0; c < p.virtual_stages(); ++c) {
    params += chunk_params(config, stage, c);
    const int32_t piece = model_piece(schedule, stage, c, p.pp());
    first_piece = first_piece || piece == 0;
    last_piece = last_piece || piece == last;
  }
  // Multi-token prediction looks up the shared embedding on the last stage: a copy there (its
  // gradient's sum with the first stage's, Megatron's embedding group, is not simulated).
  if (last_piece && !first_piece && m.mtp_layers() > 0 && !m.tied_embeddings())
    params += padded_vocab(m, p.tp()) * m.hidden_size() / p.tp();
  return params;
}

int32_t num_microbatches(const clustersim::ParallelConfig& parallel) {
  const int64_t per_step = static_cast<int64_t>(parallel.dp()) * parallel.microbatch_size();
  return per_step > 0 ? static_cast<int32_t>(parallel.global_batch_size() / per_step) : 0;
}

bool recomputes(const clustersim::ParallelConfig& parallel,
                clustersim::ParallelConfig::RecomputeModule module) {
  for (const int m : parallel.recompute_modules())
    if (m == module) return true;
  return false;
}

PipelineSchedule pipeline_schedule_of(const clustersim::ParallelConfig& parallel) {
  return schedule_info(parallel.schedule()).value;
}

}  // namespace cs::workload
