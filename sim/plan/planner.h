// The layout planner: enumerates parallel layouts of a model on N GPUs, drops those that do not
// fit, ranks the rest by a cheap analytical estimate and simulates the best few in parallel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/config.pb.h"
#include "sim/plan/layout_search.h"
#include "sim/plan/memory_report.h"
#include "sim/plan/step_estimate.h"
#include "sim/report/record_fields.h"
#include "sim/report/step_report.h"

namespace cs::plan {

enum class Objective : uint8_t { kTime, kCost };

struct PlanOptions {
  int64_t gpus = 0;
  // GPUs of one NVLink domain the job uses (8 on DGX servers, up to 72 on an NVL72 rack): TP
  // stays inside it (tp divides this), and the planner says which groups fill more than a server.
  int32_t gpus_per_node = 8;
  Objective objective = Objective::kTime;
  int32_t top = 5;
  // Candidates simulated, best first by the analytical pre-estimate; 0: none, and the ranking is
  // the pre-estimate's best `top`, unsimulated (every layout in seconds, at any scale).
  int32_t simulate = 12;
  int32_t jobs = 0;  // threads; 0: hardware concurrency
  // The search simulates with network = ANALYTICAL (congestion-free, ~10x fewer events); then
  // the best `refine` of them run again on the congestion-aware network and are ranked by that
  // (0: keep the analytical ranking).
  clustersim::NetworkMode search_network = clustersim::ANALYTICAL;
  int32_t refine = 5;
  // The rank order of every candidate; unset: TP_CP_DP_PP where experts are split (EP > 1),
  // otherwise the base config's (see enumerate_layouts).
  std::optional<clustersim::ParallelConfig::RankOrder> rank_order;
  // Software stacks to search (search_layouts); empty: the base config's own.
  std::vector<clustersim::SoftwareStack> stacks;
  // HBM bytes per GPU kept free by the fits test: the memory model leaves out the CUDA context,
  // NCCL buffers and allocator fragmentation.
  double reserve_bytes = 0;
  // Called as candidates finish simulating (done, total), once per pass (search, then refine),
  // from one thread at a time; empty: none.
  std::function<void(std::size_t, std::size_t)> on_progress;
  // Spreading over MPI ranks: this process is `rank` of `ranks` and simulates every ranks-th
  // candidate; `gather` brings each rank's text to rank 0 (in rank order; empty elsewhere).
  // Rank 0 returns the full result, the others an empty ranking.
  int32_t rank = 0, ranks = 1;
  std::function<std::vector<std::string>(const std::string&)> gather;
};

struct Candidate {
  clustersim::RunConfig config;
  FitCheck fit;
  double estimate_s = 0;
  bool simulated = false;
  bool refined = false;                // `report` is the congestion-aware run
  double search_iteration_time_s = 0;  // the step on the search network
  report::StepReport report;
  double compute_s = 0;  // compute per GPU, the mean over the report's stages
};

// A candidate's figures, described once: `plan --json`'s figures and the MPI wire form follow
// this table (sim/report/record_fields.h).
std::span<const report::Field<Candidate>> candidate_fields();

// How ranks under MPI send rank 0 what they simulated: one line, the candidate's index and its
// kWire figures (doubles exactly), so that rank 0 ranks exactly what a single process would.
// Parsing fills candidates[index] and returns the index; a bad line throws std::runtime_error.
std::string serialize_candidate_figures(std::size_t index, const Candidate& c);
std::size_t parse_candidate_figures(const std::string& line, std::vector<Candidate>& candidates);

// Why layouts were left out: what an empty ranking prints.
struct Refusals {
  std::map<std::string, int64_t> invalid;  // LayoutSearch::invalid, over every GPU count tried
  std::map<std::string, std::string> invalid_error;  // LayoutSearch::invalid_error, the first
  int64_t over_hbm = 0, over_host = 0;  // valid layouts whose GPU or host memory overflows
  double least_peak = 0;                // bytes per GPU of the smallest that overflows HBM
  std::string least_layout;             // and its short_layout
  double capacity = 0;                  // HBM bytes per GPU
};

struct PlanResult {
  int64_t enumerated = 0, fitting = 0, simulated = 0, refined = 0;
  // Where no layout on the GPUs asked for is valid (a count whose factors no batch or layer count
  // divides): the most GPUs below it, whole servers and at least half, that have one, planned
  // instead. 0: the count asked for was planned.
  int64_t fallback_gpus = 0;
  // Simulated candidates, best first by the objective; with simulate 0, the pre-estimate's best.
  std::vector<Candidate> ranked;
  Refusals refused;
  double wall_s = 0;
};

PlanResult plan_layouts(const clustersim::RunConfig& base, const PlanOptions& options);

// HBM bytes per GPU a layout of `base` may take on its GPU, `reserve_bytes` kept free. Throws
// std::invalid_argument naming `what` and giving the GPU's capacity when the reserve is negative
// or leaves nothing: every layout would be refused, and find_min_gpus would try every GPU count.
double usable_hbm_bytes(const clustersim::RunConfig& base, double reserve_bytes,
                        std::string_view what = "the HBM reserve");

// The smallest GPU count (1..8, then multiples of gpus_per_node up to `max_gpus`) on which some
// enumerated layout fits in memory, and the layout with the most headroom there; gpus = 0 when
// none fits up to max_gpus. `reserve_bytes` of HBM are kept free, as PlanOptions::reserve_bytes.
struct MinGpus {
  int64_t gpus = 0;
  Candidate layout;
};
MinGpus find_min_gpus(
    const clustersim::RunConfig& base, int64_t max_gpus, int32_t gpus_per_node,
    std::optional<clustersim::ParallelConfig::RankOrder> rank_order = std::nullopt,
    double reserve_bytes = 0);

// One line per parallel layout, short: "TP 8 x CP 1 x PP 4 x DP 32, 1F1B, mbs 1, ZeRO-1, sel.";
// a stack other than Megatron-TE is named at the end ("..., PYTORCH_FSDP");
// with experts split, "TP 2 x CP 1 x PP 4 x DP 8 x EP 4 x EDP 4, ETP 1, ..." (ETP only when it
// is not TP).
std::string short_layout(const clustersim::RunConfig& config);

void print_plan(std::ostream& out, const PlanResult& result, const PlanOptions& options);
// The ranking as JSON: counts, then per candidate its layout fields and simulated figures.
void write_plan_json(std::ostream& out, const PlanResult& result, const PlanOptions& options);

}  // namespace cs::plan
