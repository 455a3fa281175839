// The parallel dimensions as data: the one table that layouts, streams, statistics and reports
// iterate over.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace cs::workload {

// In layout order: TP innermost (consecutive ranks), DP outermost; then the dimensions of the
// expert layout, which Megatron-Core carves from the TP x CP x DP ranks of each pipeline stage:
// EP (the GPUs a layer's routed experts are split over) and EDP (the replicas of each expert,
// whose gradients are summed). The values are those of trace.proto's Dim.
enum class Dim : uint8_t { kTp, kCp, kPp, kDp, kEp, kEdp };

// Each stream runs its ops one at a time in program order, like a CUDA stream. Tensor-parallel
// collectives sit on the compute stream because Megatron's layers block on them; pipeline
// sends and receives get a stream per direction, so that each link between two stages is a
// FIFO on both ends and the two ends can never wait on each other in opposite orders. With
// Transformer Engine's comm-GEMM overlap, the chunks of TP collectives leave the compute stream
// for a TP stream of their own, so that they run beside the GEMM pieces. The values are those of
// trace.proto's Stream.
// Pipeline transfers: activations go to the next stage on kSendNext / kRecvPrev and their
// gradients come back on kSendPrev / kRecvNext. Schedules whose activations also flow to the
// previous stage (ZB-V's second chunk, DualPipe's reverse direction) use the last four, so that
// every in-order stream carries one kind of message between one pair of stages.
enum class Stream : uint8_t {
  kCompute,
  kDp,
  kCp,
  kSendNext,
  kSendPrev,
  kRecvPrev,
  kRecvNext,
  kTp,
  kSendPrevActivation,
  kRecvNextActivation,
  kSendNextGradient,
  kRecvPrevGradient,
  kEp,  // expert all-to-alls overlapped with another microbatch's compute (DualPipe's pairs)
};
constexpr int kNumStreams = 13;

struct DimInfo {
  Dim dim;
  // The ParallelConfig field with the dimension's size, its JSON key and the prefix of its trace
  // communicators ("tp0", "tp1", ...).
  std::string_view key;
  std::string_view label;  // in layout text: "TP 8 x CP 1 x PP 16 x DP 128"
  // The JSON key of a stage's exposed communication of this dimension.
  std::string_view stage_key;
  // The stream whose collectives the compute stream waits on when it waits for this dimension:
  // the dimension's exposed communication. (Pipeline transfers have four streams of their own,
  // and their waits are told by the op kind; kSendNext stands for them. Collectives on the
  // compute stream block it, and their whole time is the dimension's exposed communication.)
  Stream comm_stream;
  // A dimension of the expert layout: not a factor of the world size, and without a stride,
  // since its ranks are numbered over the stage's TP x CP x DP ranks (Layout).
  bool expert = false;
};

inline constexpr std::array<DimInfo, 6> kDims = {{
    {Dim::kTp, "tp", "TP", "tp_comm_s", Stream::kTp},
    {Dim::kCp, "cp", "CP", "cp_wait_s", Stream::kCp},
    {Dim::kPp, "pp", "PP", "pp_wait_s", Stream::kSendNext},
    {Dim::kDp, "dp", "DP", "dp_wait_s", Stream::kDp},
    // The dispatch and combine all-to-alls block the compute stream, as Megatron-Core's token
    // dispatcher does, except in DualPipe's overlapped pairs (their own stream); expert
    // gradients are reduced on the DP stream beside the dense ones.
    {Dim::kEp, "ep", "EP", "ep_comm_s", Stream::kEp, true},
    {Dim::kEdp, "edp", "EDP", "edp_wait_s", Stream::kDp, true},
}};
constexpr int kNumDims = static_cast<int>(kDims.size());

constexpr const DimInfo& info(Dim d) {
  return kDims[static_cast<std::size_t>(d)];
}

// Sizes by dimension, in kDims order.
using DimSizes = std::array<int32_t, kNumDims>;

// Seconds by dimension, in kDims order.
using DimSeconds = std::array<double, kNumDims>;

// "TP 8 x CP 1 x PP 16 x DP 128" (with `separator` " x "), then " x EP 8 x EDP 16" when the
// experts are split (EP > 1).
std::string dims_text(const DimSizes& sizes, std::string_view separator = " x ");

}  // namespace cs::workload
