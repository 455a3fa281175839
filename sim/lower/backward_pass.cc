#include "sim/lower/backward_pass.h"

#include "sim/lower/gathered_layers.h"
#include "sim/lower/grad_buckets.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/model_math.h"

namespace cs::lower {

namespace {

using workload::LayerOp;
using workload::OpClass;
using workload::Phase;

class BackwardPassLowering {
 public:
  BackwardPassLowering(const StageRules& rules, const StageLayers& layers, OpMaker& make,
                       const ChunkSpan& span, bool split_backward, workload::ChunkWork& chunk)
      : rules_(rules),
        layers_(layers),
        make_(make),
        span_(span),
        backward_(chunk.backward),
        grads_phase_(split_backward ? chunk.weight_grad : chunk.backward),
        w_class_(split_backward ? OpClass::kWeightGrad : OpClass::kBackward),
        gathered_(rules, make, chunk.backward),
        grads_(rules, make, grads_phase_, chunk.grad_sync),
        expert_grads_(rules, make, grads_phase_, chunk.grad_sync) {}

  void build() {
    if (span_.last) {
      // The modules' backward, last first, before the main head's: their losses reach the main
      // model's last hidden state through their entries.
      const std::vector<int32_t>& mtp = layers_.mtp();
      for (auto it = mtp.rbegin(); it != mtp.rend(); ++it) mtp_module(*it);
      head();
      grads_.ready(rules_.head_params());
    }
    // Layers in reverse: layer `layers-1-l` of the chunk in forward order.
    for (int32_t l = 0; l < span_.layers; ++l) layer(span_.layers - 1 - l);
    if (span_.first) embedding();
    grads_.flush();  // the last, partly filled bucket
    if (rules_.expert_groups) expert_grads_.flush();
  }

 private:
  // Appends input-gradient ops to the backward and weight-gradient ops where they go.
  void pair(const std::vector<LayerOp>& input_grad, const std::vector<LayerOp>& weight_grad) {
    make_.append(backward_, input_grad, OpClass::kBackward);
    make_.append(grads_phase_, weight_grad, w_class_);
  }

  void head() {
    pair(workload::head_ops(rules_.config, Phase::kBackward),
         workload::head_ops(rules_.config, Phase::kWeightGrad));
  }

  void mtp_module(int32_t l) {
    const LayerWork& lw = layers_.of(l);
    head();
    make_.layer = l;
    if (!lw.recompute.empty()) make_.append(backward_, lw.recompute, OpClass::kRecompute);
    pair(lw.bwd, lw.wgrad);
    pair(workload::mtp_entry_ops(rules_.config, Phase::kBackward),
         workload::mtp_entry_ops(rules_.config, Phase::kWeightGrad));
    make_.layer = -1;
    layer_grads_ready(l);
  }

  // Layer `index` of the chunk (forward order).
  void layer(int32_t index) {
    const int32_t l = span_.first_layer + index;
    make_.layer = l;
    const LayerWork& lw = layers_.of(l);
    if (rules_.segmented) {
      segment_recompute(index);
    } else if (!lw.recompute.empty()) {
      make_.append(backward_, lw.recompute, OpClass::kRecompute);
    }
    gathered_.add(lw.bwd, OpClass::kBackward);
    make_.append(grads_phase_, lw.wgrad, w_class_);
    make_.layer = -1;  // gradient buckets span layers
    layer_grads_ready(l);
  }

  // checkpoint_every_k_layers: a run of k layers starts its backward at its last layer, where the
  // whole run's forward is recomputed.
  void segment_recompute(int32_t index) {
    const int32_t k = rules_.every_k;
    if (index != span_.layers - 1 && (index + 1) % k != 0) return;
    const int32_t run_len = index % k + 1;
    for (int32_t r = 0; r < run_len; ++r)
      make_.append(backward_, layers_.of(make_.layer - r).segment_recompute, OpClass::kRecompute);
  }

  void embedding() {
    pair(workload::embedding_ops(rules_.config, Phase::kBackward),
         workload::embedding_ops(rules_.config, Phase::kWeightGrad));
    grads_.ready(rules_.vocab_params);
  }

  void layer_grads_ready(int32_t l) {
    grads_.ready(rules_.dense_params(l));
    if (rules_.expert_groups) expert_grads_.ready(workload::layer_expert_params(rules_.config, l));
  }

  const StageRules& rules_;
  const StageLayers& layers_;
  OpMaker& make_;
  const ChunkSpan& span_;
  workload::PhaseOps& backward_;
  workload::PhaseOps& grads_phase_;  // where weight gradients go
  OpClass w_class_;
  GatheredLayers gathered_;
  GradBuckets grads_;
  ExpertGradBuckets expert_grads_;
};

}  // namespace

void build_backward(const StageRules& rules, const StageLayers& layers, OpMaker& make,
                    const ChunkSpan& span, bool split_backward, workload::ChunkWork& chunk) {
  BackwardPassLowering(rules, layers, make, span, split_backward, chunk).build();
}

}  // namespace cs::lower
