// When an `idle: adaptive` core may sleep, and for how long: the decision alone, with time
// as a parameter, so a test can drive it on a virtual clock (tests/unit/dataplane).
//
// A core that has work never sleeps: the pipeline calls worked() for every iteration that
// received or sent something (a TX-only source counts) or found a timer due. After work
// the core busy-polls for `spin` (NAPI busy-poll's idea: the next segment of a flow
// usually follows within microseconds, and a wakeup costs more than the wait). Then it
// sleeps, but only briefly (`recent_max_sleep`) while the last work is under `recent`
// old, so a flow's next flight (an ACK clock of a round trip, a few ms) finds the core
// awake within microseconds; then in naps of at most `awaited_max_sleep` while it is
// under `awaited` old (a long path's round trip: a core that wakes only after a whole
// train of ACKs answers it with one burst, where a kernel sender answers the first ACK at
// once); a core quiet for longer backs off to `max_sleep`, which keeps an idle data plane
// at a few % of a CPU (naps of 20 us cost about 31 % of a core on the test VM, of 100 us
// 10 %, of 1 ms 1 %). Never past the next due time, and never a sleep shorter than
// `min_sleep` (a wakeup costs about that): a timer due that soon is polled for.
#pragma once

#include <algorithm>

#include "stack/core/time.hpp"

namespace ws::dp {

struct IdleTuning {
  Duration spin = Duration::micros(1000);
  Duration recent = Duration::millis(20);
  Duration min_sleep = Duration::micros(3);
  Duration first_sleep = Duration::micros(5);
  Duration recent_max_sleep = Duration::micros(20);
  Duration awaited = Duration::millis(250);
  Duration awaited_max_sleep = Duration::micros(100);
  Duration max_sleep = Duration::micros(1000);
};

class IdlePolicy {
 public:
  explicit IdlePolicy(IdleTuning t = {}) : t_(t) {}

  void worked(Instant now) {
    last_work_ = now;
    sleep_ = Duration::zero();
  }

  // An iteration found nothing to do at `now`; `next_due` is the earliest timer of the
  // stack and the services (never() if none). Returns how long to sleep: zero means poll
  // again at once.
  Duration on_empty(Instant now, Instant next_due) {
    if (now - last_work_ < t_.spin) return Duration::zero();
    const Duration until_due = next_due.is_never() ? Duration::max()
                               : next_due > now    ? next_due - now
                                                   : Duration::zero();
    if (until_due < t_.min_sleep) return Duration::zero();
    const Duration quiet = now - last_work_;
    const Duration cap = quiet < t_.recent    ? t_.recent_max_sleep
                         : quiet < t_.awaited ? t_.awaited_max_sleep
                                              : t_.max_sleep;
    sleep_ = sleep_ == Duration::zero() ? t_.first_sleep : std::min(sleep_ * 2, cap);
    sleep_ = std::min(sleep_, cap);
    return std::min(sleep_, until_due);
  }

  const IdleTuning& tuning() const { return t_; }

 private:
  IdleTuning t_;
  Instant last_work_ = Instant::from_ns(0);
  Duration sleep_ = Duration::zero();
};

}  // namespace ws::dp
