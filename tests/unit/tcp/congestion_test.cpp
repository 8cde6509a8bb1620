#include <gtest/gtest.h>

#include <cmath>

#include "stack/tcp/congestion/cubic.hpp"
#include "stack/tcp/congestion/newreno.hpp"

namespace ws::tcp {
namespace {

TEST(Congestion, InitialWindowIsIw10) {
  NewReno r;
  r.init(1448);
  EXPECT_EQ(r.cwnd(), 14480u);  // RFC 6928: min(10*MSS, max(2*MSS, 14600))
  r.init(1000);
  EXPECT_EQ(r.cwnd(), 10000u);
  r.init(536);
  EXPECT_EQ(r.cwnd(), 5360u);
  r.init(8948);
  EXPECT_EQ(r.cwnd(), 17896u);
}

// A stretch ACK (one ACK for a whole flight, as from a receiver with GRO or a slow
// reader) grows the window by all it covers, as Linux's slow start does, not by the
// 2*SMSS per ACK of RFC 3465; the part beyond ssthresh counts as congestion avoidance.
TEST(Congestion, SlowStartCountsStretchAcks) {
  NewReno r;
  r.init(1000);
  Instant t;
  r.on_ack(10000, 10000, t, Duration::millis(10));
  EXPECT_EQ(r.cwnd(), 20000u);  // doubled by one ACK of the whole flight
  Cubic c;
  c.init(1000);
  c.on_ack(20000, 10000, t, Duration::millis(10));
  EXPECT_EQ(c.cwnd(), 30000u);
  c.on_loss(30000, t);  // ssthresh 21000, cwnd 21000
  c.set_cwnd(15000);    // below ssthresh again (as after a timeout's restart)
  c.on_ack(20000, 15000, t, Duration::millis(10));
  EXPECT_GE(c.cwnd(), 21000u);          // slow start stopped at ssthresh...
  EXPECT_LE(c.cwnd(), 21000u * 3 / 2);  // ...and the rest grew it as CUBIC allows
}

TEST(Congestion, NewRenoHalvesAndGrowsLinearly) {
  NewReno r;
  r.init(1000);
  Instant t;
  r.set_cwnd(20000);
  r.on_loss(20000, t);
  EXPECT_EQ(r.ssthresh(), 10000u);
  EXPECT_EQ(r.cwnd(), 10000u);
  for (int i = 0; i < 10; ++i) r.on_ack(1000, 10000, t, Duration::millis(10));
  EXPECT_EQ(r.cwnd(), 11000u);  // one MSS per window acked
  r.on_rto(11000, t);
  EXPECT_EQ(r.cwnd(), 1000u);
}

// Under heavy loss with SACK, SND.MAX - SND.UNA counts the data delivered beyond the
// holes too, and can be many times cwnd: a loss must still reduce from cwnd (at 5 % loss
// and 1 ms, reducing from FlightSize kept the window where it was: 266 Mbit/s in the
// simulator's recovery matrix against 19 reducing from cwnd).
TEST(Congestion, ALossNeverRaisesTheWindow) {
  Instant t = Instant::from_ns(1'000'000'000);
  NewReno r;
  r.init(1000);
  r.set_cwnd(10000);
  r.on_loss(100000, t);
  EXPECT_EQ(r.cwnd(), 5000u);
  Cubic c;
  c.init(1000);
  c.set_cwnd(10000);
  c.on_loss(100000, t);
  EXPECT_EQ(c.ssthresh(), 7000u);
  EXPECT_EQ(c.cwnd(), 7000u);
  // CUBIC reduces from cwnd also when less was in flight (RFC 9438 section 4.6, as Linux):
  // the connection keeps cwnd from growing beyond what the sender used (Tcb::cwnd_in_use,
  // sim test CwndValidation). NewReno reduces from FlightSize (RFC 5681 eq. 4).
  c.set_cwnd(10000);
  c.on_loss(4000, t);
  EXPECT_EQ(c.cwnd(), 7000u);
  r.set_cwnd(10000);
  r.on_loss(4000, t);
  EXPECT_EQ(r.cwnd(), 2000u);
}

TEST(Congestion, CubicReducesBy30PercentAndRegrowsToWmax) {
  Cubic c;
  c.init(1000);
  Instant t = Instant::from_ns(1'000'000'000);
  c.set_cwnd(100'000);
  c.on_loss(100'000, t);
  EXPECT_EQ(c.cwnd(), 70'000u);  // beta = 0.7 (RFC 9438 section 4.6)
  EXPECT_DOUBLE_EQ(c.w_max(), 100.0);
  // K = cbrt(W_max * (1 - beta) / C) = cbrt(75) s.
  c.on_ack(1000, 70'000, t, Duration::millis(10));
  EXPECT_NEAR(c.k(), std::cbrt(75.0), 1e-9);
  EXPECT_NEAR(c.w_cubic(c.k()), 100.0, 1e-9);
  // Grows back to about W_max after K seconds of ACKs.
  // At a 100 ms RTT the cubic curve, not the Reno-friendly estimate, governs.
  for (int ms = 0; ms < 4200; ms += 100) {
    Instant now = t + Duration::millis(ms);
    for (int k = 0; k < static_cast<int>(c.cwnd() / 1000); ++k)
      c.on_ack(1000, c.cwnd(), now, Duration::millis(100));
  }
  EXPECT_GT(c.cwnd(), 95'000u);
  EXPECT_LT(c.cwnd(), 130'000u);
}

TEST(Congestion, CubicFastConvergence) {
  Cubic c;
  c.init(1000);
  Instant t;
  c.set_cwnd(100'000);
  c.on_loss(100'000, t);
  c.on_loss(70'000, t);  // before regaining W_max: W_max = cwnd * (1 + beta) / 2
  EXPECT_NEAR(c.w_max(), 70.0 * 1.7 / 2, 1e-9);
}

}  // namespace
}  // namespace ws::tcp
