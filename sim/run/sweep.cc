#include "sim/run/sweep.h"

#include <algorithm>
#include <stdexcept>

#include "sim/config/config_error.h"
#include "sim/config/field_override.h"
#include "sim/run/step_simulation.h"

namespace cs::run {

namespace {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find(sep, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

clustersim::RunConfig with_point(const clustersim::RunConfig& base,
                                 const std::vector<SweepAxis>& axes,
                                 const std::vector<std::string>& values) {
  clustersim::RunConfig config = base;
  for (std::size_t a = 0; a < axes.size(); ++a)
    apply_override(config, axes[a].field + "=" + values[a], "--vary");
  return config;
}

using Ref = report::FieldRef;

// Every figure of a row, in the order of the CSV columns, the JSON keys and the MPI wire form;
// a new figure is a member of SweepRow, a line here and its value in run_sweep_point.
const report::Field<SweepRow> kSweepFields[] = {
    {.key = "layout", .at = [](SweepRow& r) -> Ref { return &r.layout; }},
    {.key = "schedule", .at = [](SweepRow& r) -> Ref { return &r.schedule; }},
    {.key = "gpus", .at = [](SweepRow& r) -> Ref { return &r.gpus; }},
    {.key = "microbatches", .at = [](SweepRow& r) -> Ref { return &r.microbatches; }},
    {.key = "iteration_time_s",
     .at = [](SweepRow& r) -> Ref { return &r.iteration_time_s; },
     .label = "step s",
     .digits = 4},
    {.key = "tokens_per_s",
     .at = [](SweepRow& r) -> Ref { return &r.tokens_per_s; },
     .label = "tokens/s"},
    {.key = "mfu",
     .at = [](SweepRow& r) -> Ref { return &r.mfu; },
     .label = "MFU",
     .digits = 1,
     .percent = true},
    {.key = "bubble_fraction",
     .at = [](SweepRow& r) -> Ref { return &r.bubble_fraction; },
     .label = "bubble",
     .digits = 2,
     .percent = true},
    {.key = "analytic_bubble_fraction",
     .at = [](SweepRow& r) -> Ref { return &r.analytic_bubble_fraction; },
     .label = "formula",
     .digits = 2,
     .percent = true},
    {.key = "compute_s", .at = [](SweepRow& r) -> Ref { return &r.compute_s; }},
    {.key = "exposed_comm_s",
     .at = [](SweepRow& r) -> Ref { return r.exposed_s.data(); },
     .parts = report::Parts::kDims,
     .column = "exposed_{}_s",
     .label = "exp {} s",
     .digits = 4},
    {.key = "peak_memory_gb",
     .at = [](SweepRow& r) -> Ref { return &r.peak_memory_gb; },
     .label = "mem GB",
     .digits = 1},
    {.key = "activations_gb", .at = [](SweepRow& r) -> Ref { return &r.activations_gb; }},
    {.key = "in_flight_microbatches",
     .at = [](SweepRow& r) -> Ref { return &r.in_flight_microbatches; }},
    {.key = "fits", .at = [](SweepRow& r) -> Ref { return &r.fits; }, .label = "fits"},
};

}  // namespace

SweepAxis parse_sweep_axis(std::string_view text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw ConfigError("--vary " + std::string(text) + ": expected FIELD=VALUE,VALUE,...");
  SweepAxis axis;
  axis.field = std::string(text.substr(0, eq));
  const std::string_view list = text.substr(eq + 1);
  axis.values = split(list, list.find(';') != std::string_view::npos ? ';' : ',');
  for (const auto& v : axis.values)
    if (v.empty()) throw ConfigError("--vary " + std::string(text) + ": an empty value");
  return axis;
}

std::size_t sweep_size(const std::vector<SweepAxis>& axes) {
  std::size_t n = 1;
  for (const auto& a : axes) n *= a.values.size();
  return n;
}

std::vector<std::string> sweep_point(const std::vector<SweepAxis>& axes, std::size_t index) {
  std::vector<std::string> values(axes.size());
  for (std::size_t a = axes.size(); a-- > 0;) {
    const std::size_t n = axes[a].values.size();
    values[a] = axes[a].values[index % n];
    index /= n;
  }
  return values;
}

void check_sweep_axes(const clustersim::RunConfig& base, const std::vector<SweepAxis>& axes) {
  // A field varied twice would print two columns while the later one's value wins at every point.
  for (std::size_t a = 0; a < axes.size(); ++a)
    for (std::size_t b = 0; b < a; ++b)
      if (axes[a].field == axes[b].field)
        throw ConfigError("--vary " + axes[a].field +
                          " is given twice; list all its values in one --vary " + axes[a].field +
                          "=V1,V2,...");
  // Multiplied with a bound at every step, so that no product overflows on the way.
  std::size_t points = 1;
  for (const auto& axis : axes) {
    points *= std::max<std::size_t>(axis.values.size(), 1);
    if (points > kMaxSweepPoints)
      throw ConfigError("--vary: the sweep has more than " + std::to_string(kMaxSweepPoints) +
                        " points (each one is a whole step simulation, 0.1 to 10 s, and keeps a "
                        "row in memory); split it into several sweeps");
  }
  for (const auto& axis : axes) {
    for (const auto& value : axis.values) {
      clustersim::RunConfig copy = base;
      apply_override(copy, axis.field + "=" + value, "--vary");
    }
  }
}

std::span<const report::Field<SweepRow>> sweep_fields() {
  return kSweepFields;
}

std::string serialize_sweep_row(const SweepRow& r) {
  report::WireWriter w;
  w.put(static_cast<int64_t>(r.index));
  w.put(static_cast<int64_t>(r.values.size()));
  for (const auto& v : r.values) w.put(std::string_view(v));
  w.put(std::string_view(r.error));
  report::write_wire(w, sweep_fields(), r);
  return w.take();
}

SweepRow parse_sweep_row(std::string_view line) {
  report::WireReader in(line);
  SweepRow r;
  r.index = static_cast<std::size_t>(in.integer());
  const int64_t n = in.integer();
  for (int64_t i = 0; i < n; ++i) r.values.push_back(in.text());
  r.error = in.text();
  report::read_wire(in, sweep_fields(), r);
  return r;
}

SweepRow run_sweep_point(const clustersim::RunConfig& base, const std::string& source,
                         const std::vector<SweepAxis>& axes, std::size_t index) {
  SweepRow row;
  row.index = index;
  row.values = sweep_point(axes, index);
  try {
    // Errors name the source only: the row carries the point's values beside them.
    const auto r = simulate_step(with_point(base, axes, row.values), source);
    row.layout = r.layout;
    row.schedule = r.schedule;
    row.gpus = r.gpus;
    row.microbatches = r.microbatches;
    row.iteration_time_s = r.iteration_time_s;
    row.tokens_per_s = r.tokens_per_s;
    row.mfu = r.mfu;
    row.bubble_fraction = r.bubble_fraction;
    row.analytic_bubble_fraction = r.analytic_bubble_fraction;
    for (const auto& s : r.stages)
      row.compute_s += s.compute_s / static_cast<double>(r.stages.size());
    row.exposed_s = r.exposed_s;
    row.peak_memory_gb = r.memory.peak_gb;
    row.activations_gb = r.memory.activations_gb;
    row.in_flight_microbatches = r.memory.in_flight_microbatches;
    row.fits = r.memory.fits;
  } catch (const std::runtime_error& e) {
    // ConfigError, or a step that cannot complete: a property of the point, not of the sweep.
    row.error = *e.what() ? e.what() : "invalid point";
  } catch (const std::invalid_argument& e) {
    row.error = *e.what() ? e.what() : "invalid point";
  }
  return row;
}

std::vector<SweepRow> run_sweep_points(const clustersim::RunConfig& base, const std::string& source,
                                       const std::vector<SweepAxis>& axes,
                                       const std::vector<std::size_t>& indices, int jobs,
                                       const BatchProgress& on_done) {
  std::vector<SweepRow> rows(indices.size());
  run_batch(
      indices.size(), jobs,
      [&](std::size_t i) { rows[i] = run_sweep_point(base, source, axes, indices[i]); }, on_done);
  return rows;
}

}  // namespace cs::run
