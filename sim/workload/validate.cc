#include "sim/workload/validate.h"

#include <string>
#include <utility>

#include "sim/config/config_error.h"
#include "sim/config/field_checks.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/model_math.h"
#include "sim/workload/schedules/registry.h"

namespace cs::workload {
namespace {

// Collects the source prefix so that each rule reads as one line.
class Checker {
 public:
  explicit Checker(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw ConfigError(source_ + ": " + message);
  }
  void positive(const char* field, int64_t value) const {
    if (value <= 0) fail(std::string(field) + " = " + std::to_string(value) + " must be positive");
  }
  // Far beyond any real model or run, so that a typo fails at once instead of building
  // programs that exhaust memory or overflowing the picosecond clock.
  void at_most(const char* field, int64_t value, int64_t limit) const {
    if (value > limit) {
      fail(std::string(field) + " = " + std::to_string(value) + " is above the supported " +
           std::to_string(limit));
    }
  }
  // `divisor_field` = d must divide `field` = n.
  void divides(const char* divisor_field, int64_t d, const char* field, int64_t n,
               const std::string& why = "") const {
    if (d > 0 && n % d != 0) {
      fail(std::string(field) + " = " + std::to_string(n) + " must be divisible by " +
           divisor_field + " = " + std::to_string(d) + (why.empty() ? "" : " (" + why + ")"));
    }
  }

