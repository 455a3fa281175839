// The discrete-event loop: owns simulated time and the event queue; passed by reference, never
// global.
#pragma once

#include <cstdint>
#include <utility>

#include "sim/core/event_queue.h"
#include "sim/core/units.h"

namespace cs {

class Simulator {
 public:
  using Handler = EventQueue::Handler;

  Time now() const { return now_; }
  // Scheduling before now() is a logic error and throws std::logic_error.
  EventId schedule_at(Time at, Handler handler);
  // Throws std::overflow_error when now() + delay does not fit the clock.
  EventId schedule_in(Time delay, Handler handler);
  bool cancel(EventId id) { return queue_.cancel(id); }

  // Runs until no events remain or stop() is called. Returns the number of events handled.
  uint64_t run();
  // Runs events with time <= limit; leaves now() at the last handled event.
  uint64_t run_until(Time limit);
  // Runs at most `count` events (fewer when the queue empties or stop() is called).
  uint64_t run_for(uint64_t count);
  void stop() { stopped_ = true; }

  uint64_t events_processed() const { return events_processed_; }
  std::size_t pending() const { return queue_.size(); }

 private:
  uint64_t run_events(Time limit, uint64_t count);

  EventQueue queue_;
  Time now_;
  uint64_t events_processed_ = 0;
  bool stopped_ = false;
};

}  // namespace cs
