#include "sim/plan/step_estimate.h"

#include <algorithm>
#include <string>

#include "sim/compute/gpu_hardware.h"
#include "sim/compute/gpu_profile.h"
#include "sim/compute/kernel_cost.h"
#include "sim/lower/stage_work.h"
#include "sim/net/topology_builder.h"
#include "sim/net/trunks.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/memory.h"
#include "sim/workload/model_math.h"
#include "sim/workload/schedules/registry.h"
#include "sim/world/world.h"

namespace cs::plan {

namespace {

using clustersim::RunConfig;

// Per GPU, the fractions of an all-to-all's bytes bound for EP peers on its own server and on
// other servers, for the EP group of rank 0 (every group has the same shape).
struct EpSpread {
  double local = 0, remote = 0;
};
EpSpread ep_spread(const RunConfig& config, int32_t gpus_per_node) {
  const workload::Layout layout = workload::layout_of(config.parallel());
  const auto members = layout.group_members(0, workload::Dim::kEp);
  const auto n = static_cast<double>(members.size());
  double same_node = 0;
  for (const int32_t r : members) same_node += r / gpus_per_node == 0 ? 1 : 0;
  return {(same_node - 1) / n, (n - same_node) / n};
}

// A compute op's seconds; for an expert op, the busiest EP rank's, since each layer's dispatch
// and combine all-to-alls make the whole EP group wait for it.
double compute_seconds(const workload::StageWork& work, const workload::PhaseOps& phase) {
  double s = 0;
  for (const auto& e : phase.ops) {
    const workload::Op& op = e.op;
    if (op.kind != workload::OpKind::kCompute) continue;
    if (op.varies == UINT32_MAX) {
      s += op.duration.as_seconds();
    } else {
      const auto& times = work.rank_times[op.varies];
      s += std::max_element(times.begin(), times.end())->as_seconds();
    }
  }
  return s;
}

// What a collective's seconds are reckoned from: NVLink and NIC bytes per second, where the EP
// group's all-to-all bytes go, and for data-parallel calls the GPUs a server, NCCL's model with
// the config's settings and the fabric's oversubscribed tiers.
struct EstimateLinks {
  double nvlink = 0, nic = 0;
  EpSpread ep;
  int32_t gpus_per_node = 1;
  coll::NcclTuning nccl;
  std::vector<net::OversubscribedDomain> domains;
};

// Seconds of the phase's collectives: the expert all-to-alls' or the others'.
double phase_comm_seconds(const workload::PhaseOps& phase, bool expert,
                          const clustersim::ParallelConfig& p, const EstimateLinks& links) {
  double s = 0;
  for (const auto& e : phase.ops) {
    const auto& op = e.op;
    if (op.kind != workload::OpKind::kCollective) continue;
    const auto bytes = static_cast<double>(op.bytes);
    if ((op.dim == workload::Dim::kEp) != expert) continue;
    if (expert) {
      if (op.coll_op != coll::Op::kAllToAll) {
        s += 5e-6;  // the token-count all-gather before a dispatch: a few KB, its latency
        continue;
      }
      // A MoE layer's dispatch and combine all-to-alls, forward and backward: 4 per layer and
      // microbatch, each moving this GPU's T x top_k token copies of h bf16 values. The copies
      // for experts on this GPU stay; those for its server's peers go over NVLink while those
      // for other servers leave over its NIC, at once (node-limited dedup is left out, so
      // this is an upper bound when model.moe.max_nodes_per_token is set).
      s += 5e-6 +
           std::max(bytes * links.ep.local / links.nvlink, bytes * links.ep.remote / links.nic);
      continue;
    }
    const int32_t n = op.dim == workload::Dim::kTp   ? p.tp()
                      : op.dim == workload::Dim::kCp ? p.cp()
                                                     : 1;
    if (n <= 1) continue;
    const double factor =
        op.coll_op == coll::Op::kAllReduce ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
    s += 5e-6 + bytes * factor / (op.dim == workload::Dim::kTp ? links.nvlink : links.nic);
  }
  return s;
}

// One chunk's compute seconds per pass, and a pipeline slot: those plus the chunk's collectives.
struct SlotTimes {
  double forward = 0, backward = 0, weight_grad = 0, per_slot = 0;
};

SlotTimes slot_times(const clustersim::ParallelConfig& p, const workload::StageWork& work,
                     const EstimateLinks& links) {
  const auto& chunk = work.chunks.front();
  SlotTimes t;
  t.forward = compute_seconds(work, chunk.forward);
  t.backward = compute_seconds(work, chunk.backward);
  t.weight_grad = compute_seconds(work, chunk.weight_grad);
  auto all_comm = [&](bool expert) {
    return phase_comm_seconds(chunk.forward, expert, p, links) +
           phase_comm_seconds(chunk.backward, expert, p, links) +
           phase_comm_seconds(chunk.weight_grad, expert, p, links);
  };
  // DualPipe's overlapped pairs run the all-to-alls under the other half's compute: only what
  // outlasts a forward and a backward shows (an upper bound on hiding: warm-up and cool-down
  // run unpaired).
  const bool paired = workload::pipeline_schedule_of(p) == workload::PipelineSchedule::kDualPipe &&
                      p.dualpipe_overlap();
  const double expert_comm =
      paired ? std::max(0.0, all_comm(true) - t.forward - t.backward) : all_comm(true);
  t.per_slot = t.forward + t.backward + t.weight_grad + all_comm(false) + expert_comm;
  return t;
}

// The share of a collective's bytes that leave the domain (of `domain_gpus` GPUs, in rank order)
// each member sits in, in NCCL's algorithm: PAT's doubling steps, step k pairing members 2^k
// apart and moving min(2^k, n - 2^k) of the n - 1 blocks, or a ring's hops, one a member.
double leaving_share(const std::vector<int32_t>& members, coll::NcclAlgo algo,
                     int64_t domain_gpus) {
  const auto n = static_cast<int64_t>(members.size());
  const auto crossing = [&](int64_t distance) {  // the members whose peer is in another domain
    int64_t c = 0;
    for (int64_t i = 0; i < n; ++i)
      c += members[i] / domain_gpus != members[(i + distance) % n] / domain_gpus ? 1 : 0;
    return static_cast<double>(c) / static_cast<double>(n);
  };
  if (algo != coll::NcclAlgo::kPat) return crossing(1);
  double share = 0;
  for (int64_t d = 1; d < n; d *= 2)
    share += crossing(d) * static_cast<double>(std::min(d, n - d)) / static_cast<double>(n - 1);
  return share;
}

// A gather or reduction of one call's `bytes` over the `dim` group of rank 0, as NCCL would run it
// (NcclTuning::model_choice, with the GPU's NCCL figures): its members, its algorithm, and the
// latency NCCL's model charges the call (a ring's per-rank steps: tens of ms over thousands of
// servers; none with effects.nccl_step_latency off).
struct DpCall {
  std::vector<int32_t> members;
  coll::NcclAlgo algo = coll::NcclAlgo::kRing;
  double latency_s = 0;
};
DpCall dp_call(const RunConfig& config, workload::Dim dim, double bytes,
               const EstimateLinks& links) {
  DpCall call;
  call.members = workload::layout_of(config.parallel()).group_members(0, dim);
  const auto n = static_cast<int32_t>(call.members.size());
  if (n < 2) return call;
  const int32_t per_node = std::max(links.gpus_per_node, 1);
  int32_t local = 0;
  for (const int32_t m : call.members) local += m / per_node == call.members[0] / per_node ? 1 : 0;
  const coll::NcclTuning& tuning = links.nccl;
  const coll::NcclChoice choice =
      tuning.model_choice(coll::Op::kAllGather, n, local, static_cast<Bytes>(bytes));
  call.algo = choice.algo;
  // As the simulated call pays it: with effects.nccl_step_latency, and not on an IDEAL network.
  if (tuning.settings().step_latency)
    call.latency_s = 1e-6 * coll::model_latency_us(coll::Op::kAllGather, choice.algo,
                                                   choice.protocol, tuning.graph(n, local));
  return call;
}

// How many times its NICs' time the call takes while every group of the layout runs one, on a
// fabric whose tiers are oversubscribed: what leaves a domain shares the domain's links up,
// 1 / ratio of its GPUs' NICs (at least 1). As the analytical network's trunks (net/trunks.h)
// see it; a ring leaves a pod once, PAT's long steps every time.
double fabric_slowdown(const RunConfig& config, const DpCall& call,
                       const std::vector<net::OversubscribedDomain>& domains) {
  if (call.members.size() < 2 || !config.effects().analytical_oversubscribed_trunks()) return 1;
  double slowdown = 1;
  for (const auto& d : domains)
    slowdown = std::max(slowdown, leaving_share(call.members, call.algo, d.gpus) * d.ratio);
  return slowdown;
}

// Seconds of one reduce-scatter or all-gather of the stage's weights in bf16 over the GPU's NIC,
// in calls of a layer's weights under ZeRO-3 (else one of the stage's), each paying NCCL's
// latency for it and slowed where the group's traffic crosses an oversubscribed tier
// (fabric_slowdown): dense weights over DP, routed experts (when split, EP > 1) over their
// expert-data-parallel group.
double dp_pass_seconds(const RunConfig& config, int32_t stage, const EstimateLinks& links) {
  const auto& p = config.parallel();
  const double params = static_cast<double>(workload::stage_params(config, stage));
  const double expert_params =
      p.ep() > 1 ? static_cast<double>(workload::stage_expert_params(config, stage)) : 0.0;
  const double calls =
      p.zero_stage() == 3 ? std::max(1, workload::layers_on_stage(config, stage)) : 1;
  auto pass = [&](double n_params, double group, workload::Dim dim) {  // an RS or an AG
    if (group <= 1) return 0.0;
    const double bytes = 2.0 * n_params;
    const DpCall call = dp_call(config, dim, bytes / calls, links);
    return bytes * (group - 1) / group / links.nic * fabric_slowdown(config, call, links.domains) +
           calls * call.latency_s;
  };
  const double dp = p.dp();
  const auto edp =
      static_cast<double>(workload::dim_sizes(p)[static_cast<int>(workload::Dim::kEdp)]);
  return pass(params - expert_params, dp, workload::Dim::kDp) +
         pass(expert_params, edp, workload::Dim::kEdp);
}

}  // namespace

double estimate_step_seconds(const RunConfig& config, int32_t gpus_per_node) {
  const auto& p = config.parallel();
  const auto gpu = compute::load_gpu_profile(compute::gpu_or_default(config.cluster().gpu()));
  const compute::KernelCostModel cost(gpu);
  const int32_t stage = p.pp() / 2;
  const auto work = lower::build_stage_work(config, stage, cost, false);
  EstimateLinks links;
  links.nvlink = gpu.nvlink_bandwidth_gbytes() * 1e9;
  links.nic = gpu.nic_bandwidth_gbits() * 1e9 / 8;
  links.ep = p.ep() > 1 ? ep_spread(config, gpus_per_node) : EpSpread{};
  links.gpus_per_node = gpus_per_node;
  links.nccl = coll::NcclTuning(compute::nccl_hardware(gpu), world::nccl_settings(config));
  if (const auto& topology = config.cluster().topology(); !topology.empty())
    links.domains = net::oversubscribed_domains(net::resolve_topology(topology));
  const SlotTimes slot = slot_times(p, work, links);
  const int32_t m = workload::num_microbatches(p);
  // Chunk visits per microbatch and stage: v, but 1 for DualPipe's two one-way paths.
  const int32_t v = workload::chunk_passes(workload::pipeline_schedule_of(p), p.virtual_stages());
  const double bubble_slots =
      workload::schedule_info(p.schedule())
          .planner_idle_slots(p.pp(), slot.forward, slot.backward, slot.weight_grad);
  double pipeline = (static_cast<double>(v) * m + bubble_slots) * slot.per_slot;

  const double one_pass = dp_pass_seconds(config, stage, links);
  double exposed = 0;
  if (one_pass > 0) {
    // ZeRO-3 gathers weights per layer in the forward and backward of every microbatch;
    // ZeRO-2 and 3 reduce-scatter every microbatch's gradients unless they reduce once per step.
    // Both hide behind compute at best.
    const double gathers = p.zero_stage() == 3 ? 2.0 * m * one_pass : 0.0;
    const double reductions = workload::reduces_grads_every_microbatch(p) ? m * one_pass : 0.0;
    pipeline = std::max(pipeline, gathers + reductions);
    if (p.zero_stage() < 3) exposed += one_pass;         // parameter all-gather after the optimizer
    exposed += one_pass / (static_cast<double>(v) * m);  // the last gradient bucket
  }
  double optimizer = 0;
  for (const auto& op : work.optimizer) optimizer += op.duration.as_seconds();
  return pipeline + exposed + optimizer;
}

}  // namespace cs::plan
