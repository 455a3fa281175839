// Compute kernels slowed while communication of their GPU is in flight (interference.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/compute/kernel.h"
#include "sim/core/simulator.h"
#include "sim/exec/interference.h"

namespace cs::exec {

// Each rank runs at most one stretchable kernel at a time (its compute stream's). A kernel's
// remaining work is kept in picoseconds of isolated time; whenever communication of its GPU
// starts or ends, the work done at the old rate is subtracted and the completion is rescheduled at
// the new rate, in the order those events are handled (the event queue's total order), so a run
// is reproducible bit for bit.
class KernelStretcher {
 public:
  // Called as a rank's kernel ends, with how much longer than alone it ran and how much of that
  // it was held (hold()).
  using Finished = std::function<void(int32_t rank, uint32_t op, Time stretched_by, Time held)>;
  // What the slowdown law reads of a kernel.
  struct Shape {
    compute::KernelKind kind = compute::KernelKind::kGemm;
    double hbm_bytes = 0;
    int64_t ctas = 0;  // thread blocks for wave quantization (0: unknown)
  };

  KernelStretcher(Simulator& sim, const InterferenceModel& model, std::size_t ranks,
                  Finished finished);

  const InterferenceModel& model() const { return model_; }
  // Starts `rank`'s kernel (op `op`) that lasts `isolated` while alone on its GPU.
  void start(int32_t rank, uint32_t op, const Shape& shape, Time isolated);
  // Communication of `path` starts (+1) or ends (-1) on `rank`'s GPU.
  void change_load(int32_t rank, CommPath path, int sign);
  // A kernel of another stream that takes `rank`'s GPU starts (+1) or ends (-1): while one runs,
  // the compute stream's kernel (running or started meanwhile) makes no progress.
  void hold(int32_t rank, int sign);
  const CommLoad& load(int32_t rank) const { return ranks_[static_cast<std::size_t>(rank)].load; }

  // Memory held per rank.
  static std::size_t bytes_per_rank();

 private:
  struct Running {
    CommLoad load;      // communication of this GPU in flight
    int32_t holds = 0;  // other streams' kernels holding the GPU (hold())
    bool busy = false;
    bool held = false;  // the kernel made no progress since `since`
    uint32_t op = 0;
    Shape shape;
    Time isolated, started, since;  // `since`: when the rate last changed
    Time held_for;                  // time held so far
    double left_ps = 0;             // isolated-time picoseconds still to run
    double slowdown = 1;
    EventId event;
  };
  void reschedule(int32_t rank);

  Simulator& sim_;
  InterferenceModel model_;
  std::vector<Running> ranks_;
  Finished finished_;
};

}  // namespace cs::exec
