// How one executor runs: NCCL tuning, fluid collectives, folding, the modelled effects and hooks.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "sim/coll/nccl_plan.h"
#include "sim/coll/schedule.h"
#include "sim/core/units.h"
#include "sim/exec/all_to_all_v.h"
#include "sim/exec/interference.h"
#include "sim/exec/variability.h"
#include "sim/net/topology.h"
#include "sim/workload/program.h"

namespace cs::exec {

// Time and network bytes of a collective run alone on its GPUs.
struct IsolatedCollective {
  Time duration;
  Bytes bytes_sent = 0;
  Bytes wire_bytes = 0;  // what the links carried (protocol flags, NVLink packet overhead)
};
using IsolatedCollectiveTimer = std::function<IsolatedCollective(
    const coll::Schedule&, std::span<const net::VertexId> vertices, Bytes size)>;

// Called as each op of an observed rank completes, with the time it started (for a collective or
// transfer: when this rank posted it). For timelines; costs nothing when not set.
using OpObserver = std::function<void(int32_t rank, const workload::Program& program, uint32_t op,
                                      Time start, Time end)>;

// Everything defaults to off, so that a test states only the effect it exercises.
struct ExecutorOptions {
  // How collectives become schedules (NCCL's algorithm / protocol choice and wire costs); empty:
  // NCCL's model for the topology's GPU type with every effect on.
  std::optional<coll::NcclTuning> nccl;
  // Runs the collectives that have a fluid form (coll/fluid.h) as fluid transfers instead of
  // message by message.
  bool fluid_collectives = false;
  // Expert-parallel all-to-alls of layout programs pay the wire costs NCCL's plan gives their op
  // (apply_wire_model in all_to_all_v.h); off (and imported traces' all-to-alls): their payload
  // moves at the links' line rate.
  bool all_to_all_wire = false;
  // With all_to_all_wire, what DeepEP's kernels reach of that wire rate (the deduplicated
  // all-to-alls of the DEEPEP dispatcher; effects.deepep_kernel_share).
  KernelShares deepep;
  // What each of those DeepEP all-to-alls takes beyond its bytes, per call and per token and
  // peer, before its transfers start (effects.deepep_token_cost); zero: nothing.
  TokenCost deepep_tokens;
  // Collectives of a dimension whose groups each fill part of one server's NVSwitch domain, while
  // no other dimension has two members on one server, have those NVLink ports to themselves:
  // nothing else can slow them. Such a collective's time then depends only on its schedule and
  // size, so this timer runs it once alone (on the same network model) and the executor reuses
  // the result for every group and every later call. For TP 8 this removes most of the events of
  // a large run. Empty: every collective is simulated.
  IsolatedCollectiveTimer isolated_timer;
  // Simulates each tensor-parallel group once, on its first rank, when its collectives are timed
  // alone (isolated_timer) because the group has its server's NVLink to itself: the members run
  // the same program on the same inputs, so only their network traffic differs. Each network op
  // of the group is still sent by every member over its own GPU and NIC, and the group's op ends
  // when the last member's part ends. Every member reports the first rank's statistics.
  bool fold_tensor_parallel = false;
  // The same for data-parallel replicas: replica 0 is simulated and the others only send their
  // network traffic, beside its own.
  bool fold_data_parallel = false;
  // Slows compute-stream kernels while communication of their GPU is in flight (interference.h).
  std::optional<InterferenceModel> interference;
  // Holds the compute stream's kernel while a kernel of another stream runs on its GPU
  // (effects.side_stream_contention; KernelStretcher::hold). Layout programs only.
  bool side_stream_contention = false;
  // What launching one compute-stream kernel costs the host (effects.host_dispatch): a kernel
  // cannot start before the host, which launches the step's kernels one after another from its
  // start without blocking, has launched it. Zero: the host keeps ahead. Layout programs only.
  Time host_per_kernel;
  // More host time as the compute stream enters another layer (Op::layer), forward or backward:
  // the software stack's per-unit hooks.
  Time host_per_layer_pass;
  // Times compute kernels per rank (variability.h). A model whose ranks differ switches folding
  // off, since a folded rank stands for others that must compute alike.
  std::optional<ComputeVariability> variability;
  // Called for each op of a rank r with observed[r] set.
  OpObserver observer;
  std::vector<bool> observed;
  // Called once, as the last rank finishes the step (another job's next step can start there).
  std::function<void()> on_finished;
};

}  // namespace cs::exec
