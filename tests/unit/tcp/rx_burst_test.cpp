// ACKs in a receive burst (TcpStack::begin_rx_burst .. end_rx_burst): in-order data that
// header prediction took is ACKed once, at the end of the burst; whatever needs an ACK at
// once (out-of-order data) still gets it within the burst, and so does in-order data after a
// sign of loss; a connection released inside
// the burst is not touched at its end; poll() ends a burst its caller left open; a
// flight's last odd segment is ACKed sooner than a lone one after a silence, and with its
// burst while the receive buffer grows.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "stack/core/bytes.hpp"
#include "tests/support/tcp_pair.hpp"

namespace ws::test {
namespace {

constexpr uint16_t kPort = 9;
constexpr size_t kSegments = 24;

struct Header {
  uint32_t seq = 0, ack = 0;
  uint8_t flags = 0;
  size_t payload = 0;
};

Header header(const WireSegment& s) {
  Header h;
  h.seq = load_be32(s.bytes.data() + 4);
  h.ack = load_be32(s.bytes.data() + 8);
  h.flags = s.bytes[13];
  h.payload = s.bytes.size() - size_t{static_cast<uint8_t>(s.bytes[12] >> 4)} * 4;
  return h;
}

// The sequence number after a data segment.
uint32_t end_of(const WireSegment& s) {
  const Header h = header(s);
  return h.seq + static_cast<uint32_t>(h.payload);
}

tcp::TcpConfig sender_config() {
  tcp::TcpConfig c = bench_config(1);
  c.send_buffer = 4 << 20;  // the whole transfer fits: no on_writable needed
  return c;
}

// A fixed receive buffer unless `autotune`: while an autotuned one grows, each in-order
// segment is ACKed (tcp_input.cpp, ack_in_order), which the tests of the delayed ACK's
// timing set aside.
tcp::TcpConfig receiver_config(bool autotune) {
  tcp::TcpConfig c = bench_config(2);
  if (!autotune) c.recv_buffer = 4 << 20;
  return c;
}

// A connection from a to b, past slow start's first rounds and quick-ACK (200 segments
// delivered), whose next kSegments full segments wait in to_b, undelivered: with nothing in
// flight and a congestion window of more than kSegments, one send() puts them all there.
struct Bulk {
  Pair p;
  tcp::Connection* client = nullptr;
  tcp::Connection* server = nullptr;
  uint64_t received = 0;
  bool abort_in_on_data = false;

