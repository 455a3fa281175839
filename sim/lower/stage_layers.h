// The transformer layers one pipeline stage runs: each layer's ops in every pass, and where each
// of the stage's model chunks sits in the model.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "proto/config.pb.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/moe.h"

namespace cs::lower {

// The ops of one layer in each pass.
struct LayerWork {
  std::vector<workload::LayerOp> fwd, bwd, wgrad, recompute, segment_recompute;
};

// The ops of the layers of one stage: one list for every dense layer, one per MoE layer (its own
// routing) and per layer Megatron-Core keeps in BF16 under a quantized precision (the first and
// last num_layers_at_{start,end}_in_bf16).
class StageLayers {
 public:
  // `segmented`: each layer also gets its fully recomputed forward (checkpoint_every_k_layers).
  StageLayers(const clustersim::RunConfig& config, int32_t stage, bool segmented);

  const LayerWork& dense() const { return dense_; }
  // Layer `layer`'s ops (model order; the MTP blocks after the last layer are dense ones).
  const LayerWork& of(int32_t layer) const;
  // Whether `layer` runs in BF16 under a quantized precision.
  bool in_bf16(int32_t layer) const;
  // The multi-token prediction blocks, after the head, in model order.
  const std::vector<int32_t>& mtp() const { return mtp_; }

 private:
  LayerWork make(const workload::ExpertLoad* experts, bool high_precision) const;

  const clustersim::RunConfig& config_;
  bool segmented_;
  clustersim::RunConfig full_, bf16_, bf16_full_;
  LayerWork dense_;
  std::unordered_map<int32_t, LayerWork> own_;  // MoE layers and BF16 dense ones
  std::vector<int32_t> mtp_;
};

// Where one model chunk of a stage sits in the model.
struct ChunkSpan {
  int32_t stage = 0;        // pipeline stage
  int32_t chunk = 0;        // the stage's virtual chunk
  bool first = false;       // holds the embedding
  bool last = false;        // holds the head (and the MTP modules)
  int32_t first_layer = 0;  // in model order
  int32_t layers = 0;
};
ChunkSpan chunk_span(const clustersim::RunConfig& config, int32_t stage, int32_t chunk);

}  // namespace cs::lower
