#include "sim/exec/kernel_stretcher.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace cs::exec {

KernelStretcher::KernelStretcher(Simulator& sim, const InterferenceModel& model, std::size_t ranks,
                                 Finished finished)
    : sim_(sim), model_(model), ranks_(ranks), finished_(std::move(finished)) {}

std::size_t KernelStretcher::bytes_per_rank() {
  return sizeof(Running);
}

void KernelStretcher::start(int32_t rank, uint32_t op, const Shape& shape, Time isolated) {
  Running& k = ranks_[static_cast<std::size_t>(rank)];
  k.busy = true;
  k.held = false;
  k.op = op;
  k.shape = shape;
  k.isolated = isolated;
  k.started = k.since = sim_.now();
  k.held_for = Time{};
  k.left_ps = static_cast<double>(isolated.count_ps());
  k.slowdown = 1;
  k.event = {};
  reschedule(rank);
}

void KernelStretcher::change_load(int32_t rank, CommPath path, int sign) {
  Running& k = ranks_[static_cast<std::size_t>(rank)];
  if (sign > 0)
    k.load += model_.load_of(path);
  else
    k.load -= model_.load_of(path);
  if (k.busy) reschedule(rank);
}

void KernelStretcher::hold(int32_t rank, int sign) {
  Running& k = ranks_[static_cast<std::size_t>(rank)];
  k.holds += sign;
  if (k.busy) reschedule(rank);
}

void KernelStretcher::reschedule(int32_t rank) {
  Running& k = ranks_[static_cast<std::size_t>(rank)];
  const bool held = k.holds > 0;
  const double slowdown = held ? k.slowdown
                               : kernel_slowdown(model_, k.shape.kind, k.isolated.as_seconds(),
                                                 k.shape.hbm_bytes, k.load, k.shape.ctas);
  if (!held && !k.held && k.event.valid() && slowdown == k.slowdown) return;
  // Since the last change the kernel was held, or ran at 1 / k.slowdown of the isolated rate.
  if (k.held) {
    k.held_for += sim_.now() - k.since;
  } else {
    k.left_ps -= static_cast<double>((sim_.now() - k.since).count_ps()) / k.slowdown;
    k.left_ps = std::max(k.left_ps, 0.0);
  }
  k.since = sim_.now();
  k.held = held;
  k.slowdown = slowdown;
  if (k.event.valid()) sim_.cancel(k.event);
  k.event = {};
  if (held) return;
  k.event = sim_.schedule_in(Time::ps(std::llround(k.left_ps * slowdown)), [this, rank] {
    Running& done = ranks_[static_cast<std::size_t>(rank)];
    done.busy = false;
    finished_(rank, done.op, (sim_.now() - done.started) - done.isolated, done.held_for);
  });
}

}  // namespace cs::exec
