// The distributed optimizer's parameter all-gather overlapped with the forward (ZeRO-1/2 under
// Megatron's overlap_param_gather): the updated bf16 parameters in buckets, each gathered before
// the first forward op that uses them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "proto/config.pb.h"
#include "sim/lower/bucket.h"
#include "sim/lower/op_maker.h"
#include "sim/workload/program_builder.h"

namespace cs::lower {

// Parameters per all-gather bucket of the distributed optimizer's overlapped gather on model
// chunk `chunk` of pipeline stage `stage`. Megatron-Core buckets by bucket_size on the first
// stage's first chunk only: DistributedDataParallel.__init__ (megatron/core/distributed/
// distributed_data_parallel.py) sets bucket_size = None, one bucket, "if disable_bucketing or
// pp_rank > 0" ("data-parallel communication on these stages is not on the critical path"), and
// megatron/training/training.py wraps chunks after the first with disable_bucketing=
// (model_chunk_idx > 0); NeMo's "the granularity of DP communication becomes the Transformer
// layers per virtual pipeline stage" describes those others. The gathers are queued back to back
// on the DP stream at the step's start: the forward pre-hook's finish_param_sync
// (param_and_grad_buffer.py) waits for its bucket and dispatches next_param_gather_bucket_group,
// and that wait (torch.distributed Work.wait() on NCCL) holds the compute stream, not the CPU,
// which runs ahead through the next pre-hooks. So stage 0's first forward waits for its first
// bucket alone, and a later stage's single gather runs while the pipeline fills.
int64_t param_gather_bucket(const clustersim::ParallelConfig& par, int32_t stage, int32_t chunk);

// One chunk's parameter-gather buckets. A bucket is gathered (into `out`) before the first op of
// `forward` that uses any of its parameters, once it holds `capacity` or at the end of the pass.
class ParamGatherBuckets {
 public:
  // `enabled` false: the parameters are gathered after the optimizer instead, and this does
  // nothing.
  ParamGatherBuckets(bool enabled, int64_t capacity, OpMaker& make,
                     const workload::PhaseOps& forward, std::vector<workload::ParamGather>& out);

  // `params` are used from forward op `first_op` on.
  void used(int64_t params, std::size_t first_op);
  // Gathers the last, partly filled bucket.
  void flush();

 private:
  void gather(int64_t params);

  bool enabled_;
  Bucket bucket_;
  OpMaker& make_;
  const workload::PhaseOps& forward_;
  std::vector<workload::ParamGather>& out_;
  uint32_t before_ = 0;  // the first forward op that uses the bucket's parameters
};

}  // namespace cs::lower
