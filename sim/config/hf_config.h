// Models read from a Hugging Face `config.json`, as the model section of a run's config.
#pragma once

#include <string>

#include "proto/config.pb.h"

namespace cs {

// The model of the Hugging Face config at `path` (a config.json, or a folder holding one). Reads
// LlamaForCausalLM and the dense architectures built like it (Mistral, Qwen2, Qwen3, with
// head_dim where it differs from hidden_size / heads), and the mixtures of experts
// MixtralForCausalLM, Qwen3MoeForCausalLM and DeepseekV3ForCausalLM (into model.moe, with
// DeepSeek's latent attention in model.mla and its multi-token prediction in model.mtp_layers;
// hf_mixtures.h says what each maps and ignores). Throws ConfigError naming the file and the field
// for unreadable JSON, a missing or mistyped field, an architecture it does not read, or a shape
// clustersim cannot represent. `seq_length` is not taken from the file (max_position_embeddings
// is the longest context, not the training length): the caller keeps its own.
clustersim::ModelConfig model_from_hf_config(const std::string& path);

}  // namespace cs
