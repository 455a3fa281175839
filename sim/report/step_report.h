// The figures of one simulated training step, and their JSON and terminal-table forms.
#pragma once

#include <array>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sim/coll/collective.h"
#include "sim/cost/host.h"
#include "sim/report/json.h"
#include "sim/workload/dims.h"

namespace cs::report {

struct StageFigures {
  double bubble_fraction = 0;           // measured: idle waiting on the pipeline / step time
  double analytic_bubble_fraction = 0;  // the schedule's textbook formula
  double compute_s = 0;                 // mean over the stage's ranks
  double side_stream_s = 0;  // part of compute_s on other streams, beside the compute stream
  workload::DimSeconds comm_wait_s{};  // exposed communication by dimension, mean
  double interference_s = 0;           // compute slowed by communication beside it
  double host_dispatch_s = 0;          // compute stream waiting for the host's launch, mean
  double side_stream_hold_s = 0;       // compute stream held by side-stream kernels, mean
  int32_t layers = 0;
  int32_t peak_in_flight = 0;  // microbatches whose activations are held at the peak
  double memory_gb = 0;        // peak per GPU on this stage
};

struct MemoryFigures {
  double weights_gb = 0, gradients_gb = 0, optimizer_gb = 0, activations_gb = 0, other_gb = 0;
  double peak_gb = 0;
  double capacity_gb = 0;
  bool fits = false;
  int32_t in_flight_microbatches = 0;
  int32_t peak_stage = 0;
};

// "4.40 per day: faulty_gpu 1.55 (35%), ..., 12 more 0.62": the largest causes first.
std::string interruptions_text(const cost::RunCost& c, std::size_t shown = 6);
// {cause: interruptions per day} for every cause, in the table's order.
Json interruptions_by_cause_json(const cost::RunCost& c);

// ZeRO-Offload / ZeRO-Infinity: per GPU, on the stage where offload takes longest.
struct OffloadFigures {
  bool enabled = false;
  std::string optimizer = "NONE", parameters = "NONE";
  double d2h_s = 0;       // gradients to the host over PCIe (overlaps the backward)
  double cpu_adam_s = 0;  // optimizer step on the CPU (blocks the GPU's step)
  double h2d_s = 0;       // updated or fetched weights back over PCIe
  double host_dram_gb = 0, host_nvme_gb = 0;
  double host_dram_capacity_gb = 0, host_nvme_capacity_gb = 0;  // the node's share per GPU
  bool fits_host = true;
};

// How per-GPU variability moved the step (written only when some variability effect is on).
// Busy time is a rank's compute-stream kernel time: kernels, recompute and optimizer at the
// rank's speed and jitter, plus what communication beside them added (interference).
struct VariabilityFigures {
  bool enabled = false;
  // What was modelled.
  double speed_min = 1, speed_max = 1;  // over all GPUs
  int32_t slow_gpus = 0;                // GPUs below speed 1
  double jitter_cv = 0;
  int32_t degraded_links = 0;  // directed links below nominal bandwidth
  // Spread of busy time over ranks, and which ranks hold the extremes (the lowest rank on ties).
  double busy_min_s = 0, busy_mean_s = 0, busy_max_s = 0;
  int32_t busy_min_rank = 0, busy_max_rank = 0;
  // The critical path's ends: the ranks whose last op completes exactly at the step's end (the
  // step could not end earlier without them), counted, and the first few listed.
  int32_t finishing_ranks = 0;
  std::vector<int32_t> finishing_first;
  // Per pipeline stage: its busiest rank and that rank's busy time, which paces the stage.
  std::vector<std::pair<int32_t, double>> stage_busiest;
};

// A mixture of experts' figures (written only for MoE models).
struct MoeFigures {
  bool enabled = false;
  int32_t experts = 0, top_k = 0, ep = 1;
  // Per GPU, the mean over ranks: time the EP all-to-alls (dispatch and combine, forward and
  // backward) took from the rank's post, and the part of it the compute stream waited for.
  double all_to_all_s = 0, all_to_all_exposed_s = 0;
  // Tokens per expert, max / mean over a layer's experts: the mean and the worst over MoE layers.
  double tokens_max_over_mean = 1, tokens_max_over_mean_worst = 1;
  double dropped_share = 0;  // of token-expert assignments, mean over MoE layers
  // Routed experts on one GPU of the peak-memory stage: parameters and their weights, gradients
  // and optimizer states.
  int64_t expert_params_per_gpu = 0;
  double expert_memory_gb = 0;
  // What each MoE effect adds per GPU per step (negative: saves), 0 when it is switched off:
  // compute-stream kernel time of effects.moe_grouped_gemm against an ideal grouped GEMM
  // (run/moe_effects.h), and the part of all_to_all_s that effects.moe_all_to_all_wire's wire
  // overhead accounts for (exec::RankStats::all_to_all_wire).
  double grouped_gemm_s = 0;
  double all_to_all_wire_s = 0;
  // compute-stream kernel time effects.moe_token_permute_rate adds to the token permutations.
  double token_permute_s = 0;
  // The part of all_to_all_s effects.deepep_token_cost accounts for
  // (exec::RankStats::all_to_all_token_cost).
  double deepep_token_s = 0;
};

struct StepReport {
  std::string name;
  std::string model;   // model.name: under --hf-config, the Hugging Face model's, not the preset's
  std::string layout;  // "TP 8 x CP 1 x PP 16 x DP 128"
  // Experts split over GPUs (EP > 1): the text report then shows the EP and EDP columns.
  bool expert_parallel = false;
  std::string schedule;
  std::string gpu;
  std::string topology;
  std::string network;
  std::string precision;
  // The training framework lowered (workload::stack_label): "MEGATRON_TE",
  // "PYTORCH_FSDP (pytorch_fsdp2, torch.compile)".
  std::string software_stack = "MEGATRON_TE";
  int32_t gpus = 0;
  int32_t microbatches = 0;
  // Microbatch counts of the short runs the step was extrapolated from, the last two giving the
  // slope (steady-state extrapolation, sim/run/extrapolation.h); empty: every microbatch was
  // simulated.
  std::vector<int32_t> extrapolated_from;
  int64_t tokens_per_step = 0;

  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;  // model FLOPs per second per GPU
  double mfu = 0;
  double hfu = 0;
  double model_flops_per_step = 0;

