// TIME_WAIT's own timers: the 2 MSL deadline, and the retry of an ACK that found no
// transmit buffer (the data plane's pool or TX queue was full when the peer's FIN came);
// and TIME_WAIT kept as a record once the last ACK is out (time_wait.hpp).
#include "stack/tcp/time_wait.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <vector>

#include "stack/tcp/isn.hpp"
#include "stack/wire/tcp.hpp"
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

// B closes when A's FIN arrives; A's FIN is out, B's ACK and FIN are queued for A.
tcp::Connection* close_from_a(Pair& p) {
  tcp::ListenCallbacks l;
  l.on_accept = [](tcp::Connection& c) {
    tcp::ConnCallbacks cb;
    cb.on_peer_closed = [](tcp::Connection& c) { c.close(); };
    c.set_callbacks(std::move(cb));
    return true;
  };
  EXPECT_TRUE(p.b.listen(kPort, std::move(l)));
  tcp::Connection* a = p.a.connect({kAddrB, kPort}, tcp::ConnCallbacks{}, 0, p.now);
  EXPECT_NE(a, nullptr);
  p.settle();
  EXPECT_EQ(in_state(p.a, tcp::TcpState::kEstablished), 1u);
  a->close();
  p.a.poll(p.now);
  deliver(p.to_b, p.b, p.wa, p.now);
  return a;
}

