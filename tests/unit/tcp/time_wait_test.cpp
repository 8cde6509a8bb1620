// TIME_WAIT's own timers: the 2 MSL deadline, and the retry of an ACK that found no
// transmit buffer (the data plane's pool or TX queue was full when the peer's FIN came).
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>

#include "tests/support/tcp_pair.hpp"

namespace ws::test {
namespace {

constexpr uint16_t kPort = 7;

// The segments queued for `to` so far, and no more (Pair::settle runs both ways until quiet).
void deliver(std::deque<WireSegment*>& q, tcp::TcpStack& to, Wire& from, Instant now) {
  while (!q.empty()) {
    WireSegment* s = q.front();
    q.pop_front();
    to.input(s->src, s->dst, s->bytes, true, now);
    from.recycle(s);
  }
}

size_t in_state(const tcp::TcpStack& s, tcp::TcpState st) {
  return s.counters().state[static_cast<size_t>(st)];
}

// B closes when A does; A's ACK of B's FIN finds no buffer. A is in TIME_WAIT with the
// ACK owed: the retry must send it, B must leave LAST_ACK without retransmitting its FIN,
// and A's poll must come back with a deadline in the future: a deadline that TIME_WAIT's
// timer handler left due was pushed and popped again, forever, once an older entry of the
// connection came due.
TEST(TimeWait, AckThatFoundNoBufferIsRetried) {
  tcp::TcpConfig ca = bench_config(1);
  ca.time_wait = Duration::millis(1000);
  Pair p(ca);
  tcp::ListenCallbacks l;
  l.on_accept = [](tcp::Connection& c) {
    tcp::ConnCallbacks cb;
    cb.on_peer_closed = [](tcp::Connection& c) { c.close(); };
    c.set_callbacks(std::move(cb));
    return true;
  };
  ASSERT_TRUE(p.b.listen(kPort, std::move(l)));
  tcp::Connection* a = p.a.connect({kAddrB, kPort}, tcp::ConnCallbacks{}, 0, p.now);
  ASSERT_NE(a, nullptr);
  p.settle();
  ASSERT_EQ(in_state(p.a, tcp::TcpState::kEstablished), 1u);
  a->close();
  p.a.poll(p.now);
  // A's FIN to B; B answers with its ACK and FIN, which reach A while A has no buffer.
  deliver(p.to_b, p.b, p.wa, p.now);
  ASSERT_EQ(in_state(p.b, tcp::TcpState::kLastAck), 1u);
  p.wa.fail_begin = true;
  deliver(p.to_a, p.a, p.wb, p.now);
  ASSERT_EQ(in_state(p.a, tcp::TcpState::kTimeWait), 1u);
  EXPECT_TRUE(p.to_b.empty());  // the ACK found no buffer
  p.wa.fail_begin = false;
  // Past the retry and past the probe and retransmission deadlines A's FIN left in the
  // timer queue (stale entries that still pop), within TIME_WAIT and B's FIN timeout.
  p.now += Duration::millis(300);
  const Instant next = p.a.poll(p.now);
  EXPECT_GT(next, p.now);
  EXPECT_EQ(p.to_b.size(), 1u);  // the ACK, retried
  p.settle();
  EXPECT_EQ(in_state(p.b, tcp::TcpState::kLastAck), 0u);
  EXPECT_EQ(p.b.counters().retransmits, 0u);
  EXPECT_EQ(in_state(p.a, tcp::TcpState::kTimeWait), 1u);
}

}  // namespace
}  // namespace ws::test
