#include "sim/plan/memory_report.h"

#include <algorithm>
#include <cstdio>

#include "sim/compute/gpu_profile.h"
#include "sim/compute/precision_formats.h"
#include "sim/cost/host.h"
#include "sim/report/json.h"
#include "sim/run/config_checks.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/layout_config.h"
#include "sim/workload/model_math.h"
#include "sim/workload/pipeline_schedule.h"
#include "sim/workload/recompute.h"
#include "sim/workload/schedules/registry.h"
#include "sim/workload/stack.h"
#include "sim/workload/validate.h"

namespace cs::plan {

namespace {

using clustersim::ParallelConfig;

std::string layout_text(const ParallelConfig& p) {
  std::string s = workload::dims_text(workload::dim_sizes(p));
  if (p.virtual_stages() > 1) s += " (v " + std::to_string(p.virtual_stages()) + ")";
  if (workload::sequence_parallel_on(p)) s += ", SP";
  s += ", ZeRO-" + std::to_string(p.zero_stage());
  s += std::string(", recompute ") + ParallelConfig::Recompute_Name(p.recompute());
  if (p.checkpoint_every_k_layers() > 0)
    s += ", checkpoint every " + std::to_string(p.checkpoint_every_k_layers()) + " layers";
  s += ", mbs " + std::to_string(p.microbatch_size());
  return s;
}

// The peak-stage breakdown of `config` as a comparison row.
VariantRow row_of(const clustersim::RunConfig& config,
                  const std::vector<std::vector<workload::WorkItem>>& orders, double capacity) {
  const auto mem = workload::estimate_memory(config, orders);
  VariantRow r;
  r.weights = static_cast<double>(mem.weights);
  r.gradients = static_cast<double>(mem.gradients);
  r.optimizer = static_cast<double>(mem.optimizer);
  r.activations = static_cast<double>(mem.activations);
  r.temporary = static_cast<double>(mem.temporary);
  r.working_set = static_cast<double>(mem.working_set);
  r.total = static_cast<double>(mem.total());
  r.fits = r.total <= capacity;
  return r;
}

// Recompute FLOPs of `config` beyond model FLOPs. Checkpointing every k layers recomputes every
// layer's forward once, as FULL does.
double recompute_flops(const clustersim::RunConfig& config) {
  clustersim::RunConfig c = config;
  if (c.parallel().checkpoint_every_k_layers() > 0)
    c.mutable_parallel()->set_recompute(ParallelConfig::FULL);
  return workload::hardware_flops_per_step(c) - workload::model_flops_per_step(c);
}

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", bytes / 1e9);
  return buf;
}

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

// Of a config validate_config has passed: its topology resolves, so no error names the source.
std::string resolved_gpu(const clustersim::RunConfig& config) {
  return run::configured_gpu(config, "plan");
}

}  // namespace

std::vector<std::vector<workload::WorkItem>> stage_orders(const clustersim::RunConfig& config) {
  const auto& p = config.parallel();
  return workload::pipeline_orders(workload::pipeline_schedule_of(p), p.pp(),
                                   workload::num_microbatches(p), p.virtual_stages(), 1.0, 1.0,
                                   1.0);
}

std::vector<int32_t> held_per_stage(const clustersim::RunConfig& config) {
  std::vector<int32_t> held;
  for (const auto& order : stage_orders(config))
    held.push_back(workload::peak_held_activations(order));
  return held;
}

FitCheck check_fit(const clustersim::RunConfig& config, double hbm_capacity_bytes) {
  FitCheck f;
  f.capacity = hbm_capacity_bytes;
  const auto mem = workload::estimate_memory(config, stage_orders(config));
  f.peak = static_cast<double>(mem.total());
  f.fits = f.peak <= hbm_capacity_bytes;
  if (f.fits && (config.offload().optimizer() != clustersim::OffloadConfig::NONE ||
                 config.offload().parameters() != clustersim::OffloadConfig::NONE)) {
    const cost::HostFigures host =
        cost::host_figures(compute::load_gpu_profile(resolved_gpu(config)), config.offload());
    for (int32_t s = 0; s < config.parallel().pp(); ++s) {
      const auto m = workload::estimate_stage_memory(config, s, 0);
      if (static_cast<double>(m.host_dram) > host.host_memory_per_gpu() ||
          static_cast<double>(m.host_nvme) > host.nvme_per_gpu())
        f.fits = false;
    }
  }
  return f;
}