struct Seen {
  SeqNum seq, ack;
  uint8_t flags = 0;
  wire::TcpOptions opts;
};
Seen seen(const WireSegment& w) {
  Seen s;
  auto v = wire::TcpView::parse(w.bytes);
  EXPECT_TRUE(v.has_value());
  if (!v) return s;
  s.seq = v->seq();
  s.ack = v->ack();
  s.flags = v->flags();
  EXPECT_TRUE(v->parse_options(s.opts));
  return s;
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
  // A's FIN to B; B answers with its ACK and FIN, which reach A while A has no buffer.
  close_from_a(p);
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

// The record table alone: found by tuple, in deadline order, removed from anywhere, and a
// record whose wait starts over goes last.
TEST(TimeWaitTable, DeadlineOrderAndRemovalFromAnywhere) {
  tcp::TimeWaitTable tw({1, 2, 3, 4});
  const tcp::TupleHash hash({1, 2, 3, 4});
  auto tuple = [](uint16_t port) { return tcp::FourTuple{kAddrA, kAddrB, port, 80}; };
  const Instant t0 = Instant::from_ns(1'000'000'000);
  std::vector<tcp::TimeWaitRecord*> r;
  for (uint16_t p = 1; p <= 700; ++p)  // more than a chunk
    r.push_back(&tw.add(tuple(p), hash(tuple(p)), t0 + Duration::millis(p)));
  EXPECT_EQ(tw.size(), 700u);
  EXPECT_EQ(tw.find(tuple(350)), r[349]);
  EXPECT_EQ(tw.find(tuple(701)), nullptr);
  EXPECT_EQ(tw.oldest(), r[0]);
  tw.remove(*r[349]);
  tw.remove(*r[0]);
  EXPECT_EQ(tw.find(tuple(350)), nullptr);
  EXPECT_EQ(tw.oldest(), r[1]);
  EXPECT_EQ(tw.next_deadline(), t0 + Duration::millis(2));
  tw.restart(*r[1], t0 + Duration::seconds(5));
  EXPECT_EQ(tw.oldest(), r[2]);
  // The order walked from the oldest: 3..349, 351..700, then 2.
  std::vector<uint16_t> ports;
  for (tcp::TimeWaitRecord* x = tw.oldest(); x != nullptr; x = x->next) ports.push_back(x->t.lport);
  ASSERT_EQ(ports.size(), 698u);
  EXPECT_EQ(ports.front(), 3);
  EXPECT_EQ(ports[346], 349);
  EXPECT_EQ(ports[347], 351);
  EXPECT_EQ(ports.back(), 2);
  // A freed record is the next one used.
  tcp::TimeWaitRecord* freed = r[699];
  tw.remove(*freed);
  EXPECT_EQ(&tw.add(tuple(9000), hash(tuple(9000)), t0), freed);
  EXPECT_EQ(tw.find(tuple(9000)), freed);
}

// Once its ACK of B's FIN is out, A's TIME_WAIT is a record and its Tcb slot is free. B's
// FIN again (as if that ACK was lost) gets the same ACK from the record, timestamps
// included (RFC 9293 3.10.7.4), and the 2 MSL start over from it.
TEST(TimeWait, RecordAnswersAFinAgainAndWaitsAgain) {
  tcp::TcpConfig ca = bench_config(1);
  ca.time_wait = Duration::millis(1000);
  Pair p(ca);
  close_from_a(p);
  ASSERT_FALSE(p.to_a.empty());
  const WireSegment fin = *p.to_a.back();
  ASSERT_TRUE(seen(fin).flags & wire::tcpflag::kFin);
  deliver(p.to_a, p.a, p.wb, p.now);
  const tcp::TcpTableSizes z = p.a.table_sizes();
  EXPECT_EQ(z.time_wait, 1u);
  EXPECT_EQ(z.connections, 0u);
  EXPECT_EQ(z.free_slots, z.slots);
  EXPECT_EQ(in_state(p.a, tcp::TcpState::kTimeWait), 1u);
  ASSERT_EQ(p.to_b.size(), 1u);
  const Seen first = seen(*p.to_b.front());
  p.settle();
  ASSERT_EQ(p.b.connection_count(), 0u);

  p.now += Duration::millis(600);
  p.a.poll(p.now);
  p.a.input(fin.src, fin.dst, fin.bytes, true, p.now);
  ASSERT_EQ(p.to_b.size(), 1u);
  const Seen again = seen(*p.to_b.front());
  EXPECT_EQ(again.flags, wire::tcpflag::kAck);
  EXPECT_EQ(again.seq, first.seq);
  EXPECT_EQ(again.ack, first.ack);
  ASSERT_TRUE(again.opts.ts_val && first.opts.ts_val);
  EXPECT_EQ(*again.opts.ts_val - *first.opts.ts_val, 600u);  // a 1 ms clock
  EXPECT_EQ(again.opts.ts_ecr, first.opts.ts_ecr);
  p.wa.recycle(p.to_b.front());
  p.to_b.clear();
  // 1.2 s after the first FIN, 0.6 s after the second: still waiting.
  p.now += Duration::millis(600);
  p.a.poll(p.now);
  EXPECT_EQ(p.a.table_sizes().time_wait, 1u);
  p.now += Duration::millis(401);
  p.a.poll(p.now);
  EXPECT_EQ(p.a.table_sizes().time_wait, 0u);
  EXPECT_EQ(in_state(p.a, tcp::TcpState::kTimeWait), 0u);
  EXPECT_EQ(p.a.connection_count(), 0u);
}

// A segment to the record other than the FIN again: a RST is dropped (RFC 1337), data
// outside the closed window gets an ACK, an old timestamp is rejected (PAWS) with an ACK,
// and a bare ACK at the next sequence number gets nothing.
TEST(TimeWait, RecordAnswersWhatTheStateSays) {
  tcp::TcpConfig ca = bench_config(1);
  ca.time_wait = Duration::millis(1000);
  Pair p(ca);
  close_from_a(p);
  const WireSegment fin = *p.to_a.back();
  deliver(p.to_a, p.a, p.wb, p.now);
  ASSERT_EQ(p.a.table_sizes().time_wait, 1u);
  for (WireSegment* w : p.to_b) p.wa.recycle(w);
  p.to_b.clear();
  const Seen f = seen(fin);
  auto send = [&](uint8_t flags, SeqNum seq, uint32_t ts_val, size_t len) {
    wire::TcpRepr r;
    r.src_port = kPort;
    r.dst_port = static_cast<uint16_t>(load_be16(fin.bytes.data() + 2));
    r.seq = seq;
    r.ack = f.ack;
    r.flags = flags;
    r.window = 1000;
    r.ts_val = ts_val;
    r.ts_ecr = f.opts.ts_ecr;
    std::vector<uint8_t> b(r.header_len() + len, 0x61);
    wire::emit_tcp(b.data(), r);
    p.a.input(fin.src, fin.dst, b, true, p.now);
  };
  const SeqNum next = f.seq + 1;
  const uint32_t ts = *f.opts.ts_val + 10;
  const uint64_t rst_drops = p.da.get(DropReason::kTcpTimeWaitRst);
  send(wire::tcpflag::kRst | wire::tcpflag::kAck, next, ts, 0);
  EXPECT_EQ(p.da.get(DropReason::kTcpTimeWaitRst), rst_drops + 1);
  EXPECT_TRUE(p.to_b.empty());
  send(wire::tcpflag::kAck, next, ts, 0);
  EXPECT_TRUE(p.to_b.empty());
  const uint64_t oow = p.da.get(DropReason::kTcpOutOfWindow);
  send(wire::tcpflag::kAck | wire::tcpflag::kPsh, next, ts, 100);
  EXPECT_EQ(p.da.get(DropReason::kTcpOutOfWindow), oow + 1);
  ASSERT_EQ(p.to_b.size(), 1u);
  EXPECT_EQ(seen(*p.to_b.front()).ack, next);
  const uint64_t paws = p.da.get(DropReason::kTcpPawsRejected);
  send(wire::tcpflag::kAck, next, *f.opts.ts_val - 100, 0);
  EXPECT_EQ(p.da.get(DropReason::kTcpPawsRejected), paws + 1);
  EXPECT_EQ(p.to_b.size(), 2u);
  EXPECT_EQ(p.a.table_sizes().time_wait, 1u);  // none of these ended it
}

// B closes first and keeps TIME_WAIT as a record; A opens again from the same port, with a
// newer timestamp: the SYN takes the record over (RFC 6191), and B's SYN,ACK carries the
// ISN a fresh hash of the tuple gives (RFC 6528), taken from the record's F.
TEST(TimeWait, SynTakingARecordOverGetsTheTuplesIsn) {
  tcp::TcpConfig cb = bench_config(2);
  cb.time_wait = Duration::seconds(60);
  Pair p(bench_config(1), cb);
  tcp::Connection* served = nullptr;
  tcp::ListenCallbacks l;
  l.on_accept = [&served](tcp::Connection& c) {
    served = &c;
    return true;
  };
  ASSERT_TRUE(p.b.listen(kPort, std::move(l)));
  constexpr uint16_t kClientPort = 40000;
  tcp::ConnCallbacks ca;
  ca.on_peer_closed = [](tcp::Connection& c) { c.close(); };
  ASSERT_NE(p.a.connect({kAddrB, kPort}, std::move(ca), kClientPort, p.now), nullptr);
  p.settle();
  ASSERT_NE(served, nullptr);
  served->close();
  p.settle();
  ASSERT_EQ(p.b.table_sizes().time_wait, 1u);
  ASSERT_EQ(p.a.connection_count(), 0u);

  p.now += Duration::millis(10);
  ASSERT_NE(p.a.connect({kAddrB, kPort}, tcp::ConnCallbacks{}, kClientPort, p.now), nullptr);
  deliver(p.to_b, p.b, p.wa, p.now);
  EXPECT_EQ(p.b.counters().time_wait_reused, 1u);
  EXPECT_EQ(p.b.table_sizes().time_wait, 0u);
  ASSERT_EQ(p.to_a.size(), 1u);
  const Seen syn_ack = seen(*p.to_a.front());
  ASSERT_EQ(syn_ack.flags, wire::tcpflag::kSyn | wire::tcpflag::kAck);
  const tcp::IsnGenerator fresh(cb.isn_secret);
  EXPECT_EQ(syn_ack.seq.raw(), fresh.initial({kAddrB, kPort}, {kAddrA, kClientPort}, p.now).isn);
  p.settle();
  EXPECT_EQ(in_state(p.b, tcp::TcpState::kEstablished), 1u);
}

}  // namespace
}  // namespace ws::test
