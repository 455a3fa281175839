// Records the ops of selected ranks during a step and writes them as a Chrome/Perfetto trace.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/core/units.h"
#include "sim/workload/layout.h"
#include "sim/workload/program.h"

namespace cs::report {

// Parses "0-15,1024" into sorted, distinct ranks; throws std::invalid_argument for bad syntax,
// a reversed range or a rank outside [0, world).
std::vector<int32_t> parse_rank_list(std::string_view text, int32_t world);

// A few ranks whose timelines tell the story of a whole step without a file per GPU: the first
// rank of every pipeline stage (rank 0 among them), so a 16,384-GPU run stays a few MB.
std::vector<int32_t> default_timeline_ranks(const workload::Layout& layout);

// Pass record() as SimulationOptions::on_op and ranks() as its op_ranks. Events are kept in a
// compact form (labels interned), because the programs they come from may not outlive the run.
class Timeline {
 public:
  Timeline(const workload::Layout& layout, std::vector<int32_t> ranks);

  const std::vector<int32_t>& ranks() const { return ranks_; }
  void record(int32_t rank, const workload::Program& program, uint32_t op, Time start, Time end);
  std::size_t size() const { return events_.size(); }

  // Trace-event JSON: {"traceEvents": [...], "displayTimeUnit": "ns"}. Each rank is a process
  // ("rank N (stage s)"), each stream a thread (compute, dp comm, pp send next, ...); ops are
  // "X" events with ts and dur in microseconds and their bytes, group, microbatch and class in
  // args. Events are sorted by (rank, stream, start), so the same step gives the same bytes.
  void write_json(std::ostream& out) const;

 private:
  struct Event {
    int32_t rank;
    workload::Stream stream;
    workload::OpKind kind;
    workload::OpClass op_class;
    workload::Dim dim;
    coll::Op coll_op;
    int32_t microbatch;
    int32_t layer;
    int32_t peer_stage;
    uint32_t label;
    Bytes bytes;
    Time start, end;
  };
  // Sets `event` to the "X" (complete) event of one op, named by its label, microbatch, layer.
  void fill_complete_event(const Event& e, nlohmann::ordered_json& event) const;

  workload::Layout layout_;
  std::vector<int32_t> ranks_;
  std::vector<Event> events_;
  std::vector<std::string> labels_;
  std::unordered_map<std::string, uint32_t> label_index_;
};

}  // namespace cs::report