  explicit Bulk(bool autotune = false) : p(sender_config(), receiver_config(autotune)) {
    tcp::ListenCallbacks l;
    l.on_accept = [this](tcp::Connection& c) {
      server = &c;
      tcp::ConnCallbacks cb;
      cb.on_data = [this](tcp::Connection& c, std::span<const uint8_t> d) {
        received += d.size();
        if (abort_in_on_data) c.abort();
        return d.size();
      };
      c.set_callbacks(std::move(cb));
      return true;
    };
    EXPECT_TRUE(p.b.listen(kPort, std::move(l)));
    client = p.a.connect({kAddrB, kPort}, {}, 0, p.now);
    EXPECT_NE(client, nullptr);
    p.settle();
    EXPECT_NE(server, nullptr);
    std::vector<uint8_t> data(200 * 1448, 0x5a);
    EXPECT_EQ(client->send(data), data.size());
    for (int i = 0; i < 100 && received < data.size(); ++i) p.tick(Duration::millis(1));
    EXPECT_EQ(received, data.size());
    p.tick(Duration::millis(100));  // delayed ACKs out, nothing in flight
    data.resize(kSegments * 1448);
    EXPECT_EQ(client->send(data), data.size());
    EXPECT_EQ(p.to_b.size(), kSegments);
    EXPECT_TRUE(p.to_a.empty());
  }
  // One segment to b, its buffer recycled.
  void deliver(WireSegment* s) {
    p.b.input(s->src, s->dst, s->bytes, true, p.now);
    p.wa.recycle(s);
  }
  // `segs` to b within one receive burst, left open for the caller to end.
  void burst_in(const std::vector<WireSegment*>& segs) {
    p.b.begin_rx_burst();
    for (WireSegment* s : segs) deliver(s);
  }
  std::vector<Header> acks_from_b() {
    std::vector<Header> v;
    while (!p.to_a.empty()) {
      v.push_back(header(*p.to_a.front()));
      p.wb.recycle(p.to_a.front());
      p.to_a.pop_front();
    }
    return v;
  }
};

// Segments queued for b, taken off the wire (at most n).
std::vector<WireSegment*> take(std::deque<WireSegment*>& q, size_t n) {
  std::vector<WireSegment*> v;
  while (!q.empty() && v.size() < n) {
    v.push_back(q.front());
    q.pop_front();
  }
  return v;
}

TEST(RxBurst, InOrderDataIsAckedOnceAtTheEndOfTheBurst) {
  Bulk t;
  auto segs = take(t.p.to_b, 8);
  ASSERT_EQ(segs.size(), 8u);
  const uint32_t end = end_of(*segs.back());
  const uint64_t predicted = t.p.b.ctr().rx_predicted;
  const uint64_t before = t.received;
  t.burst_in(segs);
  EXPECT_TRUE(t.p.to_a.empty()) << "an ACK left before the end of the burst";
  t.p.b.end_rx_burst(t.p.now);
  auto acks = t.acks_from_b();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].ack, end);
  EXPECT_EQ(acks[0].payload, 0u);
  EXPECT_EQ(t.p.b.ctr().rx_predicted, predicted + 8);
  EXPECT_EQ(t.received - before, uint64_t{end - header(*segs.front()).seq});
}

TEST(RxBurst, WithoutABurstEverySecondSegmentIsAcked) {
  Bulk t;
  auto segs = take(t.p.to_b, 8);
  ASSERT_EQ(segs.size(), 8u);
  size_t acks = 0;
  for (WireSegment* s : segs) {
    t.deliver(s);
    acks += t.acks_from_b().size();
  }
  // RFC 9293 3.8.6.3: at least one ACK per two full-sized segments.
  EXPECT_GE(acks, 4u);
}

TEST(RxBurst, OutOfOrderDataIsAckedWithinTheBurst) {
  Bulk t;
  auto segs = take(t.p.to_b, 6);
  ASSERT_EQ(segs.size(), 6u);
  WireSegment* lost = segs[2];
  const uint32_t hole = header(*lost).seq;
  t.p.b.begin_rx_burst();
  t.deliver(segs[0]);
  t.deliver(segs[1]);
  EXPECT_TRUE(t.p.to_a.empty());
  // RFC 5681 4.2: an out-of-order segment is ACKed at once, and the ACK covers the
  // in-order data held until then.
  t.deliver(segs[3]);
  auto acks = t.acks_from_b();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].ack, hole);
  t.deliver(segs[4]);
  t.deliver(segs[5]);
  EXPECT_EQ(t.acks_from_b().size(), 2u) << "the first duplicate ACKs go at once";
  // The retransmission that fills the hole is ACKed at once too.
  t.deliver(lost);
  acks = t.acks_from_b();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].ack, end_of(*segs[5]));
  t.p.b.end_rx_burst(t.p.now);
}

