// How a core's loop books its wall-clock time as busy or idle
// (wirespeed_core_busy_seconds_total and wirespeed_core_idle_seconds_total). Each iteration
// reads the clock once, at its start; the span from one read to the next belongs to the
// iteration that began at the first: busy if it worked, idle if not. An idle iteration
// ends in its sleep (`idle: adaptive`), so the sleep is booked idle, not to the next
// iteration, which may find work.
#pragma once

#include <cstdint>

#include "stack/core/time.hpp"

namespace ws::dp {

struct LoopTime {
  Instant last;         // the clock read of the iteration before
  bool worked = false;  // whether that iteration worked

  // At the start of an iteration (`now`, its clock read): the span since the last read to
  // the iteration before, in `busy_ns` or `idle_ns`.
  void book(Instant now, uint64_t& busy_ns, uint64_t& idle_ns) {
    const auto spent = static_cast<uint64_t>((now - last).ns());
    last = now;
    (worked ? busy_ns : idle_ns) += spent;
  }
};

}  // namespace ws::dp
