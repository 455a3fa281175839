#include "sim/lower/forward_pass.h"

#include "sim/lower/gathered_layers.h"
#include "sim/lower/param_gather.h"
#include "sim/workload/layer_ops.h"

namespace cs::lower {

namespace {

using workload::OpClass;
using workload::Phase;

class ForwardPassLowering {
 public:
  ForwardPassLowering(const StageRules& rules, const StageLayers& layers, OpMaker& make,
                      const ChunkSpan& span, workload::ChunkWork& chunk)
      : rules_(rules),
        layers_(layers),
        make_(make),
        span_(span),
        forward_(chunk.forward),
        gathered_(rules, make, chunk.forward),
        gathers_(rules.overlap_param_gather,
                 param_gather_bucket(rules.config.parallel(), span.stage, span.chunk), make,
                 chunk.forward, chunk.param_gather) {}

  void build() {
    if (span_.first) embedding();
    for (int32_t l = 0; l < span_.layers; ++l) layer(span_.first_layer + l);
    make_.layer = -1;
    if (span_.last) {
      head();
      for (const int32_t l : layers_.mtp()) mtp_module(l);
    }
    gathers_.flush();
  }

 private:
  void embedding() {
    const std::size_t at = forward_.ops.size();
    make_.append(forward_, workload::embedding_ops(rules_.config, Phase::kForward),
                 OpClass::kForward);
    gathers_.used(rules_.vocab_params, at);
  }

  void layer(int32_t l) {
    make_.layer = l;
    const std::size_t at = forward_.ops.size();
    gathered_.add(layers_.of(l).fwd, OpClass::kForward);
    gathers_.used(rules_.dense_params(l), at);
  }

  void head() {
    const std::size_t at = forward_.ops.size();
    make_.append(forward_, workload::head_ops(rules_.config, Phase::kForward), OpClass::kForward);
    gathers_.used(rules_.head_params(), at);
  }

  // Multi-token prediction: the module's entry, its block and the shared head again.
  void mtp_module(int32_t l) {
    const std::size_t at = forward_.ops.size();
    make_.layer = l;
    make_.append(forward_, workload::mtp_entry_ops(rules_.config, Phase::kForward),
                 OpClass::kForward);
    make_.append(forward_, layers_.of(l).fwd, OpClass::kForward);
    make_.layer = -1;
    make_.append(forward_, workload::head_ops(rules_.config, Phase::kForward), OpClass::kForward);
    gathers_.used(rules_.dense_params(l), at);
  }

  const StageRules& rules_;
  const StageLayers& layers_;
  OpMaker& make_;
  const ChunkSpan& span_;
  workload::PhaseOps& forward_;
  GatheredLayers gathered_;
  ParamGatherBuckets gathers_;
};

}  // namespace

void build_forward(const StageRules& rules, const StageLayers& layers, OpMaker& make,
                   const ChunkSpan& span, workload::ChunkWork& chunk) {
  ForwardPassLowering(rules, layers, make, span, chunk).build();
}

}  // namespace cs::lower