// For an RTO after a loss sign (data out of order), in-order data is ACKed as it
// arrives, at least every second segment, within the burst too: a sender recovering with
// a window that fits in one burst would otherwise get one ACK for all of it, and nothing
// but its timer when that ACK is lost.
TEST(RxBurst, AfterALossInOrderDataIsAckedEverySecondSegment) {
  Bulk t;
  auto segs = take(t.p.to_b, 12);
  ASSERT_EQ(segs.size(), 12u);
  const uint32_t end = end_of(*segs.back());
  t.p.b.begin_rx_burst();
  t.deliver(segs[0]);
  t.deliver(segs[2]);  // segs[1] lost: out of order, ACKed at once
  t.deliver(segs[1]);  // its retransmission fills the hole: ACKed at once
  EXPECT_EQ(t.acks_from_b().size(), 2u);
  size_t acks = 0;
  uint32_t acked = 0;
  for (size_t i = 3; i < segs.size(); ++i) {
    t.deliver(segs[i]);
    for (const Header& h : t.acks_from_b()) {
      ++acks;
      acked = h.ack;
    }
  }
  EXPECT_GE(acks, 4u) << "9 in-order segments in the burst after the loss";
  t.p.b.end_rx_burst(t.p.now);
  t.p.tick(Duration::millis(100));  // a last odd segment: its delayed ACK
  for (const Header& h : t.acks_from_b()) acked = h.ack;
  EXPECT_EQ(acked, end);
  // An RTO later, with no more loss (a segment every 100 ms: no silence as long as the
  // RTO either), the burst's one ACK again.
  std::vector<uint8_t> one(1448, 0x5a);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(t.client->send(one), one.size());
    t.p.tick(Duration::millis(100));
  }
  t.acks_from_b();
  std::vector<uint8_t> data(8 * 1448, 0x5a);
  ASSERT_EQ(t.client->send(data), data.size());
  auto more = take(t.p.to_b, 8);
  ASSERT_EQ(more.size(), 8u);
  t.burst_in(more);
  EXPECT_TRUE(t.p.to_a.empty());
  t.p.b.end_rx_burst(t.p.now);
  EXPECT_EQ(t.acks_from_b().size(), 1u);
}

// A silence longer than the RTO, then data: the sender's timer fired, so a flight or its
// ACKs were lost, and it restarts in slow start with flights that fit in one burst. They
// are ACKed every second segment, not once for the burst, as after any other loss sign.
TEST(RxBurst, AfterTheSendersTimerInOrderDataIsAckedEverySecondSegment) {
  Bulk t;
  auto segs = take(t.p.to_b, 8);
  ASSERT_EQ(segs.size(), 8u);
  t.p.now += Duration::seconds(2);  // the segments wait on the wire, unACKed
  t.burst_in(segs);
  auto acks = t.acks_from_b();
  EXPECT_GE(acks.size(), 4u) << "8 in-order segments after a silence of 2 s";
  t.p.b.end_rx_burst(t.p.now);
  uint32_t acked = 0;
  for (const Header& h : acks) acked = h.ack;
  for (const Header& h : t.acks_from_b()) acked = h.ack;
  EXPECT_EQ(acked, end_of(*segs.back()));
}

TEST(RxBurst, PollEndsABurstLeftOpen) {
  Bulk t;
  auto segs = take(t.p.to_b, 4);
  ASSERT_EQ(segs.size(), 4u);
  t.burst_in(segs);
  EXPECT_TRUE(t.p.to_a.empty());
  t.p.b.poll(t.p.now);
  auto acks = t.acks_from_b();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].ack, end_of(*segs.back()));
  // The burst is over: the next segment is ACKed (or its ACK scheduled) as without one.
  t.deliver(take(t.p.to_b, 1).at(0));
  t.deliver(take(t.p.to_b, 1).at(0));
  EXPECT_EQ(t.acks_from_b().size(), 1u);
}

TEST(RxBurst, ConnectionReleasedInTheBurstIsLeftAlone) {
  Bulk t;
  auto segs = take(t.p.to_b, 4);
  ASSERT_EQ(segs.size(), 4u);
  t.p.b.begin_rx_burst();
  t.deliver(segs[0]);  // held for the end of the burst
  t.abort_in_on_data = true;
  t.deliver(segs[1]);  // on_data aborts: a RST, and the Tcb is destroyed after the call
  auto out = t.acks_from_b();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].flags & 0x04, 0) << "RST";
  t.deliver(segs[2]);  // to no connection now: answered with a RST
  t.deliver(segs[3]);
  t.p.b.end_rx_burst(t.p.now);  // must not reach the destroyed Tcb
  EXPECT_EQ(t.p.b.connection_count(), 0u);
  for (const Header& h : t.acks_from_b()) EXPECT_NE(h.flags & 0x04, 0);
}

