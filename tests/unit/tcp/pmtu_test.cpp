// Path MTU (stack/tcp/pmtu.cpp): ICMP validation (RFC 5927), reduction and its floor,
// the plateau estimate (RFC 1191 section 5), recovery after a timeout (RFC 1191 6.3),
// black-hole detection and probing (RFC 4821 / RFC 8899). Virtual clock throughout.
#include "stack/tcp/pmtu.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "tests/sim/router.hpp"
#include "tests/sim/script.hpp"

namespace ws::sim {
namespace {

std::vector<uint8_t> bytes(size_t n) { return std::vector<uint8_t>(n, 0x5a); }

// The first 8 bytes of a segment's TCP header, as an ICMP error quotes them.
std::vector<uint8_t> quote(const Seg& g) { return {g.p.l4.begin(), g.p.l4.begin() + 8}; }

// An established connection (MTU 1500, peer MSS 1460, timestamps: 1448-byte segments)
// with `n` bytes sent and unacknowledged; returns the first data segment.
struct Fixture {
  explicit Fixture(tcp::TcpConfig cfg = default_config(1)) : s(std::move(cfg)) {}
  Fixture(IpAddr self, IpAddr peer) : s(self, peer) {}
  Seg start(size_t n) {
    c = s.open(app);
    EXPECT_TRUE(c);
    s.clear();
    c->send(bytes(n));
    auto g = s.pop();
    EXPECT_TRUE(g);
    s.clear();
    return std::move(*g);
  }
  void frag_needed(std::span<const uint8_t> q, uint16_t mtu, uint16_t quoted_len = 0) {
    s.s.icmp_error(s.me, s.them, q, tcp::IcmpError::kFragNeeded, mtu, s.now, quoted_len);
  }
  // The peer acknowledges everything sent and not yet read from the capture.
  void ack_all(SeqNum from) {
    SeqNum end = from;
    while (auto h = s.pop())
      end = seq_max(end, h->v.seq() + static_cast<uint32_t>(h->v.payload().size()));
    s.our_nxt = end;
    s.in(s.peer());
  }
  Script s;
  Peer app;
  tcp::Connection* c = nullptr;
};

TEST(PmtuIcmp, SequenceOutsideTheFlightIsIgnored) {
  Fixture f;
  Seg g = f.start(3000);
  auto q = quote(g);
  store_be32(q.data() + 4, g.v.seq().raw() + 1'000'000);  // never sent
  f.frag_needed(q, 1000);
  store_be32(q.data() + 4, g.v.seq().raw() - 1);  // already acknowledged (below SND.UNA)
  f.frag_needed(q, 1000);
  EXPECT_EQ(f.s.s.counters().icmp_ignored_sequence, 2u);
  EXPECT_EQ(f.s.s.counters().icmp_ignored, 2u);
  EXPECT_EQ(f.c->send_mss(), 1448u);
  EXPECT_EQ(f.s.pending(), 0u);
}

TEST(PmtuIcmp, WrongTupleAndShortQuoteAreIgnored) {
  Fixture f;
  Seg g = f.start(3000);
  auto q = quote(g);
  store_be16(q.data() + 2, 81);  // another remote port
  f.frag_needed(q, 1000);
  EXPECT_EQ(f.s.s.counters().icmp_ignored_no_connection, 1u);
  auto q2 = quote(g);
  f.s.s.icmp_error(kAddrA, Ipv4Addr::from_octets(10, 0, 0, 9), q2, tcp::IcmpError::kFragNeeded,
                   1000, f.s.now);  // another remote address
  EXPECT_EQ(f.s.s.counters().icmp_ignored_no_connection, 2u);
  f.frag_needed(std::span<const uint8_t>(q2.data(), 7), 1000);
  EXPECT_EQ(f.s.s.counters().icmp_ignored_short, 1u);
  EXPECT_EQ(f.c->send_mss(), 1448u);
  EXPECT_EQ(f.s.s.counters().pmtu_reductions, 0u);
}

TEST(PmtuIcmp, MtuNotBelowTheCurrentOneIsIgnored) {
  Fixture f;
  Seg g = f.start(3000);
  auto q = quote(g);
  f.frag_needed(q, 1500);  // the MTU we already use
  f.frag_needed(q, 9000);  // larger
  // Smaller than ours, but the quoted datagram (1100 bytes) would have fitted.
  f.frag_needed(q, 1400, 1100);
  EXPECT_EQ(f.s.s.counters().icmp_ignored_mtu, 3u);
  EXPECT_EQ(f.c->send_mss(), 1448u);
  // A genuine one, then a repeat about the next dropped segment: one reduction.
  f.frag_needed(q, 1400, 1500);
  f.frag_needed(q, 1400, 1500);
  EXPECT_EQ(f.c->send_mss(), 1348u);
  EXPECT_EQ(f.s.s.counters().pmtu_reductions, 1u);
  EXPECT_EQ(f.s.s.counters().icmp_ignored_mtu, 4u);
  EXPECT_EQ(f.s.s.counters().icmp_accepted, 1u);
}

TEST(PmtuIcmp, TinyMtuStopsAtTheFloor) {
  Fixture f;
  Seg g = f.start(3000);
  f.frag_needed(quote(g), 68);
  // 576 - 40 - 12 (timestamps): never smaller, whatever the message claims.
  EXPECT_EQ(f.c->send_mss(), tcp::kPmtuFloorMss - 12);
  EXPECT_EQ(f.c->send_mss(), 524u);
  f.frag_needed(quote(g), 300);
  EXPECT_EQ(f.c->send_mss(), 524u);
  EXPECT_EQ(f.s.s.counters().pmtu_reductions, 1u);
  while (auto h = f.s.pop()) EXPECT_LE(h->v.payload().size(), 524u);
}

TEST(PmtuIcmp, ZeroMtuUsesThePlateauBelowTheQuotedLength) {
  EXPECT_EQ(tcp::mtu_plateau_below(1500), 1492u);
  EXPECT_EQ(tcp::mtu_plateau_below(1492), 1006u);
  EXPECT_EQ(tcp::mtu_plateau_below(9000), 8166u);
  EXPECT_EQ(tcp::mtu_plateau_below(68), 68u);
  Fixture f;
  Seg g = f.start(3000);
  f.frag_needed(quote(g), 0, 1500);  // an RFC 1191 section 5 router: no MTU reported
  EXPECT_EQ(f.c->send_mss(), 1492u - 52);
  f.frag_needed(quote(g), 0, 1492);
  EXPECT_EQ(f.c->send_mss(), 1006u - 52);
  // No quoted length known and no MTU: the floor.
  f.frag_needed(quote(g), 0);
  EXPECT_EQ(f.c->send_mss(), 524u);
}

TEST(PmtuIcmp, ReductionResendsTheFlightAtTheNewSizeWithoutCwndCut) {
  Fixture f;
  Seg g = f.start(10000);
  uint32_t cwnd = f.c->info().cwnd;
  f.frag_needed(quote(g), 1000, 1500);
  EXPECT_EQ(f.c->send_mss(), 948u);
  EXPECT_EQ(f.c->info().send_mss, 948u);
  EXPECT_GE(f.c->info().cwnd, cwnd / 1448 * 948);  // same segments, not halved
  SeqNum expect = g.v.seq();
  size_t total = 0;
  while (auto h = f.s.pop()) {
    EXPECT_LE(h->v.payload().size(), 948u);
    EXPECT_EQ(h->v.seq(), expect);
    expect += static_cast<uint32_t>(h->v.payload().size());
    total += h->v.payload().size();
  }
  EXPECT_GT(total, 0u);
}

TEST(PmtuRecovery, RaisedAfterTheTimeoutAndLoweredAgain) {
  auto cfg = default_config(1);
  cfg.mtu_probing = false;
  cfg.pmtu_recovery = Duration::seconds(30);
  Fixture f(cfg);
  Seg g = f.start(1000);
  f.frag_needed(quote(g), 1000, 1052);
  EXPECT_EQ(f.c->send_mss(), 948u);
  f.ack_all(g.v.seq());
  EXPECT_EQ(f.c->info().bytes_sent, 1000u);
  f.s.clear();
  f.s.advance(Duration::seconds(29));
  EXPECT_EQ(f.c->send_mss(), 948u);
  EXPECT_EQ(f.s.s.counters().pmtu_increases, 0u);
  f.s.advance(Duration::seconds(2));
  EXPECT_EQ(f.c->send_mss(), 1448u);  // RFC 1191 6.3: the original size again
  EXPECT_EQ(f.s.s.counters().pmtu_increases, 1u);
  f.s.clear();
  f.c->send(bytes(3000));
  auto h = f.s.pop();
  ASSERT_TRUE(h);
  EXPECT_EQ(h->v.payload().size(), 1448u);
  // Still too big for the path: the router says so again.
  f.frag_needed(quote(*h), 1000, 1500);
  EXPECT_EQ(f.c->send_mss(), 948u);
  EXPECT_EQ(f.s.s.counters().pmtu_reductions, 2u);
}

TEST(PmtuBlackHole, TwoTimeoutsOfFullSegmentsFallBackToBase) {
  Fixture f;
  f.start(20000);
  EXPECT_EQ(f.c->send_mss(), 1448u);
  // No ACK, no ICMP: first a tail loss probe (RFC 8985 section 7), which proves nothing
  // about the path; then the first timeout retransmits at full size.
  ASSERT_TRUE(f.s.advance(Duration::seconds(1), true));
  EXPECT_EQ(f.s.s.counters().recovery[static_cast<size_t>(tcp::RecoveryKind::kTlp)], 1u);
  EXPECT_EQ(f.s.s.counters().rto_fired, 0u);
  f.s.clear();
  ASSERT_TRUE(f.s.advance(Duration::seconds(1), true));
  EXPECT_EQ(f.s.s.counters().rto_fired, 1u);
  EXPECT_EQ(f.c->send_mss(), 1448u);
  EXPECT_EQ(f.s.pop()->v.payload().size(), 1448u);
  f.s.clear();
  ASSERT_TRUE(f.s.advance(Duration::seconds(2), true));
  EXPECT_EQ(f.s.s.counters().rto_fired, 2u);
  // RFC 8899 BASE_PLPMTU 1200 less headers and timestamps.
  EXPECT_EQ(f.c->send_mss(), tcp::kPmtuBaseMss - 12);
  EXPECT_EQ(f.s.pop()->v.payload().size(), 1148u);
  EXPECT_EQ(f.s.s.counters().pmtu_black_holes, 1u);
  EXPECT_EQ(f.s.s.counters().pmtu_reductions, 1u);
  // Still nothing: two more timeouts take it to the floor.
  f.s.clear();
  ASSERT_TRUE(f.s.advance(Duration::seconds(4), true));
  f.s.clear();
  ASSERT_TRUE(f.s.advance(Duration::seconds(8), true));
  EXPECT_EQ(f.c->send_mss(), 524u);
  EXPECT_EQ(f.s.s.counters().pmtu_black_holes, 2u);
}

// Loss on a path that carries full-sized segments is not a black hole: with one SACKed,
// timeouts of the segment before it leave the MSS alone, however many there are.
TEST(PmtuBlackHole, TimeoutsWithAFullSegmentSackedAreLoss) {
  Fixture f;
  Seg g = f.start(20000);
  const SeqNum first = g.v.seq();
  wire::TcpRepr r = f.s.peer();
  r.sack_count = 1;
  r.sack[0] = {first + 1448, first + 2896};
  f.s.in(r);
  for (int64_t s : {1, 2, 4, 8, 16, 32}) {
    f.s.clear();
    f.s.advance(Duration::seconds(s));
  }
  EXPECT_GE(f.s.s.counters().rto_fired, 4u);
  EXPECT_EQ(f.c->send_mss(), 1448u);
  EXPECT_EQ(f.s.s.counters().pmtu_black_holes, 0u);
}

// Over IPv6 the floor and BASE_PLPMTU are the minimum link MTU, 1280 (RFC 8200 5, RFC 8899
// 5.1.2): black-hole detection falls back to 1280 - 60 at once and never below it, and a
// Packet Too Big claiming less lowers the MSS no further.
const IpAddr kSelf6 = *IpAddr::parse("2001:db8::1");
const IpAddr kPeer6 = *IpAddr::parse("2001:db8::2");

TEST(PmtuBlackHole, Ipv6FallsBackToItsMinimumMtuAndStaysThere) {
  EXPECT_EQ(tcp::pmtu_floor_mss(false), 1220u);
  EXPECT_EQ(tcp::pmtu_base_mss(false), 1220u);
  EXPECT_EQ(tcp::pmtu_floor_mss(true), 536u);
  EXPECT_EQ(tcp::pmtu_base_mss(true), 1160u);
  Fixture f(kSelf6, kPeer6);
  f.start(40000);
  // MTU 1500 less 60 bytes of headers and 12 of timestamps.
  EXPECT_EQ(f.c->send_mss(), 1428u);
  ASSERT_TRUE(f.s.advance(Duration::seconds(1), true));  // the tail loss probe
  f.s.clear();
  ASSERT_TRUE(f.s.advance(Duration::seconds(1), true));
  EXPECT_EQ(f.s.s.counters().rto_fired, 1u);
  EXPECT_EQ(f.c->send_mss(), 1428u);
  f.s.clear();
  ASSERT_TRUE(f.s.advance(Duration::seconds(2), true));
  EXPECT_EQ(f.s.s.counters().rto_fired, 2u);
  EXPECT_EQ(f.c->send_mss(), 1220u - 12);  // not the IPv4 base's 1148
  EXPECT_EQ(f.s.pop()->v.payload().size(), 1208u);
  EXPECT_EQ(f.s.s.counters().pmtu_black_holes, 1u);
  // Two more timeouts: IPv4 would fall to its floor of 576; IPv6 has nothing lower.
  f.s.clear();
  ASSERT_TRUE(f.s.advance(Duration::seconds(4), true));
  f.s.clear();
  ASSERT_TRUE(f.s.advance(Duration::seconds(8), true));
  EXPECT_EQ(f.c->send_mss(), 1208u);
  EXPECT_EQ(f.s.s.counters().pmtu_black_holes, 1u);
  EXPECT_EQ(f.s.s.counters().pmtu_reductions, 1u);
}

TEST(PmtuIcmp, Ipv6TinyMtuStopsAtTheMinimumLinkMtu) {
  Fixture f(kSelf6, kPeer6);
  Seg g = f.start(3000);
  f.frag_needed(quote(g), 576);
  EXPECT_EQ(f.c->send_mss(), 1208u);
  EXPECT_EQ(f.s.s.counters().pmtu_reductions, 1u);
  while (auto h = f.s.pop()) EXPECT_LE(h->v.payload().size(), 1208u);
}

TEST(PmtuBlackHole, OffWithoutProbingAndForSmallSegments) {
  auto cfg = default_config(1);
  cfg.mtu_probing = false;
  Fixture f(cfg);
  f.start(20000);
  f.s.advance(Duration::seconds(5));
  EXPECT_GE(f.s.s.counters().rto_fired, 3u);
  EXPECT_EQ(f.c->send_mss(), 1448u);
  EXPECT_EQ(f.s.s.counters().pmtu_black_holes, 0u);

  Fixture small;  // a lost small segment says nothing about the MTU
  small.start(500);
  small.s.advance(Duration::seconds(5));
  EXPECT_GE(small.s.s.counters().rto_fired, 3u);
  EXPECT_EQ(small.c->send_mss(), 1448u);
  EXPECT_EQ(small.s.s.counters().pmtu_black_holes, 0u);
}

// Two stacks at MTU 9000 through a router whose next hop carries `path` bytes.
struct PathRun {
  PathRun(uint32_t path, bool icmp, tcp::TcpConfig ca = default_config(1))
      : n(LinkParams{}, LinkParams{}, 7, std::move(ca), default_config(2)), r(n, path, icmp) {
    n.out_a.mtu = n.out_b.mtu = 9000;
    p.client.shutdown_when_done = false;
    p.start(n, 4'000'000, 0, 7);
  }
  bool run() {
    return r.run_until([&] { return p.server.received == p.client.to_send; },
                       Duration::seconds(120));
  }
  Net n;
  MtuRouter r;
  Pair p;
};

TEST(PmtuProbing, FindsThePathMtuUpAndDownWithoutIcmp) {
  PathRun t(4000, false);
  ASSERT_TRUE(t.run()) << t.p.server.received;
  EXPECT_EQ(t.p.server.bad_bytes, 0u);
  auto c = t.n.a.counters();
  EXPECT_EQ(c.pmtu_black_holes, 1u);       // 8960 silently dropped: to 1160
  EXPECT_GE(c.pmtu_probes_failed, 1u);     // 5060 is too big
  EXPECT_GE(c.pmtu_probes_succeeded, 2u);  // 3110, ...
  ASSERT_TRUE(t.p.client.c);
  uint32_t mss = t.p.client.c->send_mss();
  // The search ends within kPmtuSearchDone of 4000 - 40, less 12 for timestamps.
  EXPECT_LE(mss, 4000u - 52);
  EXPECT_GE(mss, 4000u - 52 - tcp::kPmtuSearchDone);
  EXPECT_LE(t.r.largest, 4000u);
  EXPECT_EQ(t.r.icmp_sent, 0u);
}

TEST(PmtuProbing, IcmpPathNeedsNoProbes) {
  PathRun t(1500, true);
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.p.server.bad_bytes, 0u);
  auto c = t.n.a.counters();
  EXPECT_EQ(c.pmtu_reductions, 1u);
  EXPECT_EQ(c.pmtu_black_holes, 0u);
  EXPECT_EQ(c.pmtu_probes_sent, 0u);
  EXPECT_GE(c.icmp_ignored_mtu, 1u);  // the router's copies about the rest of the flight
  EXPECT_EQ(t.p.client.c->send_mss(), 1448u);
}

TEST(PmtuProbing, DisabledMeansNoProbes) {
  auto ca = default_config(1);
  ca.mtu_probing = false;
  PathRun t(1500, true, ca);
  ASSERT_TRUE(t.run());
  EXPECT_EQ(t.n.a.counters().pmtu_probes_sent, 0u);
  EXPECT_EQ(t.p.client.c->send_mss(), 1448u);
}

TEST(PmtuCache, DirectMappedWithExpiry) {
  tcp::PmtuCache c;
  Instant t0 = Instant::from_ns(1'000'000'000);
  auto a = Ipv4Addr::from_octets(10, 0, 0, 2), b = Ipv4Addr::from_octets(10, 0, 0, 3);
  c.record(a, 1460, 1460, 8960, tcp::PmtuLoweredBy::kIcmp, t0 + Duration::seconds(10));
  ASSERT_TRUE(c.find(a, t0));
  EXPECT_EQ(c.find(a, t0)->mss, 1460u);
  EXPECT_EQ(c.find(b, t0), nullptr);
  EXPECT_EQ(c.find(a, t0 + Duration::seconds(10)), nullptr);  // expired
  c.record(a, 8960, 8960, 8960, tcp::PmtuLoweredBy::kNone, t0 + Duration::seconds(10));
  EXPECT_EQ(c.find(a, t0), nullptr);  // back at the link's size: forgotten
}

// A second connection to the same host starts from the path MTU the first one found
// (RFC 1191 section 5) and sends nothing the path drops; after the recovery interval a
// third starts at the interface MTU again.
TEST(PmtuCache, NextConnectionStartsFromTheLearntSize) {
  auto ca = default_config(1);
  ca.pmtu_recovery = Duration::seconds(30);
  PathRun t(4000, false, ca);
  ASSERT_TRUE(t.run());
  uint32_t learnt = t.p.client.c->send_mss();
  auto before = t.n.a.counters();
  EXPECT_EQ(before.pmtu_cache_hits, 0u);
  uint64_t dropped = t.r.dropped;

  Peer c2, s2;
  c2.tx_seed = s2.rx_seed = 99;
  c2.to_send = 1'000'000;
  c2.shutdown_when_done = false;
  tcp::ListenCallbacks l;
  l.on_accept = [&](tcp::Connection& c) {
    s2.c = &c;
    c.set_callbacks(s2.callbacks());
    return true;
  };
  t.n.b.listen(5001, l);
  c2.c = t.n.a.connect({kAddrB, 5001}, c2.callbacks(), 0, t.n.now);
  ASSERT_TRUE(c2.c);
  ASSERT_TRUE(t.r.run_until([&] { return s2.received == c2.to_send; }, Duration::seconds(30)));
  EXPECT_EQ(s2.bad_bytes, 0u);
  auto after = t.n.a.counters();
  EXPECT_EQ(after.pmtu_cache_hits, 1u);
  EXPECT_EQ(after.pmtu_black_holes, before.pmtu_black_holes);
  EXPECT_EQ(after.pmtu_probes_sent, before.pmtu_probes_sent);
  EXPECT_EQ(t.r.dropped, dropped);  // nothing oversized this time
  EXPECT_EQ(c2.c->send_mss(), learnt);

  t.r.run_for(Duration::seconds(31));
  Peer c3;
  c3.to_send = 0;
  c3.c = t.n.a.connect({kAddrB, 5001}, c3.callbacks(), 0, t.n.now);
  ASSERT_TRUE(t.r.run_until([&] { return c3.connected; }, Duration::seconds(5)));
  EXPECT_EQ(c3.c->send_mss(), 8948u);
  EXPECT_EQ(t.n.a.counters().pmtu_cache_hits, 1u);
}

}  // namespace
}  // namespace ws::sim