namespace {

// The report's heading: names, the layout, the GPU and the precision, before any stage.
void fill_memory_heading(MemoryReport& r, const clustersim::RunConfig& config) {
  const auto& p = config.parallel();
  r.name = config.name().empty() ? config.model().name() : config.name();
  r.layout = layout_text(p);
  r.schedule = std::string(workload::schedule_info(p.schedule()).name);
  r.gpu = resolved_gpu(config);
  r.precision = clustersim::Precision_Name(config.precision());
  if (compute::format_of(config.precision()).quantized &&
      config.effects().memory_fp8_linear_inputs())
    r.quantized_input_bytes = compute::stored_bytes_per_element(config.precision());
  r.gpus = static_cast<int32_t>(workload::world_of(workload::dim_sizes(p)));
  r.microbatches = workload::num_microbatches(p);
}

// Stage `s`'s memory under its work order, with the optimizer bytes split into fp32 master,
// Adam m and Adam v (dense states sharded over DP x CP, expert states over their own shards).
StageMemory stage_memory_of(const clustersim::RunConfig& config, int32_t s,
                            const std::vector<workload::WorkItem>& order) {
  const auto& p = config.parallel();
  const int64_t shards = int64_t{p.dp()} * p.cp();
  StageMemory sm;
  sm.stage = s;
  sm.layers = workload::layers_on_stage(config, s);
  sm.in_flight = workload::peak_held_activations(order);
  sm.mem = workload::estimate_stage_memory(config, s, std::span<const workload::WorkItem>(order));
  if (sm.mem.optimizer > 0) {
    const auto detail = [&](int64_t params, int64_t over) {
      return workload::model_state_detail(static_cast<double>(params), p.zero_stage(), over,
                                          workload::StatePrecision::kBf16);
    };
    const auto dense = detail(sm.mem.params - sm.mem.expert_params, shards);
    const auto experts = detail(sm.mem.expert_params, workload::expert_state_shards(p));
    sm.master = dense.master + experts.master;
    sm.adam_m = dense.adam_m + experts.adam_m;
    sm.adam_v = dense.adam_v + experts.adam_v;
  }
  return sm;
}

// Every stage's memory, and from them the peak stage, the sum over all GPUs and the largest
// offloaded bytes.
void fill_memory_stages(MemoryReport& r, const clustersim::RunConfig& config,
                        const std::vector<std::vector<workload::WorkItem>>& orders) {
  const auto& p = config.parallel();
  const int64_t ranks_per_stage = int64_t{p.tp()} * p.cp() * p.dp();
  for (int32_t s = 0; s < p.pp(); ++s) {
    StageMemory sm = stage_memory_of(config, s, orders[static_cast<std::size_t>(s)]);
    const double total = static_cast<double>(sm.mem.total());
    if (s == 0 || total > r.peak) {
      r.peak = total;
      r.peak_stage = s;
    }
    r.total_all_gpus += total * static_cast<double>(ranks_per_stage);
    r.host_dram = std::max(r.host_dram, static_cast<double>(sm.mem.host_dram));
    r.host_nvme = std::max(r.host_nvme, static_cast<double>(sm.mem.host_nvme));
    r.stages.push_back(sm);
  }
}

// Mixed precision side by side, on the peak stage (offload ignored: model states on the GPU).
std::vector<VariantRow> precision_rows_of(
    const clustersim::RunConfig& config, const std::vector<std::vector<workload::WorkItem>>& orders,
    const MemoryReport& r) {
  clustersim::RunConfig c = config;
  c.clear_offload();
  const auto base = row_of(c, orders, r.capacity);
  const double params =
      static_cast<double>(r.stages[static_cast<std::size_t>(r.peak_stage)].mem.params);
  struct P {
    const char* name;
    workload::StatePrecision prec;
    double act_scale;
    const char* note;
  };
  const P rows[] = {
      {"FP32", workload::StatePrecision::kFp32, 2.0,
       "fp32 weights 4 + grads 4 + Adam m,v 8 = 16 B/param; 4-byte activations"},
      {"BF16 + FP32 master", workload::StatePrecision::kBf16, 1.0,
       "bf16 weights 2 + grads 2 + fp32 master, m, v 12 = 16 B/param (fp32 main_grad: 18)"},
      {"FP8 (Transformer Engine)", workload::StatePrecision::kFp8, 1.0,
       "same states as BF16: weights cast to FP8 per GEMM; activations taken as BF16"},
  };
  std::vector<VariantRow> out;
  for (const P& pr : rows) {
    // Unsharded (ZeRO-0) states: sharding would hide which state dominates.
    const auto d = workload::model_state_detail(params, 0, 1, pr.prec);
    VariantRow v = base;
    v.name = pr.name;
    v.note = pr.note;
    v.weights = d.weights;
    v.gradients = d.gradients;
    v.optimizer = d.optimizer();
    v.activations = base.activations * pr.act_scale;
    v.working_set = base.working_set * pr.act_scale;
    v.total = v.weights + v.gradients + v.optimizer + v.activations + v.temporary + v.working_set;
    v.fits = v.total <= r.capacity;
    out.push_back(v);
  }
  return out;
}

// Checkpointing: memory against recompute, on the peak stage.
std::vector<VariantRow> checkpoint_rows_of(
    const clustersim::RunConfig& config, const std::vector<std::vector<workload::WorkItem>>& orders,
    const MemoryReport& r, const compute::GpuProfile& gpu) {
  const double model_flops = workload::model_flops_per_step(config);
  const double throughput =
      r.gpus * compute::peak_flops(gpu, compute::Precision::kBf16) * gpu.gemm().efficiency_bf16();
  std::vector<VariantRow> out;
  auto add = [&](const std::string& name, ParallelConfig::Recompute rc, int32_t k) {
    clustersim::RunConfig c = config;
    c.mutable_parallel()->set_recompute(rc);
    c.mutable_parallel()->set_checkpoint_every_k_layers(k);
    if (!workload::stack_runs(c)) return;  // a policy the run's software stack does not have
    VariantRow v = row_of(c, orders, r.capacity);
    v.name = name;
    const double extra = recompute_flops(c);
    v.extra_flops_fraction = extra / model_flops;
    v.extra_seconds = extra / throughput;
    out.push_back(v);
  };
  int32_t max_layers = 0;
  for (const auto& st : r.stages) max_layers = std::max(max_layers, st.layers);
  for (const auto& m : workload::recompute_modes()) {
    // Checkpointing every k layers keeps more than full recompute, which is k = 1.
    if (m.mode == ParallelConfig::FULL)
      for (int32_t k : {8, 4, 2})
        if (k < max_layers) add("every " + std::to_string(k) + " layers", ParallelConfig::NONE, k);
    add(std::string(m.name), m.mode, 0);
  }
  return out;
}

}  // namespace