// The last, odd segment of a flight, in a burst of its own right behind the one before:
// its ACK waits a short while (1 ms here), not tcp.delayed_ack, since a sender whose window
// is spent waits for it. After a silence, a lone segment's ACK waits tcp.delayed_ack (40 ms
// here) for a reply to ride on.
TEST(RxBurst, AFlightsLastOddSegmentIsAckedSoon) {
  Bulk t;
  auto segs = take(t.p.to_b, 3);
  ASSERT_EQ(segs.size(), 3u);
  t.burst_in({segs[0], segs[1]});
  t.p.b.end_rx_burst(t.p.now);
  ASSERT_EQ(t.acks_from_b().size(), 1u);
  t.p.now += Duration::micros(20);
  t.burst_in({segs[2]});
  t.p.b.end_rx_burst(t.p.now);
  EXPECT_TRUE(t.acks_from_b().empty()) << "one segment: the ACK may wait";
  t.p.now += Duration::micros(900);
  t.p.b.poll(t.p.now);
  EXPECT_TRUE(t.acks_from_b().empty()) << "ACKed before 1 ms";
  t.p.now += Duration::micros(100);
  t.p.b.poll(t.p.now);
  auto acks = t.acks_from_b();
  ASSERT_EQ(acks.size(), 1u) << "not ACKed after 1 ms";
  EXPECT_EQ(acks[0].ack, end_of(*segs[2]));

  // A lone segment 50 ms later (within the RTO: no quick ACKs).
  std::vector<uint8_t> one(1448, 0x5a);
  t.p.now += Duration::millis(50);
  ASSERT_EQ(t.client->send(one), one.size());
  auto lone = take(t.p.to_b, 1);
  ASSERT_EQ(lone.size(), 1u);
  t.burst_in(lone);
  t.p.b.end_rx_burst(t.p.now);
  t.p.now += Duration::millis(39);
  t.p.b.poll(t.p.now);
  EXPECT_TRUE(t.acks_from_b().empty()) << "ACKed before tcp.delayed_ack";
  t.p.now += Duration::millis(1);
  t.p.b.poll(t.p.now);
  acks = t.acks_from_b();
  ASSERT_EQ(acks.size(), 1u) << "not ACKed after tcp.delayed_ack";
  EXPECT_EQ(acks[0].ack, end_of(*lone[0]));
}

// While the receive buffer grows (here it has just grown, after the 200 segments of the
// start), the sender is most likely in slow start: the flight's odd last segment is ACKed
// at the end of its burst, not a millisecond later as above, and a burst of in-order
// segments still draws one ACK.
TEST(RxBurst, WhileTheBufferGrowsAFlightsOddLastSegmentIsAckedWithItsBurst) {
  Bulk t(true);
  auto segs = take(t.p.to_b, 4);
  ASSERT_EQ(segs.size(), 4u);
  t.burst_in({segs[0], segs[1], segs[2]});
  EXPECT_TRUE(t.p.to_a.empty()) << "an ACK left before the end of the burst";
  t.p.b.end_rx_burst(t.p.now);
  auto acks = t.acks_from_b();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].ack, end_of(*segs[2]));
  t.p.now += Duration::micros(20);
  t.burst_in({segs[3]});
  t.p.b.end_rx_burst(t.p.now);
  acks = t.acks_from_b();
  ASSERT_EQ(acks.size(), 1u) << "the odd last segment waits for no timer";
  EXPECT_EQ(acks[0].ack, end_of(*segs[3]));
}

}  // namespace
}  // namespace ws::test
