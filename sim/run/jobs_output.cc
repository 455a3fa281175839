#include "sim/run/jobs_output.h"

#include <string>

#include "sim/report/json.h"
#include "sim/report/text_rows.h"

namespace cs::run {

namespace {

using report::fixed;

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + ' ' : s + std::string(width - s.size(), ' ');
}

}  // namespace

void print_jobs_table(std::ostream& out, const JobsReport& r) {
  out << r.jobs.size() << " jobs on " << r.topology << " (" << r.cluster_gpus << " x " << r.gpu
      << ", " << r.network << " network), placement " << r.placement << "\n";
  out << "each job repeats its step while another is still in its first; alone: the same GPUs "
         "with nothing else running\n\n";
  out << pad("job", 4) << pad("name", 14) << pad("layout", 28) << pad("gpus", 14) << pad("steps", 6)
      << pad("alone s", 10) << pad("shared s", 10) << pad("max s", 10) << pad("slowdown", 9)
      << "MFU alone/shared\n";
  for (std::size_t j = 0; j < r.jobs.size(); ++j) {
    const JobFigures& f = r.jobs[j];
    out << pad(std::to_string(j), 4) << pad(f.name, 14) << pad(f.layout, 28)
        << pad(f.gpu_ranges.size() <= 13 ? f.gpu_ranges : std::to_string(f.gpus) + " GPUs", 14)
        << pad(std::to_string(f.steps), 6) << pad(fixed(f.alone_step_s, 4), 10)
        << pad(fixed(f.mean_step_s, 4), 10) << pad(fixed(f.max_step_s, 4), 10)
        << pad(fixed(f.slowdown, 3) + "x", 9) << fixed(100 * f.mfu_alone, 1) << "% / "
        << fixed(100 * f.mfu_shared, 1) << "%\n";
  }
  out << "\nshared run: " << fixed(r.span_s, 4) << " s simulated; " << r.events
      << " events in all runs, " << fixed(r.wall_time_s, 2) << " s wall\n";
}

void write_jobs_json(std::ostream& out, const JobsReport& r, bool include_host) {
  report::Json j;
  j["cluster"] = {{"topology", r.topology},
                  {"gpu", r.gpu},
                  {"gpus", r.cluster_gpus},
                  {"network", r.network},
                  {"placement", r.placement}};
  report::Json& jobs = j["jobs"] = report::Json::array();
  for (const JobFigures& f : r.jobs) {
    jobs.push_back({{"name", f.name},
                    {"source", f.source},
                    {"layout", f.layout},
                    {"gpus", f.gpus},
                    {"gpu_ranges", f.gpu_ranges},
                    {"steps", f.steps},
                    {"alone_iteration_time_s", f.alone_step_s},
                    {"iteration_time_s", f.mean_step_s},
                    {"max_iteration_time_s", f.max_step_s},
                    {"slowdown", f.slowdown},
                    {"mfu_alone", f.mfu_alone},
                    {"mfu", f.mfu_shared}});
  }
  j["span_s"] = r.span_s;
  j["events"] = r.events;
  if (include_host) j["wall_time_s"] = r.wall_time_s;
  report::write_document(out, j);
  out << '\n';  // a blank last line, as this file has always ended
}

}  // namespace cs::run
