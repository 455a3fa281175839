// The mixture-of-experts and latent-attention parts of Hugging Face configs (Mixtral, Qwen3-MoE,
// DeepSeek-V3), read into ModelConfig.moe, .mla and .mtp_layers.
#pragma once

#include "proto/config.pb.h"
#include "sim/config/hf_reader.h"

namespace cs::hf {

// Each fills the fields its architecture adds to the Llama-like ones that the caller has already
// read (layers, hidden size, heads, vocabulary, activation, norms), and throws ConfigError for a
// shape clustersim cannot represent.
void read_mixtral(const Reader& r, clustersim::ModelConfig& m);
void read_qwen3_moe(const Reader& r, clustersim::ModelConfig& m);
void read_deepseek_v3(const Reader& r, clustersim::ModelConfig& m);

}  // namespace cs::hf
