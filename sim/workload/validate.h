// Checks that a run configuration describes a model and parallel layout that can actually be built.
#pragma once

#include <cstdint>
#include <string>

#include "proto/config.pb.h"

namespace cs::workload {

// Throws cs::ConfigError("<source>: <field> ...") at the first violated rule, naming the field and
// the values involved. The rules are Megatron-LM's:
// - model and parallel sizes positive; hidden_size divisible by num_heads unless head_dim (>= 0)
//   is set; num_kv_heads (0 = MHA) divides num_heads;
// - mla: kv_lora_rank, qk_nope/rope and v head dims positive, q_lora_rank >= 0; head_dim 0 and
//   num_kv_heads 0 or num_heads with it; not with cp > 1 (not modelled), biases or learned
//   positions;
// - mtp_layers >= 0, and not with zero_stage 3 (the modules' weight gathers are not modelled);
// - tp divides num_heads, num_kv_heads and ffn_hidden_size. Megatron-Core splits the key/value
//   groups over TP ranks (num_query_groups % tp == 0) and never replicates them, so tp > kv heads
//   is rejected even where tp is a multiple of it (as vLLM would allow at inference);
// - the vocabulary needs no check: it is padded up to a multiple of tp (padded_vocab());
// - seq_length divisible by cp, and by cp x tp with sequence_parallel (each GPU then holds
//   seq / (cp·tp) tokens of the norm / dropout regions);
// - num_layers divisible by pp x virtual_stages, unless layers_per_stage is given, which then
//   needs pp x virtual_stages positive entries summing to num_layers;
// - global_batch_size set and divisible by dp x microbatch_size;
// - virtual_stages > 1 only with a schedule that takes them (INTERLEAVED) and pp > 1;
//   microbatches % pp == 0 for a schedule that runs whole groups of pp (INTERLEAVED);
// - zero_stage in 0..3; dp_bucket_params positive;
// - tp·cp·pp·dp <= gpus_available when gpus_available > 0 (spare GPUs are allowed).
void validate_run_config(const clustersim::RunConfig& config, int64_t gpus_available,
                         const std::string& source);

}  // namespace cs::workload