  double bubble_fraction = 0;
  double analytic_bubble_fraction = 0;
  int32_t virtual_stages = 1;  // chunks per stage: layers_per_stage has stages x this entries
  std::vector<StageFigures> stages;
  // Kernel seconds per GPU per step by kernel group (report/kernel_breakdown.h), recompute
  // included; the groups sum to the mean compute_s of the stages.
  std::vector<std::pair<std::string, double>> compute_by_kernel_group_s;

  // Network bytes sent, all GPUs together.
  std::array<double, coll::kNumOps> comm_bytes_by_op{};  // by coll::Op
  std::array<double, workload::kNumDims> comm_bytes_by_dim{};
  double comm_bytes_nvlink = 0, comm_bytes_network = 0, comm_bytes_pcie = 0;
  // The group collectives (every one but the expert all-to-alls of uneven sizes) by how they ran:
  // dimension, op, algorithm and protocol, with their calls (every group and folded copy counted)
  // and mean size; in dimension, then op order.
  struct CollectiveUse {
    std::string dim, op, algo, protocol;
    double calls = 0;
    double mean_bytes = 0;
  };
  std::vector<CollectiveUse> collectives_run;
  // Mean per GPU: time the compute stream was blocked on communication it could not hide.
  workload::DimSeconds exposed_s{};
  double exposed(workload::Dim d) const { return exposed_s[static_cast<std::size_t>(d)]; }
  // Part of exposed_s: inside blocking collectives, waiting for the members that came later.
  workload::DimSeconds peer_wait_s{};
  // Mean per GPU: compute-stream time added by communication running beside kernels.
  double interference_s = 0;
  // Mean per GPU: compute stream idle with its next kernel's inputs ready, waiting for the host
  // to launch it (effects.host_dispatch).
  double host_dispatch_s = 0;
  // Mean per GPU: compute-stream time added by side-stream kernels holding the GPU
  // (effects.side_stream_contention).
  double side_stream_hold_s = 0;

  MemoryFigures memory;
  OffloadFigures offload;
  cs::cost::RunCost cost;  // the whole training run at this step time
  // Microbatches accumulated locally per data-parallel gradient reduction, and data-parallel
  // network bytes per sample of the global batch (falls as 1/K with K accumulation steps).
  int32_t accumulation_steps = 0;
  double dp_bytes_per_sample = 0;
  VariabilityFigures variability;
  MoeFigures moe;

  uint64_t events = 0;
  double wall_time_s = 0;
  double peak_rss_mb = 0;  // host memory of the simulation process
};

// Same report, same bytes: fields in a fixed order, numbers in shortest round-trip form.
// `include_host` adds wall time and RSS, which vary between runs.
void write_json(std::ostream& out, const StepReport& r, bool include_host = true);
void print_table(std::ostream& out, const StepReport& r);

}  // namespace cs::report
