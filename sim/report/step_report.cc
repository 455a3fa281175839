#include "sim/report/step_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>

#include "sim/coll/collective.h"
#include "sim/report/json.h"
#include "sim/report/moe_report.h"
#include "sim/report/text_rows.h"
#include "sim/report/variability_report.h"
#include "sim/workload/dims.h"

namespace cs::report {

namespace {

// 7.13e6 -> "7.13 M": large counts read at a glance.
std::string human(double v) {
  static constexpr const char* kSuffix[] = {"", " k", " M", " G", " T"};
  int i = 0;
  while (i < 4 && std::abs(v) >= 1000) {
    v /= 1000;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g%s", v, kSuffix[i]);
  return buf;
}

// "compute 71.2%, exposed comm TP 4.1% / DP 2.0%, bubble 18.3%, other 4.4%": the step per GPU
// split into what a reader can act on, summing to 100%; dimensions under 0.05% are left out. The
// part of the exposed time spent waiting for later members of a collective follows it ("EP 56.0%,
// of which waiting for peers 51.6%"), inside the sum.
std::string step_shares(const StepReport& r) {
  const double step = r.iteration_time_s;
  if (step <= 0 || r.stages.empty()) return "";
  // The compute stream's kernels take their share of the step; kernels on side streams run
  // beside them and are shown apart, outside the sum.
  double compute = 0, side = 0;
  for (const auto& s : r.stages) {
    compute += (s.compute_s - s.side_stream_s) / static_cast<double>(r.stages.size());
    side += s.side_stream_s / static_cast<double>(r.stages.size());
  }
  const auto pct = [&](double seconds) { return fmt("%.1f%%", 100 * seconds / step); };
  std::string text = "compute " + pct(compute);
  if (side / step >= 5e-4) text += " (side streams " + pct(side) + " beside it)";
  std::string comm;
  double exposed = 0;
  for (const auto& d : workload::kDims) {
    exposed += r.exposed(d.dim);
    if (r.exposed(d.dim) / step < 5e-4) continue;
    comm += (comm.empty() ? "" : " / ") + std::string(d.label) + " " + pct(r.exposed(d.dim));
  }
  double peers = 0;
  for (const double wait : r.peer_wait_s) peers += wait;
  if (peers / step >= 5e-4) comm += ", of which waiting for peers " + pct(peers);
  text += ", exposed comm " + (comm.empty() ? std::string("0%") : comm);
  if (r.interference_s / step >= 5e-4) text += ", interference " + pct(r.interference_s);
  if (r.host_dispatch_s / step >= 5e-4) text += ", host dispatch " + pct(r.host_dispatch_s);
  if (r.side_stream_hold_s / step >= 5e-4)
    text += ", side-stream hold " + pct(r.side_stream_hold_s);
  text += ", bubble " + pct(r.bubble_fraction * step);
  // The rest: waits none of the parts above names (the optimizer's host work, for one).
  const double other = step - compute - exposed - r.interference_s - r.host_dispatch_s -
                       r.side_stream_hold_s - r.bubble_fraction * step;
  if (std::abs(other) / step >= 5e-3) text += ", other " + pct(other);
  return text;
}

// Layers per pipeline stage that even out the stages' compute, modelling a stage as a fixed part
// (embedding, LM head and loss on the end stages) plus its layers at the median per-layer time.
// Every stage keeps one layer (validation wants them positive); the rest go one at a time to
// the stage that would finish first. Empty when the stages hold no layers to move.
std::vector<int32_t> balanced_layers(const std::vector<StageFigures>& stages) {
  std::vector<double> per_layer;
  int32_t total = 0;
  for (const auto& s : stages) {
    if (s.layers <= 0) return {};
    per_layer.push_back(s.compute_s / s.layers);
    total += s.layers;
  }
  std::nth_element(per_layer.begin(), per_layer.begin() + per_layer.size() / 2, per_layer.end());
  const double t_layer = per_layer[per_layer.size() / 2];
  std::vector<double> time;
  for (const auto& s : stages) time.push_back(std::max(0.0, s.compute_s - s.layers * t_layer));
  std::vector<int32_t> layers(stages.size(), 1);
  for (double& t : time) t += t_layer;
  for (auto l = static_cast<int32_t>(stages.size()); l < total; ++l) {
    std::size_t best = 0;
    for (std::size_t s = 1; s < stages.size(); ++s)
      if (time[s] < time[best]) best = s;
    ++layers[best];
    time[best] += t_layer;
  }
  return layers;
}

// Why the measured bubble is far above the formula (which assumes equal stages and free
// communication): the slowest stage against the mean, and a split that would balance them.
std::string bubble_explanation(const StepReport& r) {
  const double measured = r.bubble_fraction, formula = r.analytic_bubble_fraction;
  if (r.stages.size() < 2 || measured <= 1.5 * formula || measured - formula <= 0.02) return "";
  std::size_t slow = 0;
  double mean = 0;
  for (std::size_t s = 0; s < r.stages.size(); ++s) {
    mean += r.stages[s].compute_s / static_cast<double>(r.stages.size());
    if (r.stages[s].compute_s > r.stages[slow].compute_s) slow = s;
  }
  const auto& st = r.stages[slow];
  std::string text = "stage " + std::to_string(slow) + " (" + std::to_string(st.layers) +
                     " layers) computes " + fmt("%.4f s", st.compute_s) + ", " +
                     fmt("%.2fx", mean > 0 ? st.compute_s / mean : 1) +
                     " the mean stage; the others wait for it";
  if (r.virtual_stages != 1) return text + " (rebalance parallel.layers_per_stage per chunk)";
  const auto layers = balanced_layers(r.stages);
  bool same = true;
  std::string list;
  for (std::size_t s = 0; s < layers.size(); ++s) {
    same = same && layers[s] == r.stages[s].layers;
    list += (s ? "," : "") + std::to_string(layers[s]);
  }
  if (layers.empty() || same) return text;
  return text + "; try --set parallel.layers_per_stage=" + list;
}

}  // namespace

std::string interruptions_text(const cost::RunCost& c, std::size_t shown) {
  std::vector<std::size_t> order(cost::kNumFailureCauses);
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties keep the table's order, so the text is the same on every run.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return c.interruptions_per_day[a] > c.interruptions_per_day[b];
  });
  const double total = c.interruptions_total_per_day;
  std::string text = fmt("%.3g per day", total);
  double rest = 0;
  std::size_t rest_count = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const double x = c.interruptions_per_day[order[k]];
    if (x <= 0) break;
    if (k >= shown) {
      rest += x;
      ++rest_count;
      continue;
    }
    text += (k == 0 ? ": " : ", ") + std::string(cost::kFailureCauses[order[k]].name) +
            fmt(" %.3g", x) + fmt(" (%.0f%%)", total > 0 ? 100 * x / total : 0);
  }
  if (rest_count > 0)
    text += ", " + std::to_string(rest_count) + " more" + fmt(" %.3g", rest) +
            fmt(" (%.0f%%)", total > 0 ? 100 * rest / total : 0);
  return text;
}

