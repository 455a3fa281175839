#include "sim/report/timeline.h"

#include <array>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/report/json.h"

namespace cs::report {

namespace {

using workload::Dim;
using workload::OpClass;
using workload::OpKind;
using workload::Stream;

// In Stream order; the size check makes a new stream without a name fail to compile.
constexpr auto kStreamNames = std::to_array<const char*>(
    {"compute", "dp comm", "cp comm", "pp send next", "pp send prev", "pp recv prev",
     "pp recv next", "tp comm", "pp send prev (activations)", "pp recv next (activations)",
     "pp send next (gradients)", "pp recv prev (gradients)", "ep comm"});
static_assert(kStreamNames.size() == workload::kNumStreams);

const char* class_name(OpClass c) {
  switch (c) {
    case OpClass::kForward:
      return "forward";
    case OpClass::kBackward:
      return "backward";
    case OpClass::kWeightGrad:
      return "weight_grad";
    case OpClass::kRecompute:
      return "recompute";
    case OpClass::kOptimizer:
      return "optimizer";
    case OpClass::kComm:
      return "comm";
  }
  return "?";
}

std::string dim_name(Dim d) {
  return std::string(workload::info(d).key);
}

// Microseconds as the decimal of the integer picoseconds: whole ones as an integer, others as
// the correctly rounded quotient, whose shortest form is that decimal up to 15 significant
// digits (a step of 1000 s at picosecond resolution).
Json micros(Time t) {
  const int64_t ps = t.count_ps();
  if (ps % 1'000'000 == 0) return ps / 1'000'000;
  return static_cast<double>(ps) / 1e6;
}

int32_t parse_int(std::string_view text, std::string_view whole) {
  int32_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
    throw std::invalid_argument(std::string("rank list '").append(whole) + "': '" +
                                std::string(text) + "' is not a rank");
  return v;
}

}  // namespace

std::vector<int32_t> parse_rank_list(std::string_view text, int32_t world) {
  std::vector<int32_t> ranks;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    const std::size_t dash = item.find('-');
    const int32_t lo = parse_int(item.substr(0, dash), text);
    const int32_t hi = dash == std::string_view::npos ? lo : parse_int(item.substr(dash + 1), text);
    if (hi < lo)
      throw std::invalid_argument(std::string("rank list '").append(text) + "': reversed range");
    if (lo < 0 || hi >= world)
      throw std::invalid_argument(std::string("rank list '").append(text) + "': ranks are 0.." +
                                  std::to_string(world - 1));
    for (int32_t r = lo; r <= hi; ++r) ranks.push_back(r);
    start = end + 1;
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

std::vector<int32_t> default_timeline_ranks(const workload::Layout& layout) {
  std::vector<int32_t> ranks;
  for (int32_t s = 0; s < layout.size(Dim::kPp); ++s) ranks.push_back(layout.with_stage(0, s));
  return ranks;
}

Timeline::Timeline(const workload::Layout& layout, std::vector<int32_t> ranks)
    : layout_(layout), ranks_(std::move(ranks)) {}

void Timeline::record(int32_t rank, const workload::Program& program, uint32_t op_index, Time start,
                      Time end) {
  const workload::Op& op = program.ops[op_index];
  const std::string& text = op.label < program.labels.size() ? program.labels[op.label] : "op";
  const auto [it, added] = label_index_.emplace(text, static_cast<uint32_t>(labels_.size()));
  if (added) labels_.push_back(text);
  events_.push_back({rank, op.stream, op.kind, op.op_class, op.dim, op.coll_op, op.microbatch,
                     op.layer, op.peer_stage, it->second, op.bytes, start, end});
}

void Timeline::fill_complete_event(const Event& e, Json& event) const {
  std::string name = labels_[e.label];
  const std::string mb = e.microbatch >= 0 ? std::to_string(e.microbatch) : "";
  if (e.kind == OpKind::kCollective) {
    name +=
        std::string(" (") + dim_name(e.dim) + ' ' + std::string(coll::to_string(e.coll_op)) + ')';
  } else if (e.kind == OpKind::kSend || e.kind == OpKind::kRecv) {
    name += " mb " + mb + (e.kind == OpKind::kSend ? " to" : " from") + " stage " +
            std::to_string(e.peer_stage);
  } else if (!mb.empty()) {
    name += " mb " + mb;
  }
  if (e.layer >= 0) name += " layer " + std::to_string(e.layer);
  // Filled in place, field by field: a timeline has millions of events, and a new document per
  // event (or one built from initializer lists, a two-element array per pair) costs allocations.
  event["ph"] = "X";
  event["pid"] = e.rank;
  event["tid"] = static_cast<int>(e.stream);
  event["ts"] = micros(e.start);
  event["dur"] = micros(e.end - e.start);
  event["name"] = std::move(name);
  event["cat"] = class_name(e.op_class);
  Json& args = event["args"];
  args.clear();  // the previous event's, which may have had other keys
  args["op"] = labels_[e.label];
  args["class"] = class_name(e.op_class);
  if (e.microbatch >= 0) args["microbatch"] = e.microbatch;
  if (e.layer >= 0) args["layer"] = e.layer;
  if (e.kind != OpKind::kCompute) {
    args["bytes"] = e.bytes;
    args["group"] = dim_name(e.dim);
    args["collective"] = coll::to_string(e.coll_op);
  }
  if (e.peer_stage >= 0) args["peer_stage"] = e.peer_stage;
}

void Timeline::write_json(std::ostream& out) const {
  std::vector<const Event*> sorted;
  sorted.reserve(events_.size());
  for (const auto& e : events_) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Event* a, const Event* b) {
    return std::tie(a->rank, a->stream, a->start, a->end) <
           std::tie(b->rank, b->stream, b->start, b->end);
  });

