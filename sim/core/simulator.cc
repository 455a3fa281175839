#include "sim/core/simulator.h"

#include <stdexcept>
#include <string>

namespace cs {

EventId Simulator::schedule_at(Time at, Handler handler) {
  if (at < now_) {
    throw std::logic_error("event scheduled in the past: at " + std::to_string(at.count_ps()) +
                           " ps, now " + std::to_string(now_.count_ps()) + " ps");
  }
  return queue_.push(at, std::move(handler));
}

EventId Simulator::schedule_in(Time delay, Handler handler) {
  if (delay > Time{} && delay > Time::max() - now_) {
    throw std::overflow_error(
        "simulated time overflow: an event " + std::to_string(delay.as_seconds()) + " s after " +
        std::to_string(now_.as_seconds()) + " s is beyond the clock's range of about 106 days");
  }
  return schedule_at(now_ + delay, std::move(handler));
}

uint64_t Simulator::run() {
  return run_until(Time::max());
}

uint64_t Simulator::run_until(Time limit) {
  return run_events(limit, UINT64_MAX);
}

uint64_t Simulator::run_for(uint64_t count) {
  return run_events(Time::max(), count);
}

uint64_t Simulator::run_events(Time limit, uint64_t count) {
  stopped_ = false;
  uint64_t handled = 0;
  Handler handler;
  while (handled < count && !stopped_ && !queue_.empty() && queue_.next_time() <= limit) {
    queue_.pop(now_, handler);
    handler();
    ++handled;
  }
  events_processed_ += handled;
  return handled;
}

}  // namespace cs
