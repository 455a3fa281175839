// Parameter sweeps: the cartesian product of config field values, each point simulated once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/config.pb.h"
#include "sim/core/batch.h"
#include "sim/report/record_fields.h"
#include "sim/workload/dims.h"

namespace cs::run {

// One --vary: a dotted field path and the values it takes, in the order given.
struct SweepAxis {
  std::string field;
  std::vector<std::string> values;
};

// Parses "parallel.schedule=GPIPE,ONE_F_ONE_B". Values are split on ';' when the text has one
// (so repeated fields can vary: "parallel.layers_per_stage=8,8;4,12"), on ',' otherwise.
// Throws ConfigError for a missing '=', an empty field or an empty value.
SweepAxis parse_sweep_axis(std::string_view text);

// The number of points of the product (1 for no axes).
std::size_t sweep_size(const std::vector<SweepAxis>& axes);

// The values of point `index`; the last axis varies fastest, like nested loops in axis order.
std::vector<std::string> sweep_point(const std::vector<SweepAxis>& axes, std::size_t index);

// The most points one sweep runs: at 0.1 s a point (a small model), 10^5 points are already three
// CPU-hours; a product of axes above it is refused before anything runs.
inline constexpr std::size_t kMaxSweepPoints = 100'000;

// Applies every axis value once to a copy of `base`, so that a misspelt field or an unknown enum
// name fails before any simulation (ConfigError) rather than as a skipped point per point; a field
// given in two --vary options and a product of more than kMaxSweepPoints points are refused.
void check_sweep_axes(const clustersim::RunConfig& base, const std::vector<SweepAxis>& axes);

// The headline figures of one point, or why it was skipped. Only what the outputs show is kept,
// so a row is small enough to send between processes.
struct SweepRow {
  std::size_t index = 0;
  std::vector<std::string> values;  // one per axis
  std::string error;                // non-empty: the point was invalid and not simulated
  std::string layout, schedule;
  int32_t gpus = 0;
  int32_t microbatches = 0;
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double bubble_fraction = 0;
  double analytic_bubble_fraction = 0;
  double compute_s = 0;              // mean per GPU over the stages, recompute included
  workload::DimSeconds exposed_s{};  // exposed communication by dimension, mean per GPU
  double peak_memory_gb = 0;
  double activations_gb = 0;  // on the peak-memory stage
  int32_t in_flight_microbatches = 0;
  bool fits = false;

  bool ok() const { return error.empty(); }
};

// The row's figures, described once: the CSV columns, JSON keys, terminal columns and the MPI
// wire form all follow this table (sim/report/record_fields.h).
std::span<const report::Field<SweepRow>> sweep_fields();

// One line of text that parse_sweep_row turns back into an equal row (doubles exactly), for
// gathering rows from MPI ranks: the index, the axis values, the error, then sweep_fields().
std::string serialize_sweep_row(const SweepRow& row);
SweepRow parse_sweep_row(std::string_view line);

// Simulates point `index`. Invalid configurations (ConfigError) and steps that cannot complete
// become rows with `error` set instead of exceptions.
SweepRow run_sweep_point(const clustersim::RunConfig& base, const std::string& source,
                         const std::vector<SweepAxis>& axes, std::size_t index);

// Runs the given points on `jobs` threads (at least 1; sim/core/batch.h) and returns their rows
// in the order of `indices`, whatever order they finish in.
std::vector<SweepRow> run_sweep_points(const clustersim::RunConfig& base, const std::string& source,
                                       const std::vector<SweepAxis>& axes,
                                       const std::vector<std::size_t>& indices, int jobs,
                                       const BatchProgress& on_done = {});

}  // namespace cs::run