  // One event per line: a trace of 100k events stays readable and diffable, and only one
  // event's JSON exists at a time.
  out << "{\"displayTimeUnit\": \"ns\",\n\"traceEvents\": [\n";
  bool first = true;
  auto line = [&](const Json& event) {
    out << (first ? "" : ",\n") << one_line(event);
    first = false;
  };
  // The streams each rank used, from the events in rank order (one pass, at any rank count).
  std::unordered_map<int32_t, std::vector<bool>> used_by_rank;
  for (const Event* e : sorted) {
    auto& streams = used_by_rank[e->rank];
    if (streams.empty()) streams.resize(workload::kNumStreams);
    streams[static_cast<std::size_t>(e->stream)] = true;
  }
  const std::vector<bool> none(workload::kNumStreams);
  for (const int32_t rank : ranks_) {
    const int32_t stage = layout_.coord(rank, Dim::kPp);
    const std::string name =
        "rank " + std::to_string(rank) + " (stage " + std::to_string(stage) + ")";
    line({{"ph", "M"}, {"pid", rank}, {"name", "process_name"}, {"args", {{"name", name}}}});
    line({{"ph", "M"},
          {"pid", rank},
          {"name", "process_sort_index"},
          {"args", {{"sort_index", rank}}}});
    const auto found = used_by_rank.find(rank);
    const std::vector<bool>& used = found == used_by_rank.end() ? none : found->second;
    for (int s = 0; s < workload::kNumStreams; ++s) {
      if (!used[static_cast<std::size_t>(s)]) continue;
      line({{"ph", "M"},
            {"pid", rank},
            {"tid", s},
            {"name", "thread_name"},
            {"args", {{"name", kStreamNames[s]}}}});
      line({{"ph", "M"},
            {"pid", rank},
            {"tid", s},
            {"name", "thread_sort_index"},
            {"args", {{"sort_index", s}}}});
    }
  }
  Json event;
  for (const Event* e : sorted) {
    fill_complete_event(*e, event);
    line(event);
  }
  out << "\n]}\n";
}

}  // namespace cs::report
