// The sleep decision of `idle: adaptive` (dataplane/idle_policy.hpp) on a virtual clock:
// a core with work never sleeps, a due timer is never slept past, a flow's next segment
// finds the core awake within microseconds (a long path's within one short nap), and an
// idle core stays under 5% of a CPU. And how the loop books its time around those sleeps
// (dataplane/loop_time.hpp).
#include "dataplane/idle_policy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "dataplane/loop_time.hpp"

namespace ws::dp {
namespace {

Instant at_us(int64_t us) { return Instant::from_ns(0) + Duration::micros(us); }

TEST(IdlePolicy, SpinsAfterWork) {
  IdlePolicy p;
  p.worked(at_us(10000));
  EXPECT_EQ(p.on_empty(at_us(10000), Instant::never()), Duration::zero());
  EXPECT_EQ(p.on_empty(at_us(10999), Instant::never()), Duration::zero());
  EXPECT_GT(p.on_empty(at_us(11000), Instant::never()), Duration::zero());
}

TEST(IdlePolicy, SleepsBrieflyWhileTrafficIsRecentThenBacksOff) {
  IdlePolicy p;
  const IdleTuning& t = p.tuning();
  p.worked(at_us(0));
  std::vector<int64_t> sleeps;
  for (int64_t now = 1000; now < 19000; now += 500) {
    sleeps.push_back(p.on_empty(at_us(now), Instant::never()).us());
  }
  EXPECT_EQ(sleeps[0], t.first_sleep.us());
  EXPECT_EQ(*std::max_element(sleeps.begin(), sleeps.end()), t.recent_max_sleep.us());
  int64_t last = 0;
  for (int i = 0; i < 20; ++i) last = p.on_empty(at_us(21000 + i), Instant::never()).us();
  EXPECT_EQ(last, t.awaited_max_sleep.us()) << "a long path's round trip after work";
  for (int i = 0; i < 20; ++i) last = p.on_empty(at_us(251000 + i), Instant::never()).us();
  EXPECT_EQ(last, t.max_sleep.us());
}

TEST(IdlePolicy, NeverSleepsPastTheNextDueTime) {
  IdlePolicy p;
  p.worked(at_us(0));
  for (int i = 0; i < 20; ++i) p.on_empty(at_us(30000 + i), Instant::never());
  EXPECT_EQ(p.on_empty(at_us(40000), at_us(40007)), Duration::micros(7));
  // Due sooner than a wakeup costs, or already due: poll for it.
  EXPECT_EQ(p.on_empty(at_us(40000), at_us(40002)), Duration::zero());
  EXPECT_EQ(p.on_empty(at_us(40000), at_us(39000)), Duration::zero());
}

// A receiver's core on a virtual clock: flights of 40 segments 10 us apart every
// `period`, each poll costing `poll_cost` and each wakeup `wake_cost`. Returns the worst
// wait from a segment's arrival to the poll that takes it, and fills the share of time
// the core was busy (spinning, polling or waking).
struct SimResult {
  Duration worst_wait;
  double busy_share = 0;
};

SimResult simulate(Duration period, Duration run_for, bool traffic, IdleTuning tuning = {}) {
  const Duration poll_cost = Duration::nanos(200), wake_cost = Duration::micros(2);
  IdlePolicy p(tuning);
  Instant now = at_us(0);
  const Instant end = now + run_for;
  Instant next_flight = traffic ? at_us(100) : Instant::never();
  int left = 0;
  Instant next_seg = Instant::never();
  Duration busy, worst;
  while (now < end) {
    if (left == 0 && now >= next_flight) {
      left = 40;
      next_seg = next_flight;
      next_flight = next_flight + period;
    }
    now += poll_cost;
    busy += poll_cost;
    if (left > 0 && now >= next_seg) {  // this poll takes the segment
      worst = std::max(worst, now - next_seg);
      --left;
      next_seg = next_seg + Duration::micros(10);
      p.worked(now);
      continue;
    }
    const Duration d = p.on_empty(now, Instant::never());  // no timers: arrivals only
    if (d == Duration::zero()) continue;                   // spinning: busy
    now += d + wake_cost;
    busy += wake_cost;
  }
  return {worst, busy.secs() / run_for.secs()};
}

TEST(IdlePolicy, AFlowsNextFlightFindsTheCoreAwake) {
  // One flight per 2 ms round trip (the relay's 1 ms delay) and per 12 ms.
  for (int64_t period_ms : {2, 12}) {
    SimResult r = simulate(Duration::millis(period_ms), Duration::millis(500), true);
    EXPECT_LE(r.worst_wait, IdleTuning{}.recent_max_sleep + Duration::micros(3))
        << "period " << period_ms << " ms";
  }
  // The check can fail: a plain backoff to max_sleep (no short sleeps after traffic)
  // leaves a flight waiting for hundreds of microseconds.
  IdleTuning plain;
  plain.recent = Duration::zero();
  plain.awaited = Duration::zero();
  plain.spin = Duration::micros(300);
  EXPECT_GT(simulate(Duration::millis(2), Duration::millis(500), true, plain).worst_wait,
            Duration::micros(200));
}

TEST(IdlePolicy, ALongPathsNextFlightWaitsAtMostANap) {
  // One flight per 41 ms round trip (the relay's 20 ms delay): the core's last work is
  // more than `recent` old when the next flight's first segment arrives.
  SimResult r = simulate(Duration::millis(41), Duration::millis(800), true);
  EXPECT_LE(r.worst_wait, IdleTuning{}.awaited_max_sleep + Duration::micros(3));
  // The check can fail: without the middle tier the core sleeps up to max_sleep.
  IdleTuning two_tiers;
  two_tiers.awaited = Duration::zero();
  EXPECT_GT(simulate(Duration::millis(41), Duration::millis(800), true, two_tiers).worst_wait,
            Duration::micros(500));
}

TEST(IdlePolicy, AnIdleCoreStaysUnderFivePercent) {
  SimResult r = simulate(Duration::millis(1), Duration::seconds(2), false);
  EXPECT_LT(r.busy_share, 0.05) << r.busy_share;
}

// A core sleeps 1 ms, wakes to find a ping, answers it in 40 µs, then sleeps again: the
// sleep is booked idle and only the answer busy. Booked to the iteration that read the
// clock after it (the one that found the ping), the sleep made a sparse ping cost 320-500
// µs of busy time on a real core.
TEST(LoopTime, ASleepIsIdleAndTheWorkAfterItBusy) {
  LoopTime t;
  uint64_t busy = 0, idle = 0;
  t.last = at_us(0);
  t.book(at_us(0), busy, idle);  // the first iteration: finds nothing, sleeps 1 ms
  t.worked = false;
  t.book(at_us(1000), busy, idle);  // after the sleep: finds the ping, answers it
  t.worked = true;
  t.book(at_us(1040), busy, idle);  // finds nothing, sleeps
  t.worked = false;
  t.book(at_us(2040), busy, idle);
  EXPECT_EQ(busy, 40'000u);
  EXPECT_EQ(idle, 2'000'000u);
}

}  // namespace
}  // namespace ws::dp