Json interruptions_by_cause_json(const cost::RunCost& c) {
  Json j = Json::object();
  for (std::size_t i = 0; i < cost::kNumFailureCauses; ++i)
    j[std::string(cost::kFailureCauses[i].name)] = c.interruptions_per_day[i];
  return j;
}

namespace {

Json stage_json(const StageFigures& s, int index) {
  Json j = {{"stage", index},
            {"layers", s.layers},
            {"bubble_fraction", s.bubble_fraction},
            {"analytic_bubble_fraction", s.analytic_bubble_fraction},
            {"compute_s", s.compute_s},
            {"side_stream_compute_s", s.side_stream_s}};
  for (const auto& d : workload::kDims)
    j[std::string(d.stage_key)] = s.comm_wait_s[static_cast<std::size_t>(d.dim)];
  j["interference_s"] = s.interference_s;
  j["host_dispatch_s"] = s.host_dispatch_s;
  j["side_stream_hold_s"] = s.side_stream_hold_s;
  j["peak_in_flight_microbatches"] = s.peak_in_flight;
  j["memory_gb"] = s.memory_gb;
  return j;
}

Json comm_bytes_json(const StepReport& r) {
  Json j = Json::object();
  for (int i = 0; i < coll::kNumOps; ++i)
    j[std::string(coll::to_string(static_cast<coll::Op>(i)))] = r.comm_bytes_by_op[i];
  Json& by_dim = j["by_dim"] = Json::object();
  for (const auto& d : workload::kDims)
    by_dim[std::string(d.key)] = r.comm_bytes_by_dim[static_cast<std::size_t>(d.dim)];
  j["by_link_class"] = {{"nvlink", r.comm_bytes_nvlink},
                        {"network", r.comm_bytes_network},
                        {"pcie", r.comm_bytes_pcie}};
  return j;
}

Json memory_json(const MemoryFigures& m) {
  return {{"weights_gb", m.weights_gb},
          {"gradients_gb", m.gradients_gb},
          {"optimizer_gb", m.optimizer_gb},
          {"activations_gb", m.activations_gb},
          {"other_gb", m.other_gb},
          {"peak_gb", m.peak_gb},
          {"capacity_gb", m.capacity_gb},
          {"fits", m.fits},
          {"in_flight_microbatches", m.in_flight_microbatches},
          {"peak_stage", m.peak_stage}};
}

Json offload_json(const OffloadFigures& o) {
  return {{"enabled", o.enabled},
          {"optimizer", o.optimizer},
          {"parameters", o.parameters},
          {"d2h_s", o.d2h_s},
          {"cpu_adam_s", o.cpu_adam_s},
          {"h2d_s", o.h2d_s},
          {"host_dram_gb", o.host_dram_gb},
          {"host_nvme_gb", o.host_nvme_gb},
          {"host_dram_capacity_gb", o.host_dram_capacity_gb},
          {"host_nvme_capacity_gb", o.host_nvme_capacity_gb},
          {"fits_host", o.fits_host}};
}

Json cost_json(const cost::RunCost& c) {
  Json j = {{"price_per_gpu_hour", c.price_per_gpu_hour},
            {"train_tokens", c.train_tokens},
            {"steps", c.steps},
            {"wall_days", c.wall_days},
            {"gpu_hours", c.gpu_hours},
            {"dollars", c.dollars},
            {"goodput", c.goodput},
            {"mtbf_hours", c.mtbf_hours},
            {"interruptions_per_day", c.interruptions_total_per_day},
            {"failure_servers", c.servers},
            {"failure_nics", c.nics}};
  j["interruptions_per_day_by_cause"] = interruptions_by_cause_json(c);
  j["checkpoint_tb"] = c.checkpoint_tb;
  j["checkpoint_write_s"] = c.checkpoint_write_s;
  j["checkpoint_interval_s"] = c.checkpoint_interval_s;
  j["restart_s"] = c.restart_s;
  j["effective_wall_days"] = c.effective_wall_days;
  j["effective_dollars"] = c.effective_dollars;
  return j;
}

}  // namespace

