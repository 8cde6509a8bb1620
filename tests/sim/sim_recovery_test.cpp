// Loss recovery (stack/tcp/recovery.cpp, rack.cpp): RACK-TLP, PRR, D-SACK undo and the
// timeout, through chosen losses on the simulator's link; and a bounded part of the
// impairment matrix of tests/bench/recovery_matrix.cpp, which must finish without a
// stall and with far fewer timeouts than the duplicate-ACK recovery it replaced.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stack/tcp/tcb.hpp"
#include "tests/sim/apps.hpp"

namespace ws::sim {
namespace {

uint64_t kind(const tcp::TcpCounters& c, tcp::RecoveryKind k) {
  return c.recovery[static_cast<size_t>(k)];
}

// A 1 MB transfer from A to B over 5 ms links; `drop` decides, per data segment A
// sends (its sequence number relative to the first byte, and how many times that
// sequence number was sent before), whether the link loses it.
struct LossRun {
  using Drop = std::function<bool(uint32_t rel, int sent_before, const wire::TcpView&)>;
  explicit LossRun(Drop d, uint64_t bytes = 1'000'000, tcp::TcpConfig ca = default_config(1),
                   tcp::TcpConfig cb = default_config(2))
      : n(LinkParams{}, LinkParams{}, 1, ca, cb), drop(std::move(d)), bytes(bytes) {
    n.tap_ab = [this](Packet& p) {
      wire::TcpView v = p.tcp();
      if (v.syn()) {
        first = v.seq() + 1;
        return true;
      }
      if (v.payload().empty() && !v.fin()) return true;
      uint32_t rel = static_cast<uint32_t>(v.seq() - first);
      int& k = sends[rel];
      bool lose = drop(rel, k, v);
      ++k;
      if (lose) ++dropped;
      return !lose;
    };
  }
  // Runs the transfer to its last byte; `each` runs after every simulator step.
  bool go(const std::function<void()>& each = {}, Duration limit = Duration::seconds(60)) {
    t0 = n.now;
    pr.start(n, bytes, 0, 3);
    const Instant end = n.now + limit;
    while (pr.server.received < bytes && n.now < end) {
      n.step(end);
      if (each) each();
    }
    secs = (n.now - t0).secs();
    return pr.server.received == bytes && pr.server.bad_bytes == 0;
  }
  tcp::Tcb& sender() { return *static_cast<tcp::Tcb*>(pr.client.c); }
  Net n;
  Drop drop;
  uint64_t bytes;
  Pair pr;
  SeqNum first;
  std::map<uint32_t, int> sends;
  uint64_t dropped = 0;
  Instant t0;
  double secs = 0;
};

// The last segment of the transfer is lost: the tail loss probe repairs it, with no
// timeout (RFC 8985 section 7).
TEST(Recovery, TailLossRepairedByProbeNotTimeout) {
  LossRun r([](uint32_t, int before, const wire::TcpView& v) { return v.fin() && before == 0; },
            100'000);
  ASSERT_TRUE(r.go());
  auto c = r.n.a.counters();
  EXPECT_EQ(r.dropped, 1u);
  EXPECT_EQ(c.rto_fired, 0u);
  EXPECT_GE(kind(c, tcp::RecoveryKind::kTlp), 1u);
  // A lone outstanding segment's probe waits for a delayed ACK, at most until the
  // timeout would have fired (200 ms minimum); then one round trip.
  EXPECT_LT(r.secs, 0.3) << r.secs;
}

// A receive window large enough that the sender keeps sending new data while a hole
// is open (the autotuned one closes behind the hole, and then only the timer is left).
tcp::TcpConfig big_receiver() {
  auto c = default_config(2);
  c.recv_buffer = 4u << 20;
  return c;
}

// A segment and its first retransmission are both lost: RACK finds the lost
// retransmission by time (segments sent after it are SACKed) and sends it again.
TEST(Recovery, LostRetransmissionFoundWithoutTimeout) {
  const uint32_t victim = 200 * 1448;
  LossRun r(
      [&](uint32_t rel, int before, const wire::TcpView&) { return rel == victim && before < 2; },
      1'000'000, default_config(1), big_receiver());
  ASSERT_TRUE(r.go());
  auto c = r.n.a.counters();
  EXPECT_EQ(r.dropped, 2u);
  EXPECT_EQ(r.sends[victim], 3);
  EXPECT_EQ(c.rto_fired, 0u);
  EXPECT_EQ(kind(c, tcp::RecoveryKind::kRack), 1u);
}

// Every other segment of a stretch of 200 is lost (100 holes in one window): one
// recovery repairs them all, without a timeout, and PRR leaves cwnd at ssthresh.
TEST(Recovery, HundredHolesInOneWindow) {
  LossRun r(
      [](uint32_t rel, int before, const wire::TcpView&) {
        uint32_t k = rel / 1448;
        return before == 0 && rel % 1448 == 0 && k >= 300 && k < 500 && k % 2 == 0;
      },
      3'000'000, default_config(1), big_receiver());
  ASSERT_TRUE(r.go());
  auto c = r.n.a.counters();
  EXPECT_EQ(r.dropped, 100u);
  EXPECT_EQ(c.rto_fired, 0u);
  EXPECT_EQ(kind(c, tcp::RecoveryKind::kRack), 1u);
  EXPECT_EQ(c.retransmits, 100u) << "each hole resent once, nothing else";
}

// One segment lost in a fast flow: the segments behind the hole arrive out of order for
// a round trip. The receiver does not ACK each of them (Linux compresses these SACK ACKs
// too): the first three duplicate ACKs and a new hole go at once, the rest are held for
// at most RTT/20. The sender still repairs the hole with one retransmission, found by
// RACK, without a timeout.
TEST(Recovery, ReceiverCompressesSackAcksBehindOneHole) {
  const uint32_t victim = 300 * 1448;
  LossRun r(
      [&](uint32_t rel, int before, const wire::TcpView&) { return rel == victim && before == 0; },
      2'000'000, default_config(1), big_receiver());
  uint64_t dupacks = 0, behind = 0;
  auto tap = r.n.tap_ab;
  r.n.tap_ab = [&](Packet& p) {
    wire::TcpView v = p.tcp();
    if (!v.syn() && !v.payload().empty() && r.sends.count(victim) && r.sends[victim] == 1 &&
        static_cast<uint32_t>(v.seq() - r.first) > victim)
      ++behind;  // sent after the loss, before the retransmission
    return tap(p);
  };
  r.n.tap_ba = [&](Packet& p) {
    wire::TcpView v = p.tcp();
    if (v.payload().empty() && v.ack() == r.first + victim) ++dupacks;
    return true;
  };
  ASSERT_TRUE(r.go());
  auto c = r.n.a.counters();
  EXPECT_EQ(r.dropped, 1u);
  EXPECT_EQ(c.rto_fired, 0u);
  EXPECT_EQ(c.retransmits, 1u);
  EXPECT_EQ(kind(c, tcp::RecoveryKind::kRack), 1u);
  EXPECT_GT(behind, 100u) << "a long run behind the hole";
  EXPECT_GE(dupacks, 3u);
  EXPECT_LT(dupacks * 4, behind) << dupacks << " duplicate ACKs for " << behind << " segments";
}

// One segment lost, and of the duplicate ACKs that follow only the first arrives: it
// SACKs one segment, too few to call the hole lost at once, so RACK's timer finds the
// loss (RFC 8985 section 6.2, Step 6) with no ACK in hand. The fast retransmit goes then,
// though the flight is larger than the ssthresh the recovery has just set (RFC 6675
// section 5 (4.2)): no ACK may come to release it, as here, where every later ACK that
// still names the hole is lost. Held back, it would wait for the timeout.
TEST(Recovery, FastRetransmitWhenRackTimerFindsTheLoss) {
  const uint32_t victim = 300 * 1448;
  LossRun r(
      [&](uint32_t rel, int before, const wire::TcpView&) { return rel == victim && before == 0; },
      2'000'000, default_config(1), big_receiver());
  uint64_t dupacks = 0, resent_at_recovery = 0;
  r.n.tap_ba = [&](Packet& p) {
    wire::TcpView v = p.tcp();
    // A duplicate ACK carries SACK blocks beyond the timestamps (the ACK of the data
    // before the hole names it too, without blocks).
    const bool sack = v.header_len() > wire::TcpView::kMinHeaderLen + 12;
    if (v.ack() != r.first + victim || !sack) return true;
    return ++dupacks == 1;  // the first duplicate ACK only
  };
  ASSERT_TRUE(r.go([&] {
    // The retransmission is out by the time the recovery is counted.
    if (kind(r.n.a.counters(), tcp::RecoveryKind::kRack) == 1 && resent_at_recovery == 0)
      resent_at_recovery = static_cast<uint64_t>(r.sends[victim]);
  }));
  auto c = r.n.a.counters();
  EXPECT_GT(dupacks, 3u) << "the later duplicate ACKs were there to lose";
  EXPECT_EQ(kind(c, tcp::RecoveryKind::kRack), 1u);
  EXPECT_EQ(resent_at_recovery, 2u) << "the original and the retransmission, at once";
  EXPECT_EQ(c.rto_fired, 0u);
  EXPECT_EQ(c.retransmits, 1u);
}

// Without timestamps (no Eifel): one segment held back beyond the reordering window is
// retransmitted needlessly; the receiver's D-SACK undoes the reduction (RFC 2883).
TEST(Recovery, DsackUndoesSpuriousRecovery) {
  auto ca = default_config(1), cb = default_config(2);
  ca.timestamps = cb.timestamps = false;
  std::optional<Packet> held;
  Instant release;
  const uint32_t victim = 300 * 1460;  // no timestamp option: 1460-byte segments
  LossRun r(
      [&](uint32_t rel, int before, const wire::TcpView&) { return rel == victim && before == 0; },
      2'000'000, ca, cb);
  // The "lost" original is delivered 30 ms late instead.
  auto tap = r.n.tap_ab;
  r.n.tap_ab = [&](Packet& p) {
    if (tap(p)) return true;
    held = p;
    release = r.n.now + Duration::millis(30);
    return false;
  };
  ASSERT_TRUE(r.go([&] {
    if (held && r.n.now >= release) {
      r.n.link_ab.send(std::move(*held), r.n.now);
      held.reset();
    }
  }));
  auto c = r.n.a.counters();
  EXPECT_EQ(c.rto_fired, 0u);
  EXPECT_EQ(kind(c, tcp::RecoveryKind::kRack), 1u);
  EXPECT_EQ(kind(c, tcp::RecoveryKind::kSpurious), 1u);
  EXPECT_GT(r.sender().rack.reo_wnd_mult, 1u) << "the reordering window widened";
}

// Without timestamps: a delay spike holds everything A sends from 50 ms until the
// retransmission timer fires, then lets it through, except the first held segment, which
// is lost (so no D-SACK of the timeout's retransmission can tell). F-RTO (RFC 5682) sees
// the ACKs of the held segments after its two new ones, declares the timeout spurious and
// undoes it: the window is not resent.
TEST(Recovery, FrtoUndoesSpuriousTimeout) {
  auto ca = default_config(1), cb = default_config(2);
  ca.timestamps = cb.timestamps = false;
  std::vector<Packet> held;
  LossRun r([](uint32_t, int, const wire::TcpView&) { return false; }, 2'000'000, ca, cb);
  auto tap = r.n.tap_ab;
  r.n.tap_ab = [&](Packet& p) {
    if (!tap(p)) return false;
    bool spike = r.n.now - r.t0 >= Duration::millis(50) && r.n.a.counters().rto_fired == 0;
    if (!spike || p.tcp().payload().empty()) return true;
    held.push_back(p);
    return false;
  };
  ASSERT_TRUE(r.go([&] {
    if (r.n.a.counters().rto_fired > 0 && !held.empty()) {
      for (size_t i = 1; i < held.size(); ++i) r.n.link_ab.send(std::move(held[i]), r.n.now);
      held.clear();
    }
  }));
  auto c = r.n.a.counters();
  EXPECT_EQ(c.rto_fired, 1u);
  EXPECT_EQ(kind(c, tcp::RecoveryKind::kSpurious), 1u);
  EXPECT_LE(c.retransmits, 3u) << "the probe and the timeout's first segment, not the window";
}

// The timer across a blackout of A's sending direction (everything lost for 1.75 s):
// each expiry doubles it from at least rto_min (RFC 6298 5.5), the probe before the
// first one counts as a TLP, and once the path is back the transfer completes.
TEST(Recovery, TimeoutBacksOffAcrossBlackout) {
  LossRun* self = nullptr;
  LossRun r([&](uint32_t, int, const wire::TcpView&) {
    Duration t = self->n.now - self->t0;
    return t >= Duration::millis(50) && t < Duration::millis(1800);
  });
  self = &r;
  // A step polls the stacks at the time it starts, then moves the clock to the next
  // event: an expiry counted after a step happened at the step's start.
  std::vector<Instant> fired;
  Instant before = r.n.now;
  ASSERT_TRUE(r.go([&] {
    if (r.n.a.counters().rto_fired > fired.size()) fired.push_back(before);
    before = r.n.now;
  }));
  auto c = r.n.a.counters();
  // A probe, then four expiries, each gap twice the one before (2, 4 and 8 times the
  // RTO of SRTT + rto_min): three inside the blackout, and the fourth after it gets
  // through. No backoff beyond doubling.
  ASSERT_EQ(c.rto_fired, 4u);
  ASSERT_EQ(fired.size(), 4u);
  const Duration first = fired[1] - fired[0];
  EXPECT_GE(first, r.n.a.config().rto_min * 2);
  EXPECT_EQ(fired[2] - fired[1], first * 2);
  EXPECT_EQ(fired[3] - fired[2], first * 4);
  EXPECT_GE(kind(c, tcp::RecoveryKind::kTlp), 1u);
  EXPECT_GE(r.sender().rto, r.n.a.config().rto_min);
  EXPECT_GT(r.secs, 3.0);
  EXPECT_LT(r.secs, 4.0);
}

// RFC 6298 (2.3) with rto_min in the place of the clock granularity G, as Linux sets
// it: on a 40 ms round trip the timer keeps the whole floor of slack above SRTT,
// where max(rto_min, SRTT + 4*RTTVAR) would leave it at 200 ms, 160 ms above it.
TEST(Recovery, RtoIsSrttPlusTheFloorOnALongPath) {
  LinkParams p;
  p.delay = Duration::millis(20);
  Net n(p, p, 1);
  Pair pr;
  const uint64_t bytes = 1u << 20;
  pr.start(n, bytes, 0, 1);
  ASSERT_TRUE(n.run_until([&] { return pr.server.received == bytes; }, Duration::seconds(30)));
  const auto& c = *static_cast<tcp::Tcb*>(pr.client.c);
  const Duration floor = n.a.config().rto_min;
  EXPECT_GE(c.srtt, Duration::millis(40));
  EXPECT_EQ(c.rto, c.srtt + std::max(floor, c.rttvar * 4));
  EXPECT_GE(c.rto, Duration::millis(240));
}

struct Cell {
  double loss;
  int delay_ms;
  double reorder;
  uint64_t rto_before;  // recovery_matrix before RACK-TLP (docs/benchmarks.md), per transfer
};

// A bounded part of the matrix, both directions impaired: every transfer completes,
// and timeouts are a small fraction of what the duplicate-ACK recovery needed.
TEST(Recovery, MatrixSubsetNoStallFewTimeouts) {
  const Cell cells[] = {
      {0.01, 20, 0.0, 1}, {0.05, 1, 0.10, 120}, {0.10, 20, 0.10, 565}, {0.10, 1, 0.25, 522}};
  for (const Cell& cell : cells) {
    for (uint64_t seed : {1u, 2u}) {
      LinkParams p;
      p.loss = cell.loss;
      p.reorder = cell.reorder;
      p.delay = Duration::millis(cell.delay_ms);
      Net n(p, p, seed);
      Pair pr;
      const uint64_t bytes = 4u << 20;
      pr.start(n, bytes, 0, seed);
      SCOPED_TRACE("loss " + std::to_string(cell.loss) + " delay " + std::to_string(cell.delay_ms) +
                   " reorder " + std::to_string(cell.reorder) + " seed " + std::to_string(seed));
      ASSERT_TRUE(n.run_until([&] { return pr.server.received == bytes; }, Duration::seconds(120)));
      EXPECT_EQ(pr.server.bad_bytes, 0u);
      EXPECT_LE(n.a.counters().rto_fired, cell.rto_before / 10 + 10);
    }
  }
}

// 10 % loss each way, 20 ms, no reordering: a retransmission is needless only when every
// ACK that reported its original was lost, which is rare, so reductions are almost never
// undone. The Eifel test (RFC 3522) must read the ACK of the episode's own first
// retransmission: read off the ACK of a segment resent in an earlier episode, which echoes
// that older copy's timestamp, it undid real reductions (20 of 248 here, 2 of 287 since)
// and the sender went on at a window the losses did not allow.
TEST(Recovery, RealLossesAreNotUndone) {
  uint64_t recoveries = 0, undone = 0;
  for (uint64_t seed : {1u, 2u, 3u}) {
    LinkParams p;
    p.loss = 0.10;
    p.delay = Duration::millis(20);
    Net n(p, p, seed);
    Pair pr;
    const uint64_t bytes = 4u << 20;
    pr.start(n, bytes, 0, seed);
    ASSERT_TRUE(n.run_until([&] { return pr.server.received == bytes; }, Duration::seconds(300)));
    EXPECT_EQ(pr.server.bad_bytes, 0u);
    recoveries += kind(n.a.counters(), tcp::RecoveryKind::kRack);
    undone += kind(n.a.counters(), tcp::RecoveryKind::kSpurious);
  }
  EXPECT_GT(recoveries, 100u);
  EXPECT_LE(undone * 30, recoveries) << undone << " of " << recoveries << " undone";
}

}  // namespace
}  // namespace ws::sim