 private:
  const std::string& source_;
};

// head_dim and multi-head latent attention: the shapes attention_block() in layer_ops.cc builds.
void validate_attention(const Checker& c, const clustersim::ModelConfig& m,
                        const clustersim::ParallelConfig& p) {
  if (m.head_dim() < 0) {
    c.fail("model.head_dim = " + std::to_string(m.head_dim()) +
           " must be positive (or 0 for hidden_size / num_heads)");
  }
  c.at_most("model.head_dim", m.head_dim(), 1 << 16);
  if (m.head_dim() == 0 && !m.has_mla())
    c.divides("model.num_heads", m.num_heads(), "model.hidden_size", m.hidden_size(),
              "or set model.head_dim");
  if (!m.has_mla()) return;
  const auto& mla = m.mla();
  c.positive("model.mla.kv_lora_rank", mla.kv_lora_rank());
  c.positive("model.mla.qk_nope_head_dim", mla.qk_nope_head_dim());
  c.positive("model.mla.qk_rope_head_dim", mla.qk_rope_head_dim());
  c.positive("model.mla.v_head_dim", mla.v_head_dim());
  if (mla.q_lora_rank() < 0) {
    c.fail("model.mla.q_lora_rank = " + std::to_string(mla.q_lora_rank()) +
           " must be >= 0 (0: queries projected from h directly)");
  }
  for (const auto& [field, value] : {std::pair{"model.mla.q_lora_rank", mla.q_lora_rank()},
                                     {"model.mla.kv_lora_rank", mla.kv_lora_rank()},
                                     {"model.mla.qk_nope_head_dim", mla.qk_nope_head_dim()},
                                     {"model.mla.qk_rope_head_dim", mla.qk_rope_head_dim()},
                                     {"model.mla.v_head_dim", mla.v_head_dim()}})
    c.at_most(field, value, 1 << 16);
  if (m.head_dim() != 0) c.fail("model.head_dim must be 0 with model.mla, which sizes the heads");
  if (kv_heads(m) != m.num_heads()) {
    c.fail("model.num_kv_heads = " + std::to_string(m.num_kv_heads()) +
           " must be 0 or model.num_heads with model.mla (latent attention has per-head keys and "
           "values)");
  }
  if (p.cp() > 1) {
    c.fail("parallel.cp = " + std::to_string(p.cp()) +
           " with model.mla: context parallelism over latent attention is not modelled");
  }
  if (m.add_bias()) c.fail("model.add_bias with model.mla: MLA's projections carry no biases");
  if (m.position_embedding() != clustersim::ModelConfig::ROPE)
    c.fail("model.position_embedding must be ROPE with model.mla (its decoupled rotary key)");
}

void validate_routing(const Checker& c, const clustersim::RoutingDistribution& r) {
  using clustersim::RoutingDistribution;
  if (r.kind() == RoutingDistribution::SKEWED && !(r.skew() >= 0 && r.skew() <= 16))
    c.fail("model.moe.routing.skew = " + number_text(r.skew()) + " must be in [0, 16]");
  if (r.kind() == RoutingDistribution::HISTOGRAM && r.histogram_file().empty())
    c.fail("model.moe.routing.histogram_file must be set for kind HISTOGRAM");
  if (r.kind() != RoutingDistribution::HISTOGRAM && !r.histogram_file().empty())
    c.fail("model.moe.routing.histogram_file is set but routing.kind is not HISTOGRAM");
}

void validate_moe(const Checker& c, const clustersim::ModelConfig& m,
                  const clustersim::ParallelConfig& p) {
  // Checked for dense models too: the layout divides by expert TP whether or not experts exist.
  if (p.etp() != 0 && p.etp() != 1 && p.etp() != p.tp())
    c.fail("parallel.etp = " + std::to_string(p.etp()) + " must be 0 (= tp), 1 or parallel.tp");
  if (!m.has_moe()) {
    if (p.ep() != 1)
      c.fail("parallel.ep = " + std::to_string(p.ep()) + " needs a mixture of experts (model.moe)");
    // Expert TP splits only experts: on a dense model it would split nothing, as EP would not.
    if (p.etp() > 1)
      c.fail("parallel.etp = " + std::to_string(p.etp()) +
             " needs a mixture of experts (model.moe)");
    return;
  }
  const auto& moe = m.moe();
  c.positive("model.moe.num_experts", moe.num_experts());
  c.at_most("model.moe.num_experts", moe.num_experts(), 1 << 14);
  c.positive("model.moe.top_k", moe.top_k());
  c.at_most("model.moe.top_k", moe.top_k(), moe.num_experts());
  c.positive("model.moe.expert_ffn_hidden_size", moe.expert_ffn_hidden_size());
  if (moe.shared_expert_ffn_hidden_size() < 0)
    c.fail("model.moe.shared_expert_ffn_hidden_size must be >= 0");
  if (moe.first_k_dense() < 0 || moe.first_k_dense() >= m.num_layers())
    c.fail("model.moe.first_k_dense = " + std::to_string(moe.first_k_dense()) +
           " must be in [0, model.num_layers)");
  // Above num_experts / top_k no expert can overflow (it would take every token); 1e6 is far
  // beyond that for any model and keeps token counts finite.
  if (!(moe.capacity_factor() == 0 || (moe.capacity_factor() >= 1 && moe.capacity_factor() <= 1e6)))
    c.fail("model.moe.capacity_factor = " + number_text(moe.capacity_factor()) +
           " must be 0 (dropless) or in [1, 1e6]");
  if (moe.max_nodes_per_token() < 0) c.fail("model.moe.max_nodes_per_token must be >= 0");
  validate_routing(c, moe.routing());
  c.positive("parallel.ep", p.ep());
  c.divides("parallel.ep", p.ep(), "model.moe.num_experts", moe.num_experts(),
            "each expert-parallel rank holds the same number of experts");
  const int64_t etp = p.etp() == 0 ? p.tp() : p.etp();
  c.divides("expert TP x parallel.ep", etp * p.ep(), "parallel.tp x cp x dp",
            int64_t{p.tp()} * p.cp() * p.dp(),
            "expert parallelism is carved from the tensor-, context- and data-parallel ranks");
  c.divides("expert TP", etp, "model.moe.expert_ffn_hidden_size", moe.expert_ffn_hidden_size(),
            "experts are split column-/row-parallel over expert TP");
  c.divides("parallel.tp", p.tp(), "model.moe.shared_expert_ffn_hidden_size",
            moe.shared_expert_ffn_hidden_size(), "shared experts are split over TP");
  if (p.tp() > 1 && !p.sequence_parallel())
    c.fail(
        "parallel.sequence_parallel must be on with MoE layers and parallel.tp > 1, as "
        "Megatron-Core requires");
  if (p.ep() > 1 && p.zero_stage() == 3)
    c.fail(
        "parallel.zero_stage = 3 with parallel.ep > 1: gathering expert weights is not "
        "modelled");
}

// Multi-token prediction: a count of modules; ZeRO-3's per-layer weight gathers do not cover
// them, so that pair is refused rather than run without the gathers.
void validate_mtp(const Checker& c, const clustersim::RunConfig& config) {
  const int32_t n = config.model().mtp_layers();
  if (n < 0) c.fail("model.mtp_layers = " + std::to_string(n) + " must be >= 0");
  // Each module is one more transformer block after the head (DeepSeek-V3 report, section 2.2,
  // uses D = 1; Megatron-Core's mtp_num_layers counts the same blocks): more modules than the
  // trunk has layers is no published model, and the programs grow with the count.
  if (n > config.model().num_layers())
    c.fail("model.mtp_layers = " + std::to_string(n) +
           " must be at most model.num_layers = " + std::to_string(config.model().num_layers()) +
           " (each module is one more transformer block; DeepSeek-V3 uses 1)");
  if (n > 0 && config.parallel().zero_stage() == 3)
    c.fail("model.mtp_layers = " + std::to_string(n) +
           " with parallel.zero_stage = 3: gathering the modules' weights is not modelled");
}

// The shape rules of ZB-V and DualPipe (pipeline_orders() checks the same, without field names),
// and interleaving's virtual stages: at v = 1 it runs 1F1B's order under another name, which
// pipeline_orders() accepts as Megatron does but a config is refused.
void validate_schedule_shape(const Checker& c, const clustersim::ParallelConfig& p,
                             const ScheduleInfo& schedule) {
  const std::string name(schedule.name);
  if (schedule.exact_virtual_stages > 0 && p.virtual_stages() != schedule.exact_virtual_stages) {
    c.fail("parallel.virtual_stages = " + std::to_string(p.virtual_stages()) + " but " + name +
           " needs exactly " + std::to_string(schedule.exact_virtual_stages) +
           " (two model chunks per stage)");
  }
  if (p.virtual_stages() < schedule.min_virtual_stages) {
    c.fail("parallel.virtual_stages = " + std::to_string(p.virtual_stages()) + " but " + name +
           " needs at least " + std::to_string(schedule.min_virtual_stages) +
           " (with one model chunk per stage it is ONE_F_ONE_B; name that schedule instead)");
  }
  if (schedule.even_stages && p.pp() % 2 != 0) {
    c.fail("parallel.pp = " + std::to_string(p.pp()) + " must be even for " + name +
           " (its two halves of stages mirror each other)");
  }
  const int32_t m = num_microbatches(p);
  if (schedule.min_microbatches != nullptr && m < schedule.min_microbatches(p.pp())) {
    c.fail("microbatches (global_batch_size / (dp x microbatch_size)) = " + std::to_string(m) +
           " but " + name + " needs at least " + std::to_string(schedule.min_microbatches(p.pp())) +
           " (2 x parallel.pp)");
  }
  if (schedule.even_microbatches && m % 2 != 0) {
    c.fail("microbatches (global_batch_size / (dp x microbatch_size)) = " + std::to_string(m) +
           " must be even for " + name + " (half are fed from each end)");
  }
}

// Every size is set, positive and within what a run can hold.
void validate_sizes(const Checker& c, const clustersim::ModelConfig& m,
                    const clustersim::ParallelConfig& p) {
  c.positive("model.num_layers", m.num_layers());
  c.positive("model.hidden_size", m.hidden_size());
  c.positive("model.num_heads", m.num_heads());
  c.positive("model.ffn_hidden_size", m.ffn_hidden_size());
  c.positive("model.vocab_size", m.vocab_size());
  c.positive("model.seq_length", m.seq_length());
  if (m.num_kv_heads() < 0) {
    c.fail("model.num_kv_heads = " + std::to_string(m.num_kv_heads()) +
           " must be >= 0 (0 means num_heads)");
  }
  c.positive("parallel.tp", p.tp());
  c.positive("parallel.cp", p.cp());
  c.positive("parallel.pp", p.pp());
  c.positive("parallel.dp", p.dp());
  c.positive("parallel.virtual_stages", p.virtual_stages());
  c.positive("parallel.microbatch_size", p.microbatch_size());
  if (!p.has_global_batch_size()) c.fail("parallel.global_batch_size is not set");
  c.positive("parallel.global_batch_size", p.global_batch_size());
  c.positive("parallel.dp_bucket_params", p.dp_bucket_params());
  c.at_most("model.num_layers", m.num_layers(), 10'000);
  c.at_most("model.hidden_size", m.hidden_size(), 1 << 20);
  c.at_most("model.ffn_hidden_size", m.ffn_hidden_size(), 1 << 22);
  c.at_most("model.vocab_size", m.vocab_size(), 1 << 24);
  c.at_most("model.seq_length", m.seq_length(), 1 << 24);
  c.at_most("parallel.microbatch_size", p.microbatch_size(), 1 << 16);
  c.at_most(
      "microbatches per step (parallel.global_batch_size / (parallel.dp x "
      "parallel.microbatch_size))",
      p.global_batch_size() / (static_cast<int64_t>(p.dp()) * p.microbatch_size()), 1 << 16);
}

// Heads, MLP and sequence split evenly over the tensor- and context-parallel ranks.
void validate_tp_cp_splits(const Checker& c, const clustersim::ModelConfig& m,
                           const clustersim::ParallelConfig& p) {
  c.divides("model.num_kv_heads", kv_heads(m), "model.num_heads", m.num_heads(),
            "each key/value head serves a whole group of query heads");
  c.divides("parallel.tp", p.tp(), "model.num_heads", m.num_heads(),
            "attention heads are split over tensor-parallel ranks");
  c.divides("parallel.tp", p.tp(), "model.num_kv_heads", kv_heads(m),
            "Megatron-Core splits key/value groups over tensor-parallel ranks and does not "
            "replicate them");
  c.divides("parallel.tp", p.tp(), "model.ffn_hidden_size", m.ffn_hidden_size(),
            "the MLP is split column-/row-parallel over tensor-parallel ranks");
  c.divides("parallel.cp", p.cp(), "model.seq_length", m.seq_length(),
            "context parallelism splits the sequence");
  if (sequence_parallel_on(p)) {
    c.divides("parallel.cp x parallel.tp", static_cast<int64_t>(p.cp()) * p.tp(),
              "model.seq_length", m.seq_length(),
              "sequence parallelism splits each context-parallel shard over tensor-parallel ranks");
  }
}

// The layers split over the model pieces, evenly or as parallel.layers_per_stage lists them.
void validate_stage_split(const Checker& c, const clustersim::ModelConfig& m,
                          const clustersim::ParallelConfig& p, const ScheduleInfo& schedule) {
  // DualPipe cuts the model into pp pieces, each held by two stages; the others into pp x v.
  const std::string pieces_name =
      schedule.bidirectional ? "parallel.pp" : "parallel.pp x parallel.virtual_stages";
  const int64_t pieces =
      static_cast<int64_t>(p.pp()) * (schedule.bidirectional ? 1 : p.virtual_stages());
  if (p.layers_per_stage_size() == 0) {
    c.divides(pieces_name.c_str(), pieces, "model.num_layers", m.num_layers(),
              "or give parallel.layers_per_stage for an uneven split");
    return;
  }
  if (p.layers_per_stage_size() != pieces) {
    c.fail("parallel.layers_per_stage has " + std::to_string(p.layers_per_stage_size()) +
           " entries but needs " + pieces_name + " = " + std::to_string(pieces) +
           (schedule.bidirectional ? " (DUALPIPE model pieces)" : ""));
  }
  int64_t sum = 0;
  for (int i = 0; i < p.layers_per_stage_size(); ++i) {
    if (p.layers_per_stage(i) <= 0) {
      c.fail("parallel.layers_per_stage[" + std::to_string(i) +
             "] = " + std::to_string(p.layers_per_stage(i)) + " must be positive");
    }
    sum += p.layers_per_stage(i);
  }
  if (sum != m.num_layers()) {
    c.fail("parallel.layers_per_stage sums to " + std::to_string(sum) +
           " but model.num_layers = " + std::to_string(m.num_layers()));
  }
}

// Batch, virtual stages and microbatch groups fit the schedule (after validate_schedule_shape).
void validate_schedule(const Checker& c, const clustersim::ParallelConfig& p,
                       const ScheduleInfo& schedule) {
  c.divides("parallel.dp x parallel.microbatch_size",
            static_cast<int64_t>(p.dp()) * p.microbatch_size(), "parallel.global_batch_size",
            p.global_batch_size());
  if (p.virtual_stages() > 1) {
    if (!schedule.virtual_stages) {
      c.fail("parallel.virtual_stages = " + std::to_string(p.virtual_stages()) +
             " needs parallel.schedule = " + names_with_virtual_stages(" or "));
    }
    if (p.pp() < 2) c.fail("parallel.virtual_stages > 1 needs parallel.pp > 1");
  }
  if (schedule.whole_groups) {
    c.divides(
        "parallel.pp", p.pp(), "microbatches (global_batch_size / (dp x microbatch_size))",
        num_microbatches(p),
        "the " + std::string(schedule.display) + " schedule runs microbatches in groups of pp");
  }
}

// Options that only make sense with some other setting: ZeRO stage, recompute modules, FP8 stores,
// BF16 edge layers, sharded gradient reduction.
void validate_option_pairs(const Checker& c, const clustersim::RunConfig& config) {
  const auto& m = config.model();
  const auto& p = config.parallel();
  if (p.zero_stage() < 0 || p.zero_stage() > 3) {
    c.fail("parallel.zero_stage = " + std::to_string(p.zero_stage()) + " must be 0, 1, 2 or 3");
  }
  using clustersim::ParallelConfig;
  if (recomputes(p, ParallelConfig::MLA_UP_PROJ) && !m.has_mla())
    c.fail("parallel.recompute_modules names MLA_UP_PROJ but the model has no model.mla");
  if (recomputes(p, ParallelConfig::MOE_ACT) && !m.has_moe())
    c.fail("parallel.recompute_modules names MOE_ACT but the model has no model.moe");
  if (p.activation_fp8_input_store() && config.precision() != clustersim::FP8)
    c.fail("parallel.activation_fp8_input_store needs precision: FP8");
  for (const auto& [v, name] :
       {std::pair{config.num_layers_at_start_in_bf16(), "num_layers_at_start_in_bf16"},
        std::pair{config.num_layers_at_end_in_bf16(), "num_layers_at_end_in_bf16"}}) {
    if (v < 0) c.fail(std::string(name) + " must not be negative (is " + std::to_string(v) + ")");
    c.at_most(name, v, m.num_layers());
  }
  if (p.sharded_grad_reduce() != ParallelConfig::EVERY_MICROBATCH && p.zero_stage() < 2) {
    c.fail("parallel.sharded_grad_reduce = ONCE_PER_STEP needs parallel.zero_stage 2 or 3 (at " +
           std::to_string(p.zero_stage()) + " gradients are not sharded)");
  }
}

// The layout needs no more GPUs than the cluster has (0 = unknown, not checked).
void validate_gpu_count(const Checker& c, const clustersim::ParallelConfig& p,
                        int64_t gpus_available) {
  const int64_t gpus = world_of(dim_sizes(p));
  if (gpus_available <= 0 || gpus <= gpus_available) return;
  std::string product;
  for (const auto& d : kDims)
    if (!d.expert) product += (product.empty() ? "parallel." : " x ") + std::string(d.key);
  c.fail(product + " = " + std::to_string(gpus) + " GPUs but the cluster has " +
         std::to_string(gpus_available));
}

}  // namespace

void validate_run_config(const clustersim::RunConfig& config, int64_t gpus_available,
                         const std::string& source) {
  const Checker c(source);
  if (!config.has_model()) c.fail("model is missing");
  const auto& m = config.model();
  const auto& p = config.parallel();
  validate_sizes(c, m, p);
  validate_attention(c, m, p);
  validate_moe(c, m, p);
  validate_mtp(c, config);
  if (m.has_moe() && m.moe().fp8_dispatch() && config.precision() != clustersim::FP8)
    c.fail(
        "model.moe.fp8_dispatch needs precision FP8 (the dispatch sends what the FP8 "
        "expert GEMMs read)");
  validate_tp_cp_splits(c, m, p);
  const ScheduleInfo& schedule = schedule_info(p.schedule());
  validate_schedule_shape(c, p, schedule);
  validate_stage_split(c, m, p, schedule);
  validate_schedule(c, p, schedule);
  validate_option_pairs(c, config);
  validate_gpu_count(c, p, gpus_available);
}

}  // namespace cs::workload