void write_json(std::ostream& out, const StepReport& r, bool include_host) {
  Json j = {{"name", r.name},
            {"model", r.model},
            {"layout", r.layout},
            {"schedule", r.schedule},
            {"gpu", r.gpu},
            {"topology", r.topology},
            {"network", r.network},
            {"precision", r.precision},
            {"software_stack", r.software_stack},
            {"gpus", r.gpus},
            {"microbatches", r.microbatches},
            {"tokens_per_step", r.tokens_per_step},
            {"iteration_time_s", r.iteration_time_s},
            {"tokens_per_s", r.tokens_per_s},
            {"tflops_per_gpu", r.tflops_per_gpu},
            {"mfu", r.mfu},
            {"hfu", r.hfu},
            {"model_flops_per_step", r.model_flops_per_step},
            {"bubble_fraction", r.bubble_fraction},
            {"analytic_bubble_fraction", r.analytic_bubble_fraction}};
  Json& stages = j["stages"] = Json::array();
  for (std::size_t i = 0; i < r.stages.size(); ++i)
    stages.push_back(stage_json(r.stages[i], static_cast<int>(i)));
  Json& kernels = j["compute_by_kernel_group_s"] = Json::object();
  for (const auto& [group, seconds] : r.compute_by_kernel_group_s) kernels[group] = seconds;
  j["comm_bytes"] = comm_bytes_json(r);
  Json& kinds = j["collectives_run"] = Json::array();
  for (const auto& c : r.collectives_run)
    kinds.push_back({{"dim", c.dim},
                     {"op", c.op},
                     {"algo", c.algo},
                     {"protocol", c.protocol},
                     {"calls", c.calls},
                     {"mean_size_bytes", c.mean_bytes}});
  Json& exposed = j["exposed_comm_s"] = Json::object();
  for (const auto& d : workload::kDims) exposed[std::string(d.key)] = r.exposed(d.dim);
  Json& peers = j["exposed_comm_peer_wait_s"] = Json::object();
  for (const auto& d : workload::kDims)
    peers[std::string(d.key)] = r.peer_wait_s[static_cast<std::size_t>(d.dim)];
  j["interference_s"] = r.interference_s;
  j["host_dispatch_s"] = r.host_dispatch_s;
  j["side_stream_hold_s"] = r.side_stream_hold_s;
  j["memory"] = memory_json(r.memory);
  j["offload"] = offload_json(r.offload);
  j["accumulation_steps"] = r.accumulation_steps;
  j["dp_bytes_per_sample"] = r.dp_bytes_per_sample;
  if (r.variability.enabled) j["variability"] = variability_json(r.variability);
  if (r.moe.enabled) j["moe"] = moe_json(r.moe);
  j["cost"] = cost_json(r.cost);
  j["events"] = r.events;
  if (!r.extrapolated_from.empty()) j["extrapolated_from_microbatches"] = r.extrapolated_from;
  if (include_host) {
    j["wall_time_s"] = r.wall_time_s;
    j["peak_rss_mb"] = r.peak_rss_mb;
  }
  write_document(out, j);
}

