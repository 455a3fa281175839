#include "sim/workload/schedules/registry.h"

#include <stdexcept>

#include "sim/workload/schedules/entries.h"

namespace cs::workload {

const std::vector<ScheduleInfo>& schedule_table() {
  // A function-local static: built on first use, so no static initialiser elsewhere can see it
  // half-built.
  static const std::vector<ScheduleInfo> table = {
      gpipe_schedule(), one_f_one_b_schedule(), interleaved_schedule(), zb_h1_schedule(),
      zb_v_schedule(),  dualpipe_schedule(),    zb_h2_schedule(),
  };
  return table;
}

const ScheduleInfo& schedule_info(PipelineSchedule schedule) {
  for (const ScheduleInfo& s : schedule_table()) {
    if (s.value == schedule) return s;
  }
  throw std::invalid_argument("unknown pipeline schedule " +
                              std::to_string(static_cast<int>(schedule)));
}

const ScheduleInfo& schedule_info(clustersim::ParallelConfig::Schedule schedule) {
  for (const ScheduleInfo& s : schedule_table()) {
    if (s.config == schedule) return s;
  }
  throw std::invalid_argument("unknown pipeline schedule " +
                              std::to_string(static_cast<int>(schedule)));
}

std::string names_with_virtual_stages(std::string_view separator) {
  std::string names;
  for (const ScheduleInfo& s : schedule_table()) {
    if (!s.virtual_stages) continue;
    if (!names.empty()) names += separator;
    names += s.name;
  }
  return names;
}

}  // namespace cs::workload
