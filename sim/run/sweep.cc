#include "sim/run/sweep.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

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
    apply_override(config, axes[a].field + "=" + values[a]);
  return config;
}

// Rows travel as tab-separated fields; strings escape the separators so any error text fits.
std::string escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    const char c = s[++i];
    out.push_back(c == 't' ? '\t' : c == 'n' ? '\n' : c);
  }
  return out;
}

class RowWriter {
 public:
  void str(std::string_view s) { sep() += escape(s); }
  void num(double v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    sep().append(buf, end);
  }
  void num(int64_t v) { sep() += std::to_string(v); }
  std::string take() { return std::move(out_); }

 private:
  std::string& sep() {
    if (!first_) out_.push_back('\t');
    first_ = false;
    return out_;
  }
  std::string out_;
  bool first_ = true;
};

class RowReader {
 public:
  explicit RowReader(std::string_view line) : fields_(split(line, '\t')) {}
  std::string str() { return unescape(next()); }
  double num() {
    const std::string& f = next();
    double v = 0;
    const auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || ptr != f.data() + f.size())
      throw std::invalid_argument("sweep row: bad number '" + f + "'");
    return v;
  }
  int64_t integer() {
    const std::string& f = next();
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || ptr != f.data() + f.size())
      throw std::invalid_argument("sweep row: bad integer '" + f + "'");
    return v;
  }

 private:
  const std::string& next() {
    if (pos_ >= fields_.size()) throw std::invalid_argument("sweep row: too few fields");
    return fields_[pos_++];
  }
  std::vector<std::string> fields_;
  std::size_t pos_ = 0;
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
      apply_override(copy, axis.field + "=" + value);
    }
  }
}

std::string serialize_sweep_row(const SweepRow& r) {
  RowWriter w;
  w.num(static_cast<int64_t>(r.index));
  w.num(static_cast<int64_t>(r.values.size()));
  for (const auto& v : r.values) w.str(v);
  w.str(r.error);
  w.str(r.layout);
  w.str(r.schedule);
  w.num(int64_t{r.gpus});
  w.num(int64_t{r.microbatches});
  for (const double v : {r.iteration_time_s, r.tokens_per_s, r.mfu, r.bubble_fraction,
                         r.analytic_bubble_fraction, r.compute_s})
    w.num(v);
  for (const double v : r.exposed_s) w.num(v);
  for (const double v : {r.peak_memory_gb, r.activations_gb}) w.num(v);
  w.num(int64_t{r.in_flight_microbatches});
  w.num(int64_t{r.fits ? 1 : 0});
  return w.take();
}

SweepRow parse_sweep_row(std::string_view line) {
  RowReader in(line);
  SweepRow r;
  r.index = static_cast<std::size_t>(in.integer());
  const int64_t n = in.integer();
  for (int64_t i = 0; i < n; ++i) r.values.push_back(in.str());
  r.error = in.str();
  r.layout = in.str();
  r.schedule = in.str();
  r.gpus = static_cast<int32_t>(in.integer());
  r.microbatches = static_cast<int32_t>(in.integer());
  for (double* v : {&r.iteration_time_s, &r.tokens_per_s, &r.mfu, &r.bubble_fraction,
                    &r.analytic_bubble_fraction, &r.compute_s})
    *v = in.num();
  for (double& v : r.exposed_s) v = in.num();
  for (double* v : {&r.peak_memory_gb, &r.activations_gb}) *v = in.num();
  r.in_flight_microbatches = static_cast<int32_t>(in.integer());
  r.fits = in.integer() != 0;
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

std::vector<SweepRow> run_sweep_points(
    const clustersim::RunConfig& base, const std::string& source,
    const std::vector<SweepAxis>& axes, const std::vector<std::size_t>& indices, int jobs,
    const std::function<void(std::size_t, std::size_t)>& on_done) {
  std::vector<SweepRow> rows(indices.size());
  std::atomic<std::size_t> next{0};
  std::mutex done_mutex;
  std::size_t done = 0;
  std::exception_ptr failure;
  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= indices.size()) return;
      try {
        rows[i] = run_sweep_point(base, source, axes, indices[i]);
      } catch (...) {
        // Anything else (out of memory, a bug) stops the sweep: finish what is running, rethrow.
        std::lock_guard<std::mutex> lock(done_mutex);
        if (!failure) failure = std::current_exception();
        next = indices.size();
        return;
      }
      std::lock_guard<std::mutex> lock(done_mutex);
      ++done;
      if (on_done) on_done(done, indices.size());
    }
  };
  const auto threads = static_cast<std::size_t>(std::max(1, jobs));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < std::min(threads, indices.size()); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return rows;
}

}  // namespace cs::run