namespace {

// What the heading calls the run: its name, with its model's when that differs. A config need
// name neither (the heading then began ": TP 1 x ..."): the model's name stands in for the run's,
// and "(unnamed)" for both.
std::string run_title(const StepReport& r) {
  if (r.name.empty()) return r.model.empty() ? "(unnamed)" : r.model;
  return r.model.empty() || r.model == r.name ? r.name : r.name + " (model " + r.model + ")";
}

// The heading line, throughput, MFU, the bubble and where the step goes.
void print_step_headline(std::ostream& out, const StepReport& r) {
  out << run_title(r) << ": " << r.layout << ", " << r.schedule << ", " << r.microbatches
      << " microbatches, " << r.gpus << " x " << r.gpu << " on " << r.topology << " (" << r.network
      << " network, " << r.precision << ", " << r.software_stack << ")\n";
  row(out, "iteration time", fmt("%.4f s", r.iteration_time_s));
  row(out, "tokens per second", fmt("%.0f", r.tokens_per_s));
  row(out, "model TFLOP/s per GPU", fmt("%.1f", r.tflops_per_gpu));
  row(out, "MFU / HFU", fmt("%.1f%%", 100 * r.mfu) + " / " + fmt("%.1f%%", 100 * r.hfu));
  row(out, "bubble (measured / formula)",
      fmt("%.2f%%", 100 * r.bubble_fraction) + " / " +
          fmt("%.2f%%", 100 * r.analytic_bubble_fraction));
  if (const std::string why = bubble_explanation(r); !why.empty())
    row(out, "  bubble above formula", why);
  if (const std::string shares = step_shares(r); !shares.empty())
    row(out, "where the step goes", shares);
}

// Compute by kernel group, exposed communication per dimension and the bytes moved.
void print_step_comm(std::ostream& out, const StepReport& r) {
  for (const auto& [group, seconds] : r.compute_by_kernel_group_s)
    row(out, "  compute: " + group, fmt("%.4f s per GPU", seconds));
  std::string labels, seconds;
  for (const auto& d : workload::kDims) {
    if (d.expert && !r.expert_parallel) continue;
    labels += std::string(labels.empty() ? "" : "/") + std::string(d.label);
    seconds += (seconds.empty() ? "" : " / ") + fmt("%.4f", r.exposed(d.dim));
  }
  row(out, "exposed comm " + labels, seconds + " s");
  std::string peers;
  for (const auto& d : workload::kDims)
    if (r.peer_wait_s[static_cast<std::size_t>(d.dim)] >= 5e-5)
      peers += std::string(peers.empty() ? "" : ", ") + std::string(d.label) + " " +
               fmt("%.4f s", r.peer_wait_s[static_cast<std::size_t>(d.dim)]);
  if (!peers.empty()) row(out, "  of which waiting for peers", peers);
  row(out, "interference (comm beside compute)", fmt("%.4f s", r.interference_s));
  row(out, "host dispatch (kernels waiting for launch)", fmt("%.4f s", r.host_dispatch_s));
  if (r.side_stream_hold_s > 0)
    row(out, "side-stream hold (their kernels holding the GPU)",
        fmt("%.4f s", r.side_stream_hold_s));
  std::string by_dim;
  for (const auto& d : workload::kDims)
    if (!d.expert || r.expert_parallel)
      by_dim += std::string(by_dim.empty() ? "" : ", ") + std::string(d.key) + " " +
                fmt("%.3g", r.comm_bytes_by_dim[static_cast<std::size_t>(d.dim)] / 1e12);
  row(out, "comm TB by dimension", by_dim);
  std::string kinds;  // each kind of collective as it ran, its calls and mean size
  for (const auto& c : r.collectives_run)
    kinds += std::string(kinds.empty() ? "" : ", ") + c.dim + " " + c.op + " " + c.algo + "/" +
             c.protocol + " " + fmt("%.0f", c.calls) + " x " +
             (c.mean_bytes < 1e9 ? fmt("%.3g MB", c.mean_bytes / 1e6)
                                 : fmt("%.3g GB", c.mean_bytes / 1e9));
  if (!kinds.empty()) row(out, "collectives run (NCCL's choice)", kinds);
  row(out, "comm TB nvlink / network",
      fmt("%.3g", r.comm_bytes_nvlink / 1e12) + " / " + fmt("%.3g", r.comm_bytes_network / 1e12));
}

// Memory per GPU on the peak stage, offloading when on, and gradient accumulation.
void print_step_memory(std::ostream& out, const StepReport& r) {
  const MemoryFigures& m = r.memory;
  row(out, "memory per GPU (peak stage " + std::to_string(m.peak_stage) + ")",
      fmt("%.1f GB", m.peak_gb) + " of " + fmt("%.1f GB", m.capacity_gb) +
          (m.fits ? " (fits)" : " (DOES NOT FIT)"));
  row(out, "  weights/grads/optimizer",
      fmt("%.1f", m.weights_gb) + " / " + fmt("%.1f", m.gradients_gb) + " / " +
          fmt("%.1f GB", m.optimizer_gb));
  row(out, "  activations",
      fmt("%.1f GB", m.activations_gb) + " (" + std::to_string(m.in_flight_microbatches) +
          " microbatches in flight)");
  if (r.offload.enabled) {
    const OffloadFigures& o = r.offload;
    row(out, "offload optimizer/params", o.optimizer + " / " + o.parameters);
    row(out, "  PCIe d2h / CPU Adam / h2d",
        fmt("%.3f", o.d2h_s) + " / " + fmt("%.3f", o.cpu_adam_s) + " / " +
            fmt("%.3f s per GPU", o.h2d_s));
    row(out, "  host DRAM / NVMe per GPU",
        fmt("%.1f", o.host_dram_gb) + " of " + fmt("%.0f GB", o.host_dram_capacity_gb) + " / " +
            fmt("%.1f", o.host_nvme_gb) + " of " + fmt("%.0f GB", o.host_nvme_capacity_gb) +
            (o.fits_host ? " (fits)" : " (DOES NOT FIT)"));
  }
  row(out, "grad accumulation",
      std::to_string(r.accumulation_steps) + " microbatches per DP reduction, " +
          fmt("%.1f GB", r.dp_bytes_per_sample / 1e9) + " of DP traffic per sample");
}

// The whole run's cost, goodput and interruptions.
void print_step_cost(std::ostream& out, const StepReport& r) {
  const cost::RunCost& c = r.cost;
  row(out, "run cost",
      human(c.train_tokens) + " tokens: " + fmt("%.1f days", c.wall_days) + ", " +
          human(c.gpu_hours) + " GPU-hours, $" + human(c.dollars) +
          fmt(" at $%.2f/GPU-h", c.price_per_gpu_hour));
  row(out, "goodput",
      fmt("%.1f%%", 100 * c.goodput) + fmt(" (MTBF %.2f h; ", c.mtbf_hours) +
          fmt("%.2f TB checkpoint written in ", c.checkpoint_tb) +
          fmt("%.1f s every ", c.checkpoint_write_s) +
          fmt("%.1f min; ", c.checkpoint_interval_s / 60) + fmt("restart %.0f s)", c.restart_s));
  row(out, "interruptions",
      interruptions_text(c) + " (over " + std::to_string(r.gpus) + " GPUs, " +
          std::to_string(c.servers) + (c.servers == 1 ? " server, " : " servers, ") +
          std::to_string(c.nics) + " NICs)");
  row(out, "run cost with failures",
      c.goodput > 0 ? fmt("%.1f days, $", c.effective_wall_days) + human(c.effective_dollars)
                    : std::string("never finishes: interruptions outpace checkpoints"));
}

// The simulation's own figures, and the runs an extrapolated step comes from.
void print_step_simulation(std::ostream& out, const StepReport& r) {
  row(out, "simulation",
      std::to_string(r.events) + " events, " + fmt("%.2f s", r.wall_time_s) + ", " +
          fmt("%.0f MB", r.peak_rss_mb));
  if (r.extrapolated_from.empty()) return;
  std::string runs;
  for (std::size_t i = 0; i < r.extrapolated_from.size(); ++i)
    runs += (i == 0                                ? ""
             : i + 1 == r.extrapolated_from.size() ? " and "
                                                   : ", ") +
            std::to_string(r.extrapolated_from[i]);
  row(out, "  extrapolated",
      "to " + std::to_string(r.microbatches) + " microbatches from runs of " + runs +
          " (the last two's steady slope)");
}

}  // namespace

void print_table(std::ostream& out, const StepReport& r) {
  print_step_headline(out, r);
  print_step_comm(out, r);
  print_step_memory(out, r);
  print_moe(out, r.moe);
  print_variability(out, r.variability);
  print_step_cost(out, r);
  print_step_simulation(out, r);
}

}  // namespace cs::report