MemoryReport build_memory_report(const clustersim::RunConfig& original, const std::string& source) {
  clustersim::RunConfig config = original;
  run::validate_config(config, source, run::CheckContext::kPlan);
  MemoryReport r;
  fill_memory_heading(r, config);
  const auto gpu = compute::load_gpu_profile(r.gpu);
  r.capacity = static_cast<double>(compute::hbm_capacity_bytes(gpu));

  const auto orders = stage_orders(config);
  fill_memory_stages(r, config, orders);
  r.fits = r.peak <= r.capacity;
  const cost::HostFigures host = cost::host_figures(gpu, config.offload());
  r.host_dram_capacity = host.host_memory_per_gpu();
  r.host_nvme_capacity = host.nvme_per_gpu();
  r.fits_host = r.host_dram <= r.host_dram_capacity && r.host_nvme <= r.host_nvme_capacity;
  r.precision_rows = precision_rows_of(config, orders, r);
  r.checkpoint_rows = checkpoint_rows_of(config, orders, r, gpu);
  return r;
}

// The precision's kept linear inputs, element and block scales apart (precision_formats.h).
static void print_quantized_inputs(std::ostream& out, const MemoryReport& r) {
  clustersim::Precision p = clustersim::BF16;
  if (!(r.quantized_input_bytes > 0) || !clustersim::Precision_Parse(r.precision, &p)) return;
  const compute::PrecisionFormat& f = compute::format_of(p);
  out << "linear inputs kept for backward: " << r.quantized_input_bytes << " B per element";
  if (f.block > 0)
    out << " (" << f.element_bytes << " B " << f.name << " + a " << f.scale_bytes << " B scale per "
        << f.block << " elements)";
  out << '\n';
}

