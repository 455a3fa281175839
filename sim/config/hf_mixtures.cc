#include "sim/config/hf_mixtures.h"

#include <limits>
#include <string>
#include <vector>

namespace cs::hf {
namespace {

using clustersim::MoeConfig;

void check_top_k(const Reader& r, const MoeConfig& moe, const std::string& experts_field) {
  if (moe.top_k() > moe.num_experts())
    r.fail("num_experts_per_tok",
           "must be at most " + experts_field + " = " + std::to_string(moe.num_experts()));
}

// Dense layers before the first MoE layer must leave at least one MoE layer.
void check_first_k_dense(const Reader& r, const clustersim::ModelConfig& m,
                         const std::string& field) {
  if (m.moe().first_k_dense() >= m.num_layers())
    r.fail(field, std::to_string(m.moe().first_k_dense()) + " dense layers leave no MoE layer of " +
                      std::to_string(m.num_layers()));
}

// Qwen3-MoE's dense layers as clustersim's first_k_dense: mlp_only_layers must be 0, 1, ..., k-1
// (HF Qwen3MoeDecoderLayer uses the dense MLP exactly for the listed indices).
int32_t leading_dense_layers(const Reader& r) {
  const std::vector<int32_t> layers = r.index_list_or_empty("mlp_only_layers");
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i] != static_cast<int32_t>(i))
      r.fail("mlp_only_layers",
             "dense layers must be the leading ones 0, 1, ..., k-1 "
             "(clustersim's first_k_dense); entry " +
                 std::to_string(i) + " is " + std::to_string(layers[i]));
  }
  return static_cast<int32_t>(layers.size());
}

MoeConfig::ScoreFunction score_function(const Reader& r) {
  // transformers' DeepseekV3TopkRouter scores with a sigmoid; DeepSeek-V2's remote code and
  // config.json name the choice in scoring_func.
  const std::string f = r.string_or("scoring_func", "sigmoid");
  if (f == "sigmoid") return MoeConfig::SIGMOID;
  if (f == "softmax") return MoeConfig::SOFTMAX;
  r.fail("scoring_func", "is " + f + "; reads sigmoid or softmax");
}

// DeepSeek-V3's node-limited routing (DeepSeek-V3 report, section 2.1.2; HF n_group, topk_group,
// topk_method "noaux_tc"): the routed experts form n_group groups of consecutive experts, a token
// first picks the topk_group groups with the highest scores and then its top-k experts inside
// them. DeepSeek-V3 sets n_group = 8 groups, one per server of its EP-64 layout over 8 nodes, and
// topk_group = 4, so a token reaches at most 4 servers: max_nodes_per_token = topk_group, on the
// assumption (true of DeepSeek's deployment) that each group's experts sit on one server.
// topk_group = n_group, or "greedy" top-k, limits nothing (0).
int32_t max_nodes_per_token(const Reader& r, const MoeConfig& moe) {
  const int32_t groups = r.positive_int_or("n_group", 1);
  const int32_t picked = r.positive_int_or("topk_group", groups);
  if (picked > groups) r.fail("topk_group", "must be at most n_group = " + std::to_string(groups));
  if (moe.num_experts() % groups != 0)
    r.fail("n_group", "must divide n_routed_experts = " + std::to_string(moe.num_experts()));
  const std::string method = r.string_or("topk_method", "noaux_tc");
  if (method != "noaux_tc" && method != "group_limited_greedy" && method != "greedy")
    r.fail("topk_method", "is " + method + "; reads noaux_tc, group_limited_greedy or greedy");
  return method == "greedy" || picked == groups ? 0 : picked;
}

// DeepSeek-V2/V3 multi-head latent attention. Keys and values are per head (HF lists
// num_key_value_heads = num_attention_heads), so num_kv_heads is the head count.
void read_mla(const Reader& r, clustersim::ModelConfig& m) {
  auto* mla = m.mutable_mla();
  mla->set_q_lora_rank(r.count_or("q_lora_rank", 0));  // null (DeepSeek-V2-Lite): no q LoRA
  mla->set_kv_lora_rank(r.positive_int("kv_lora_rank"));
  mla->set_qk_nope_head_dim(r.positive_int("qk_nope_head_dim"));
  mla->set_qk_rope_head_dim(r.positive_int("qk_rope_head_dim"));
  mla->set_v_head_dim(r.positive_int("v_head_dim"));
  m.set_num_kv_heads(m.num_heads());
  m.clear_head_dim();  // head sizes come from mla; transformers writes head_dim = rope dim
}

}  // namespace

