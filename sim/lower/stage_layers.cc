#include "sim/lower/stage_layers.h"

#include <optional>

#include "sim/workload/model_math.h"
#include "sim/workload/pipeline_schedule.h"

namespace cs::lower {

using workload::Phase;

StageLayers::StageLayers(const clustersim::RunConfig& config, int32_t stage, bool segmented)
    : config_(config), segmented_(segmented), full_(config), bf16_(config), bf16_full_(config) {
  full_.mutable_parallel()->set_recompute(clustersim::ParallelConfig::FULL);
  bf16_full_.mutable_parallel()->set_recompute(clustersim::ParallelConfig::FULL);
  bf16_.set_precision(clustersim::BF16);
  bf16_full_.set_precision(clustersim::BF16);
  dense_ = make(nullptr, false);
  std::optional<workload::RoutingTable> routing;
  if (config.model().has_moe()) routing.emplace(config);
  for (const int32_t l : workload::stage_layers(config, stage)) {
    if (routing && workload::is_moe_layer(config.model(), l)) {
      const workload::ExpertLoad load = routing->load(l);
      own_.emplace(l, make(&load, in_bf16(l)));
    } else if (in_bf16(l)) {
      own_.emplace(l, make(nullptr, true));
    }
  }
  for (int32_t k = 0; k < config.model().mtp_layers(); ++k)
    mtp_.push_back(config.model().num_layers() + k);
}

const LayerWork& StageLayers::of(int32_t layer) const {
  const auto it = own_.find(layer);
  return it == own_.end() ? dense_ : it->second;
}

bool StageLayers::in_bf16(int32_t layer) const {
  const int32_t layers = config_.model().num_layers();
  return config_.precision() != clustersim::BF16 && layer < layers &&
         (layer < config_.num_layers_at_start_in_bf16() ||
          layer >= layers - config_.num_layers_at_end_in_bf16());
}

LayerWork StageLayers::make(const workload::ExpertLoad* experts, bool high_precision) const {
  const clustersim::RunConfig& c = high_precision ? bf16_ : config_;
  LayerWork w;
  w.fwd = workload::layer_ops(c, Phase::kForward, experts);
  w.bwd = workload::layer_ops(c, Phase::kBackward, experts);
  w.wgrad = workload::layer_ops(c, Phase::kWeightGrad, experts);
  w.recompute = workload::layer_recompute_ops(c, experts);
  if (segmented_)
    w.segment_recompute =
        workload::layer_recompute_ops(high_precision ? bf16_full_ : full_, experts);
  return w;
}

ChunkSpan chunk_span(const clustersim::RunConfig& config, int32_t stage, int32_t chunk) {
  const auto& par = config.parallel();
  const int32_t p = par.pp(), v = par.virtual_stages();
  const workload::PipelineSchedule schedule = workload::pipeline_schedule_of(par);
  const std::vector<int32_t> pieces = workload::layers_per_piece(config);
  const int32_t piece = workload::model_piece(schedule, stage, chunk, p);
  ChunkSpan span;
  span.stage = stage;
  span.chunk = chunk;
  span.first = piece == 0;
  span.last = piece == workload::model_pieces(schedule, p, v) - 1;
  span.layers = pieces[static_cast<std::size_t>(piece)];
  for (int32_t q = 0; q < piece; ++q) span.first_layer += pieces[static_cast<std::size_t>(q)];
  return span;
}

}  // namespace cs::lower