void print_memory_report(std::ostream& out, const MemoryReport& r) {
  out << r.name << ": " << r.layout << ", " << r.schedule << ", " << r.microbatches
      << " microbatches, " << r.gpus << " x " << r.gpu << " (" << r.precision << ")\n";
  print_quantized_inputs(out, r);
  out << "per GPU, GB:\n  " << pad("stage", 7) << pad("layers", 8) << pad("held", 6)
      << pad("weights", 9) << pad("grads", 8) << pad("master", 8) << pad("adam_m", 8)
      << pad("adam_v", 8) << pad("activ.", 8) << pad("temp", 7) << pad("bwd ws", 8)
      << pad("total", 8) << "host\n";
  for (const auto& s : r.stages) {
    out << "  " << pad(std::to_string(s.stage), 7) << pad(std::to_string(s.layers), 8)
        << pad(std::to_string(s.in_flight), 6) << pad(gb(s.mem.weights), 9)
        << pad(gb(s.mem.gradients), 8) << pad(gb(s.master), 8) << pad(gb(s.adam_m), 8)
        << pad(gb(s.adam_v), 8) << pad(gb(s.mem.activations), 8) << pad(gb(s.mem.temporary), 7)
        << pad(gb(s.mem.working_set), 8) << pad(gb(s.mem.total()), 8)
        << gb(s.mem.host_dram + s.mem.host_nvme) << (s.stage == r.peak_stage ? "  <- peak" : "")
        << '\n';
  }
  out << "  peak " << gb(r.peak) << " GB of " << gb(r.capacity)
      << " GB HBM: " << (r.fits ? "fits" : "DOES NOT FIT") << " (" << gb(r.capacity - r.peak)
      << " GB headroom, before CUDA context / NCCL buffers / fragmentation)\n";
  out << "  total over " << r.gpus << " GPUs: " << gb(r.total_all_gpus) << " GB\n";
  if (r.host_dram > 0 || r.host_nvme > 0) {
    out << "  offloaded per GPU: host DRAM " << gb(r.host_dram) << " of "
        << gb(r.host_dram_capacity) << " GB, NVMe " << gb(r.host_nvme) << " of "
        << gb(r.host_nvme_capacity) << " GB: " << (r.fits_host ? "fits" : "DOES NOT FIT") << '\n';
  }
  out << "\nmixed precision (peak stage, per GPU, GB, states without ZeRO):\n  " << pad("", 26)
      << pad("weights", 9) << pad("grads", 8) << pad("optim.", 8) << pad("activ.", 8)
      << pad("total", 8) << '\n';
  for (const auto& v : r.precision_rows) {
    const double states = v.weights + v.gradients + v.optimizer;
    char share[96];
    std::snprintf(share, sizeof share, "optimizer %.0f%% of states",
                  states > 0 ? 100 * v.optimizer / states : 0.0);
    out << "  " << pad(v.name, 26) << pad(gb(v.weights), 9) << pad(gb(v.gradients), 8)
        << pad(gb(v.optimizer), 8) << pad(gb(v.activations), 8) << pad(gb(v.total), 8) << share
        << "\n    " << v.note << '\n';
  }
  if (r.precision_rows.size() >= 2 && r.precision_rows[0].total > 0) {
    char line[512];
    std::snprintf(
        line, sizeof line,
        "  (states unsharded, as without ZeRO, so that their shares show.) Per parameter:\n"
        "  FP32 4+4+8 = 16 B; BF16 with fp32 master 2+2+12 = 16 B. Halving weights and\n"
        "  gradients alone would save 25%% (16 -> 12 B), not 50%%, because Adam's m and v\n"
        "  dominate; the fp32 master copy then takes even that back. Total here: BF16 is\n"
        "  %.0f%% smaller than FP32, all of it from 16-bit activations.\n",
        100 * (1 - r.precision_rows[1].total / r.precision_rows[0].total));
    out << line;
  }
  out << "\ncheckpointing (peak stage, per GPU):\n  " << pad("policy", 18) << pad("activ. GB", 11)
      << pad("temp GB", 9) << pad("total GB", 10) << pad("saved GB", 10) << "extra compute\n";
  const double none_total = r.checkpoint_rows.empty() ? 0 : r.checkpoint_rows[0].total;
  for (const auto& v : r.checkpoint_rows) {
    char extra[80];
    std::snprintf(extra, sizeof extra, "+%.1f%% FLOPs, ~%.2f s/step", 100 * v.extra_flops_fraction,
                  v.extra_seconds);
    out << "  " << pad(v.name, 18) << pad(gb(v.activations), 11) << pad(gb(v.temporary), 9)
        << pad(gb(v.total), 10) << pad(gb(none_total - v.total), 10) << extra
        << (v.fits ? "" : "  (does not fit)") << '\n';
  }
}