// MixtralForCausalLM (transformers' MixtralConfig): every layer's MLP is num_local_experts SwiGLU
// experts of intermediate_size with a softmax top-k router; no dense MLP and no shared expert, so
// ffn_hidden_size is the expert size too. Ignored: sliding_window (it bounds attention only for
// sequences longer than the window; Mixtral-8x7B-v0.1 publishes null), router_aux_loss_coef and
// router_jitter_noise (loss and noise terms, no cost).
void read_mixtral(const Reader& r, clustersim::ModelConfig& m) {
  auto* moe = m.mutable_moe();
  moe->set_num_experts(r.positive_int("num_local_experts"));
  moe->set_top_k(r.positive_int("num_experts_per_tok"));
  moe->set_expert_ffn_hidden_size(r.positive_int("intermediate_size"));
  moe->set_first_k_dense(0);
  moe->set_score_function(MoeConfig::SOFTMAX);
  m.set_ffn_hidden_size(moe->expert_ffn_hidden_size());
  check_top_k(r, *moe, "num_local_experts");
}

// Qwen3MoeForCausalLM (transformers' Qwen3MoeConfig): softmax top-k over num_experts experts of
// moe_intermediate_size; layers listed in mlp_only_layers keep a dense MLP of intermediate_size.
// Layer i is sparse when (i + 1) % decoder_sparse_step == 0, so only step 1 (every layer) is
// representable. norm_topk_prob only rescales the routing weights (no cost): checked, not kept.
void read_qwen3_moe(const Reader& r, clustersim::ModelConfig& m) {
  auto* moe = m.mutable_moe();
  moe->set_num_experts(r.positive_int("num_experts"));
  moe->set_top_k(r.positive_int("num_experts_per_tok"));
  moe->set_expert_ffn_hidden_size(r.positive_int("moe_intermediate_size"));
  moe->set_score_function(MoeConfig::SOFTMAX);
  m.set_ffn_hidden_size(r.positive_int("intermediate_size"));
  check_top_k(r, *moe, "num_experts");
  const int32_t step = r.positive_int_or("decoder_sparse_step", 1);
  if (step != 1)
    r.fail("decoder_sparse_step", "is " + std::to_string(step) +
                                      "; clustersim models MoE in every layer after the "
                                      "first_k_dense leading dense ones, so only 1 is read");
  moe->set_first_k_dense(leading_dense_layers(r));
  check_first_k_dense(r, m, "mlp_only_layers");
  r.boolean_or("norm_topk_prob", false);
}

// DeepseekV3ForCausalLM (DeepSeek-V3's config.json, transformers' DeepseekV3Config): the first
// first_k_dense_replace layers have a dense MLP of intermediate_size, the others
// n_routed_experts experts of moe_intermediate_size plus n_shared_experts shared experts of the
// same size; MLA attention; num_nextn_predict_layers multi-token-prediction modules. Ignored:
// routed_scaling_factor and norm_topk_prob (weights only), rope_scaling (YaRN changes the
// rotation, not its cost), ep_size (an inference setting), quantization_config (the FP8 of
// inference checkpoints; a run's precision is its own).
void read_deepseek_v3(const Reader& r, clustersim::ModelConfig& m) {
  const int32_t freq = r.positive_int_or("moe_layer_freq", 1);
  if (freq != 1)
    r.fail("moe_layer_freq", "is " + std::to_string(freq) +
                                 "; clustersim models MoE in every layer after the dense ones");
  auto* moe = m.mutable_moe();
  moe->set_num_experts(r.positive_int("n_routed_experts"));
  moe->set_top_k(r.positive_int("num_experts_per_tok"));
  moe->set_expert_ffn_hidden_size(r.positive_int("moe_intermediate_size"));
  const int64_t shared =
      static_cast<int64_t>(r.count_or("n_shared_experts", 0)) * moe->expert_ffn_hidden_size();
  if (shared > std::numeric_limits<int32_t>::max())
    r.fail("n_shared_experts", "times moe_intermediate_size overflows a 32-bit FFN size");
  moe->set_shared_expert_ffn_hidden_size(static_cast<int32_t>(shared));
  moe->set_first_k_dense(r.count_or("first_k_dense_replace", 0));
  moe->set_score_function(score_function(r));
  moe->set_max_nodes_per_token(max_nodes_per_token(r, *moe));
  m.set_ffn_hidden_size(r.positive_int("intermediate_size"));
  check_top_k(r, *moe, "n_routed_experts");
  check_first_k_dense(r, m, "first_k_dense_replace");
  read_mla(r, m);
  m.set_mtp_layers(r.count_or("num_nextn_predict_layers", 0));
}

}  // namespace cs::hf
