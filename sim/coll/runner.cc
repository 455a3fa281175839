#include "sim/coll/runner.h"

#include <cmath>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

namespace cs::coll {
namespace {

// Owns itself from start() until the last message completes; callbacks hold a raw pointer and a
// message index, which fits std::function's inline storage (no allocation per message).
class Run {
 public:
  Run(Simulator& sim, net::Network& network, const Schedule& schedule,
      std::span<const net::VertexId> vertices, Bytes size,
      std::function<void(const RunStats&)> done)
      : sim_(sim),
        network_(network),
        schedule_(schedule),
        vertices_(vertices.begin(), vertices.end()),
        size_(size),
        done_(std::move(done)),
        waiting_(schedule.num_messages()),
        remaining_(static_cast<uint32_t>(schedule.num_messages())) {
    stats_.start = sim.now();
  }

  static void start(std::unique_ptr<Run> run) {
    Run* self = run.get();
    self->self_ = std::move(run);
    if (self->remaining_ == 0) {
      self->sim_.schedule_in(Time{}, [self] { self->finish(); });
      return;
    }
    for (uint32_t m = 0; m < self->waiting_.size(); ++m) {
      self->waiting_[m] = static_cast<uint32_t>(self->schedule_.deps(m).size());
    }
    const Time launch = self->schedule_.key().wire.launch_latency;
    if (launch > Time{}) {
      self->sim_.schedule_in(launch, [self] { self->launch_ready(); });
    } else {
      self->launch_ready();
    }
  }

 private:
  // Launch only after every counter is set: a send may complete synchronously.
  void launch_ready() {
    for (uint32_t m = 0; m < waiting_.size(); ++m) {
      if (waiting_[m] == 0) launch(m);
    }
  }

  bool intra_node(const Message& msg) const {
    const int32_t node = schedule_.key().node_size;
    return node > 0 && msg.src / node == msg.dst / node;
  }

  // Bytes on the wire for `payload`: protocol flags and NVLS traffic scale every message, NVLink
  // packet overhead those inside a server, the network transport's overhead those between servers.
  Bytes wire_bytes(const Message& msg, Bytes payload) const {
    const WireModel& wire = schedule_.key().wire;
    double scale = wire.byte_factor;
    scale /= intra_node(msg) ? wire.nvlink_efficiency : wire.net_efficiency;
    if (scale == 1.0) return payload;
    return static_cast<Bytes>(std::llround(static_cast<double>(payload) * scale));
  }

  // Called when message m's bytes have landed. The sender's next send on the same connection
  // may go at once (its slot is free); everything that needs m's data, and the end of the
  // collective, waits for the receiver's per-step latency.
  void landed(uint32_t m) {
    const Message& msg = schedule_.message(m);
    const WireModel& wire = schedule_.key().wire;
    Time latency = msg.local()       ? Time{}
                   : intra_node(msg) ? wire.intra_step_latency
                                     : wire.inter_step_latency;
    if (latency > Time{})
      latency =
          step_after_route(latency, network_.path_latency(vertices_[msg.src], vertices_[msg.dst]));
    if (latency == Time{}) {
      complete(m);
      return;
    }
    for (uint32_t d : schedule_.dependents(m)) {
      const Message& next = schedule_.message(d);
      if (next.src == msg.src && next.dst == msg.dst && --waiting_[d] == 0) launch(d);
    }
    sim_.schedule_in(latency, [this, m] { complete(m, true); });
  }

  void launch(uint32_t m) {
    const Message& msg = schedule_.message(m);
    if (msg.local()) {
      sim_.schedule_in(Time{}, [this, m] { complete(m); });
      return;
    }
    const Bytes bytes = schedule_.message_bytes(m, size_);
    stats_.bytes_sent += bytes;
    ++stats_.messages;
    const Bytes wire = wire_bytes(msg, bytes);
    stats_.wire_bytes += wire;
    network_.send(vertices_[msg.src], vertices_[msg.dst], wire, [this, m] { landed(m); });
  }

  // Releases m's dependents; `skip_same_connection` when landed() released those already.
  void complete(uint32_t m, bool skip_same_connection = false) {
    const Message& msg = schedule_.message(m);
    for (uint32_t d : schedule_.dependents(m)) {
      const Message& next = schedule_.message(d);
      if (skip_same_connection && next.src == msg.src && next.dst == msg.dst) continue;
      if (--waiting_[d] == 0) launch(d);
    }
    if (--remaining_ == 0) finish();
  }

  void finish() {
    std::unique_ptr<Run> keep = std::move(self_);
    stats_.end = sim_.now();
    sim_.schedule_in(Time{}, [done = std::move(done_), stats = stats_] {
      if (done) done(stats);
    });
  }

  Simulator& sim_;
  net::Network& network_;
  const Schedule& schedule_;
  std::vector<net::VertexId> vertices_;
  Bytes size_;
  std::function<void(const RunStats&)> done_;
  std::vector<uint32_t> waiting_;  // dependencies still to complete, per message
  uint32_t remaining_;             // messages not yet completed
  RunStats stats_;
  std::unique_ptr<Run> self_;
};

}  // namespace

void run_collective(Simulator& sim, net::Network& network, const Schedule& schedule,
                    std::span<const net::VertexId> rank_to_vertex, Bytes size,
                    std::function<void(const RunStats&)> done) {
  if (rank_to_vertex.size() != static_cast<std::size_t>(schedule.num_ranks())) {
    throw std::invalid_argument("run_collective needs one vertex per rank of the schedule");
  }
  if (size < 0) throw std::invalid_argument("collective size must not be negative");
  Run::start(std::make_unique<Run>(sim, network, schedule, rank_to_vertex, size, std::move(done)));
}

void run_collective(Simulator& sim, net::Network& network, const Schedule& schedule,
                    std::span<const net::VertexId> rank_to_vertex, Bytes size,
                    std::function<void()> done) {
  run_collective(sim, network, schedule, rank_to_vertex, size,
                 [done = std::move(done)](const RunStats&) {
                   if (done) done();
                 });
}

}  // namespace cs::coll