void write_memory_json(std::ostream& out, const MemoryReport& r) {
  report::Json j = {{"name", r.name},
                    {"layout", r.layout},
                    {"schedule", r.schedule},
                    {"gpu", r.gpu},
                    {"precision", r.precision},
                    {"quantized_input_bytes_per_element", r.quantized_input_bytes},
                    {"gpus", r.gpus},
                    {"microbatches", r.microbatches},
                    {"capacity_gb", r.capacity / 1e9},
                    {"peak_gb", r.peak / 1e9},
                    {"peak_stage", r.peak_stage},
                    {"total_all_gpus_gb", r.total_all_gpus / 1e9},
                    {"fits", r.fits},
                    {"host_dram_gb", r.host_dram / 1e9},
                    {"host_nvme_gb", r.host_nvme / 1e9},
                    {"host_dram_capacity_gb", r.host_dram_capacity / 1e9},
                    {"host_nvme_capacity_gb", r.host_nvme_capacity / 1e9},
                    {"fits_host", r.fits_host}};
  auto gb = [](auto bytes) { return static_cast<double>(bytes) / 1e9; };
  report::Json& stages = j["stages"] = report::Json::array();
  for (const auto& s : r.stages) {
    stages.push_back({{"stage", s.stage},
                      {"layers", s.layers},
                      {"in_flight", s.in_flight},
                      {"weights_gb", gb(s.mem.weights)},
                      {"gradients_gb", gb(s.mem.gradients)},
                      {"master_gb", s.master / 1e9},
                      {"adam_m_gb", s.adam_m / 1e9},
                      {"adam_v_gb", s.adam_v / 1e9},
                      {"activations_gb", gb(s.mem.activations)},
                      {"temporary_gb", gb(s.mem.temporary)},
                      {"working_set_gb", gb(s.mem.working_set)},
                      {"total_gb", gb(s.mem.total())},
                      {"host_dram_gb", gb(s.mem.host_dram)},
                      {"host_nvme_gb", gb(s.mem.host_nvme)}});
  }
  auto rows = [](const std::vector<VariantRow>& v) {
    report::Json list = report::Json::array();
    for (const auto& x : v) {
      list.push_back({{"name", x.name},
                      {"weights_gb", x.weights / 1e9},
                      {"gradients_gb", x.gradients / 1e9},
                      {"optimizer_gb", x.optimizer / 1e9},
                      {"activations_gb", x.activations / 1e9},
                      {"temporary_gb", x.temporary / 1e9},
                      {"working_set_gb", x.working_set / 1e9},
                      {"total_gb", x.total / 1e9},
                      {"extra_flops_fraction", x.extra_flops_fraction},
                      {"extra_seconds", x.extra_seconds},
                      {"fits", x.fits}});
    }
    return list;
  };
  // Not "precision": that key already names the configuration's precision (the hand-written
  // writer this replaced wrote both, a repeated key that JSON readers resolve to the last one).
  j["precision_rows"] = rows(r.precision_rows);
  j["checkpointing"] = rows(r.checkpoint_rows);
  report::write_document(out, j);
  out << '\n';  // a blank last line, as this file has always ended
}

}  // namespace cs::plan
