// Hostile peers: SYN cookies (stack/tcp/syncookie_listen.cpp), whose connections keep
// their options and carry data while forged ACKs make no state; the rate limits on RSTs
// to no connection and on challenge ACKs (RFC 5961 section 7).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/sim/script.hpp"

namespace ws::sim {
namespace {

using namespace wire::tcpflag;
using tcp::TcpState;

tcp::TcpConfig cookie_config(tcp::SynCookieMode m, uint32_t backlog = 1024) {
  auto c = default_config(2);
  c.syncookies = m;
  c.syn_backlog = backlog;
  return c;
}

// A client on A and a server on B that answers every SYN with a cookie: the whole
// transfer in both directions, over a lossy link, through a connection made by cookie.
TEST(SynCookies, FullTransferThroughACookie) {
  LinkParams lossy;
  lossy.loss = 0.01;
  Net n(lossy, lossy, 7, default_config(1), cookie_config(tcp::SynCookieMode::kAlways));
  Pair p;
  p.start(n, 300000, 200000, 3);
  ASSERT_TRUE(
      n.run_until([&] { return p.client.closed && p.server.closed; }, Duration::seconds(60)));
  EXPECT_EQ(p.client.received, 200000u);
  EXPECT_EQ(p.server.received, 300000u);
  EXPECT_EQ(p.client.bad_bytes + p.server.bad_bytes, 0u);
  EXPECT_EQ(p.client.reason, tcp::CloseReason::kNormal);
  auto c = n.b.counters();
  EXPECT_GE(c.syncookies_sent, 1u);
  EXPECT_EQ(c.syncookies_valid, 1u);
  EXPECT_EQ(c.syncookies_invalid, 0u);
  EXPECT_EQ(c.connections_accepted, 1u);
}

struct CookieScript : Script {
  explicit CookieScript(tcp::TcpConfig c) : Script(std::move(c)) {
    s.listen(80, {[this](tcp::Connection& c) {
               accepted = &c;
               c.set_callbacks(app.callbacks());
               app.c = &c;
               return true;
             }});
  }
  // A SYN from the peer at port `port`; returns our SYN,ACK.
  std::optional<Seg> syn(uint16_t port, bool ts = true, bool ws = true, bool sack = true) {
    wire::TcpRepr r;
    r.src_port = port;
    r.dst_port = 80;
    r.seq = SeqNum(9000);
    r.flags = kSyn;
    r.window = 65535;
    r.mss = 1400;
    if (ws) r.wscale = 9;
    r.sack_permitted = sack;
    if (ts) r.ts_val = 5555;
    auto v = make_segment(kAddrB, kAddrA, r);
    s.input(kAddrB, kAddrA, v, false, now);
    return pop();
  }
  // The peer's ACK of `synack` with `data`.
  void ack(const Seg& synack, std::span<const uint8_t> data = {}, uint32_t ack_delta = 0) {
    wire::TcpRepr r;
    r.src_port = synack.v.dst_port();
    r.dst_port = 80;
    r.seq = SeqNum(9001);
    r.ack = synack.v.seq() + 1 + ack_delta;
    r.flags = kAck | (data.empty() ? 0 : kPsh);
    r.window = 1000;
    if (synack.o.ts_val) {
      r.ts_val = 5600;
      r.ts_ecr = *synack.o.ts_val;
    }
    auto v = make_segment(kAddrB, kAddrA, r, data);
    s.input(kAddrB, kAddrA, v, false, now);
  }
  size_t syn_received() const {
    return s.counters().state[static_cast<size_t>(TcpState::kSynReceived)];
  }
  Peer app;
  tcp::Connection* accepted = nullptr;
};

// Auto mode: the first SYN fills the queue (of one) and is answered with state; the
// next gets a cookie and no state; its ACK, with data, makes a connection that keeps
// the options its SYN offered (window scale and SACK came back in the timestamp).
TEST(SynCookies, EngageWhenTheQueueIsFullAndKeepOptions) {
  CookieScript s(cookie_config(tcp::SynCookieMode::kAuto, 1));
  auto first = s.syn(4000);
  ASSERT_TRUE(first);
  EXPECT_EQ(s.syn_received(), 1u);
  EXPECT_EQ(s.s.counters().syncookies_sent, 0u);
  auto synack = s.syn(4001);
  ASSERT_TRUE(synack);
  EXPECT_TRUE(synack->has(kSyn) && synack->has(kAck));
  EXPECT_EQ(synack->v.ack(), SeqNum(9001));
  EXPECT_EQ(synack->o.mss, 1460);
  EXPECT_EQ(synack->o.wscale, 7);
  EXPECT_TRUE(synack->o.sack_permitted);
  ASSERT_TRUE(synack->o.ts_val);
  EXPECT_EQ(synack->o.ts_ecr, 5555u);
  EXPECT_EQ(s.syn_received(), 1u);  // no state for the cookie
  EXPECT_EQ(s.s.connection_count(), 1u);
  EXPECT_EQ(s.s.counters().syncookies_sent, 1u);
  EXPECT_EQ(s.drops.get(DropReason::kTcpSynQueueFull), 0u);

  std::vector<uint8_t> data(300, 0x41);
  s.app.rx_seed = 0;
  s.ack(*synack, data);
  ASSERT_NE(s.accepted, nullptr);
  EXPECT_EQ(s.accepted->state(), TcpState::kEstablished);
  EXPECT_EQ(s.app.received, 300u);
  auto i = s.accepted->info();
  EXPECT_TRUE(i.timestamps);
  EXPECT_TRUE(i.sack);
  EXPECT_EQ(i.snd_wscale, 9);
  EXPECT_EQ(i.rcv_wscale, 7);
  EXPECT_EQ(i.snd_wnd, 1000u << 9);
  EXPECT_EQ(i.send_mss, 1400u - 12);  // the table's 1400, less the timestamp option
  EXPECT_EQ(s.s.counters().syncookies_valid, 1u);
  EXPECT_EQ(s.syn_received(), 1u);  // the first SYN's connection, still half-open
  // Our ACK of the data echoes the peer's timestamp and carries ours past the SYN,ACK's.
  auto a = s.pop();
  while (a && !(a->has(kAck) && a->v.ack() == SeqNum(9301))) a = s.pop();
  ASSERT_TRUE(a) << "no ACK of the data";
  EXPECT_EQ(a->o.ts_ecr, 5600u);
  EXPECT_GE(static_cast<int32_t>(*a->o.ts_val - *synack->o.ts_val), 0);
  // Data back to the peer goes out with the right sequence numbers.
  std::vector<uint8_t> reply(100, 0x42);
  EXPECT_EQ(s.accepted->send(reply), 100u);
  s.advance(Duration::millis(1));
  bool seen = false;
  for (auto g = s.pop(); g; g = s.pop())
    if (g->p.l4.size() > g->v.header_len()) {
      EXPECT_EQ(g->v.seq(), synack->v.seq() + 1);
      seen = true;
    }
  EXPECT_TRUE(seen);
}

// Without timestamps there is nowhere to keep window scale and SACK: the SYN,ACK offers
// only the MSS, and the connection runs without them.
TEST(SynCookies, WithoutTimestampsOnlyTheMss) {
  CookieScript s(cookie_config(tcp::SynCookieMode::kAlways));
  auto synack = s.syn(4002, /*ts=*/false);
  ASSERT_TRUE(synack);
  EXPECT_FALSE(synack->o.wscale);
  EXPECT_FALSE(synack->o.sack_permitted);
  EXPECT_FALSE(synack->o.ts_val);
  EXPECT_EQ(synack->o.mss, 1460);
  s.ack(*synack);
  ASSERT_NE(s.accepted, nullptr);
  auto i = s.accepted->info();
  EXPECT_FALSE(i.timestamps);
  EXPECT_FALSE(i.sack);
  EXPECT_EQ(i.snd_wscale, 0);
  EXPECT_EQ(i.rcv_wscale, 0);
  EXPECT_EQ(i.send_mss, 1400u);
}

// A wrong cookie, a stale one, or an ACK flood makes no state and gets no answer.
TEST(SynCookies, ForgedAndExpiredAcksMakeNoState) {
  CookieScript s(cookie_config(tcp::SynCookieMode::kAlways));
  auto synack = s.syn(4003);
  ASSERT_TRUE(synack);
  s.ack(*synack, {}, 1);  // one off
  s.ack(*synack, {}, 0x10000);
  EXPECT_EQ(s.s.counters().syncookies_invalid, 2u);
  EXPECT_EQ(s.drops.get(DropReason::kTcpSynCookieInvalid), 2u);
  EXPECT_EQ(s.s.connection_count(), 0u);
  EXPECT_EQ(s.pending(), 0u);  // no RST: no reflection
  // Two key periods later the genuine cookie has expired too.
  s.now = s.now + tcp::SynCookies::kPeriod * 2 + Duration::seconds(1);
  s.ack(*synack);
  EXPECT_EQ(s.s.counters().syncookies_invalid, 3u);
  EXPECT_EQ(s.accepted, nullptr);
  // A fresh one still works.
  auto again = s.syn(4003);
  ASSERT_TRUE(again);
  s.ack(*again);
  ASSERT_NE(s.accepted, nullptr);
  EXPECT_EQ(s.accepted->state(), TcpState::kEstablished);
}

// Auto mode with no cookie sent lately: an ACK to the listener is answered with RST as
// before (RFC 9293 3.10.7.2), not taken for a cookie.
TEST(SynCookies, AutoWithoutOverflowLeavesListenAlone) {
  CookieScript s(cookie_config(tcp::SynCookieMode::kAuto));
  wire::TcpRepr r;
  r.src_port = 80;
  r.dst_port = 4004;
  r.seq = SeqNum(1);
  r.flags = kSyn | kAck;
  Seg fake(Packet{kAddrA, kAddrB, make_segment(kAddrA, kAddrB, r)});
  s.ack(fake);
  EXPECT_EQ(s.s.counters().syncookies_invalid, 0u);
  EXPECT_EQ(s.drops.get(DropReason::kTcpBadAck), 1u);
  auto rst = s.pop();
  ASSERT_TRUE(rst);
  EXPECT_TRUE(rst->has(kRst));
}

// Never: a full queue drops SYNs as before.
TEST(SynCookies, NeverDropsWhenFull) {
  CookieScript s(cookie_config(tcp::SynCookieMode::kNever, 1));
  ASSERT_TRUE(s.syn(4005));
  EXPECT_FALSE(s.syn(4006));
  EXPECT_EQ(s.drops.get(DropReason::kTcpSynQueueFull), 1u);
  EXPECT_EQ(s.s.counters().syncookies_sent, 0u);
}

// Segments to no connection (ACK, FIN, data floods to random ports) create no state and
// draw at most tcp.rst_rate_limit RSTs a second (a tenth of it at once); the rest are
// counted.
TEST(RstRateLimit, FloodToNoConnection) {
  auto cfg = default_config(2);
  cfg.rst_rate_limit = 100;
  Script s(cfg);
  const uint8_t kinds[] = {kAck, kFin | kAck, kPsh | kAck, kSyn};
  std::vector<uint8_t> data(50, 1);
  for (uint32_t i = 0; i < 1000; ++i) {
    wire::TcpRepr r;
    r.src_port = static_cast<uint16_t>(1024 + i);
    r.dst_port = static_cast<uint16_t>(2000 + i % 50);
    r.seq = SeqNum(i * 7919);
    r.ack = SeqNum(i * 104729);
    r.flags = kinds[i % 4];
    r.window = 1000;
    auto v =
        make_segment(kAddrB, kAddrA, r, (r.flags & kPsh) ? std::span(data) : std::span<uint8_t>());
    s.s.input(kAddrB, kAddrA, v, false, s.now);
  }
  EXPECT_EQ(s.s.connection_count(), 0u);
  EXPECT_EQ(s.pending(), 10u);  // the burst
  EXPECT_EQ(s.drops.get(DropReason::kTcpRstRateLimited), 990u);
  EXPECT_EQ(s.drops.get(DropReason::kTcpNoListener), 1000u);
  // A RST to no connection is never answered, nor counted against the limit.
  s.clear();
  s.now = s.now + Duration::seconds(1);
  for (uint32_t i = 0; i < 50; ++i) {
    wire::TcpRepr r;
    r.src_port = 999;
    r.dst_port = 2000;
    r.seq = SeqNum(i);
    r.flags = kRst;
    auto v = make_segment(kAddrB, kAddrA, r);
    s.s.input(kAddrB, kAddrA, v, false, s.now);
  }
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_EQ(s.drops.get(DropReason::kTcpRstRateLimited), 990u);
  // A second later the bucket has refilled (to its burst).
  s.in([] {
    wire::TcpRepr r;
    r.src_port = 998;
    r.dst_port = 2001;
    r.flags = kAck;
    return r;
  }());
  EXPECT_EQ(s.pending(), 1u);
}

// The challenge-ACK budget changes from second to second (CVE-2016-5696): an attacker
// who counts the challenge ACKs he draws in a second cannot tell how many others drew.
TEST(ChallengeAck, BudgetDrawnPerSecond) {
  auto cfg = default_config(2);
  cfg.challenge_ack_limit = 100;
  Script s(cfg);
  Peer app;
  ASSERT_TRUE(s.open(app));
  std::vector<size_t> per_second;
  for (int sec = 0; sec < 8; ++sec) {
    s.clear();
    for (int i = 0; i < 300; ++i) {
      auto r = s.peer(kRst);
      r.seq = s.peer_nxt + 1 + static_cast<uint32_t>(i);  // in window, not exact
      s.in(r);
    }
    per_second.push_back(s.pending());
    s.now = s.now + Duration::seconds(1);
  }
  std::sort(per_second.begin(), per_second.end());
  EXPECT_GE(per_second.front(), 50u);
  EXPECT_LT(per_second.back(), 150u);
  EXPECT_NE(per_second.front(), per_second.back());
  EXPECT_EQ(app.c->state(), TcpState::kEstablished);  // no blind RST got through
}

// Our FIN, then the peer's, which acknowledges it: TIME_WAIT. Returns the peer's FIN.
wire::TcpRepr close_into_time_wait(Script& s, Peer& app) {
  app.c->shutdown_write();
  auto fin = s.peer(kFin | kAck);
  fin.ack = s.our_nxt + 1;
  s.in(fin);
  s.peer_nxt += 1;
  return fin;
}

// RFC 1337: a RST, even an exact one, does not end TIME_WAIT (assassination).
TEST(TimeWait, RstDoesNotAssassinate) {
  Script s;
  Peer app;
  ASSERT_TRUE(s.open(app));
  close_into_time_wait(s, app);
  auto tw = [&] { return s.s.counters().state[static_cast<size_t>(TcpState::kTimeWait)]; };
  ASSERT_EQ(tw(), 1u);
  s.clear();
  auto rst = s.peer(kRst);
  s.in(rst);
  rst.seq = s.peer_nxt + 100;
  s.in(rst);
  EXPECT_EQ(tw(), 1u);
  EXPECT_EQ(s.drops.get(DropReason::kTcpTimeWaitRst), 2u);
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_EQ(s.s.connection_count(), 1u);
  EXPECT_EQ(s.s.table_sizes().time_wait, 1u);  // a record: its Tcb went once the ACK was out
}

// Segments that a TIME-WAIT record finds unacceptable and that occupy no sequence space
// (here PAWS-old ACKs, and one outside the window) draw one ACK per 500 ms, as a
// connection's do (RFC 5961 section 7): a reordering or hostile peer cannot make the
// record answer each. The peer's FIN again is always answered.
TEST(TimeWait, RepliesToUnacceptableSegmentsAreRateLimited) {
  Script s;
  Peer app;
  ASSERT_TRUE(s.open(app));
  const auto fin = close_into_time_wait(s, app);
  ASSERT_EQ(s.s.table_sizes().time_wait, 1u);
  s.clear();
  s.advance(Duration::millis(600));  // past the connection's own last reply, if any
  const uint64_t limited = s.s.counters().unacceptable_acks_limited;
  auto old = s.peer();
  old.ts_val = s.peer_ts_val - 10;
  for (int i = 0; i < 5; ++i) s.in(old);
  auto outside = s.peer();
  outside.seq = s.peer_nxt + 5000;
  s.in(outside);
  EXPECT_EQ(s.drops.get(DropReason::kTcpPawsRejected), 5u);
  EXPECT_EQ(s.pending(), 1u);
  EXPECT_EQ(s.s.counters().unacceptable_acks_limited - limited, 5u);
  s.advance(Duration::millis(500));
  s.in(old);
  EXPECT_EQ(s.pending(), 2u);
  s.in(fin);
  s.in(fin);
  EXPECT_EQ(s.pending(), 4u);
  EXPECT_EQ(s.s.table_sizes().time_wait, 1u);
}

// tcp.max_connections: a SYN (or a valid cookie) beyond it is refused and counted.
TEST(MaxConnections, RefusalCounted) {
  auto cfg = cookie_config(tcp::SynCookieMode::kAuto);
  cfg.max_connections = 2;
  CookieScript s(cfg);
  ASSERT_TRUE(s.syn(5000));
  ASSERT_TRUE(s.syn(5001));
  EXPECT_FALSE(s.syn(5002));
  EXPECT_EQ(s.drops.get(DropReason::kTcpMaxConnections), 1u);
  EXPECT_EQ(s.s.connection_count(), 2u);

  auto ca = cookie_config(tcp::SynCookieMode::kAlways);
  ca.max_connections = 1;
  CookieScript c(ca);
  auto a = c.syn(6000), b = c.syn(6001);
  ASSERT_TRUE(a && b);
  c.ack(*a);
  ASSERT_NE(c.accepted, nullptr);
  c.ack(*b);  // a valid cookie, but no room
  EXPECT_EQ(c.drops.get(DropReason::kTcpMaxConnections), 1u);
  EXPECT_EQ(c.s.connection_count(), 1u);
  EXPECT_EQ(c.s.counters().syncookies_valid, 2u);
}

// A receiver that closes its window and then falls silent holds no connection forever:
// zero-window probes left unanswered end it as retransmissions would (max_retries).
TEST(ZeroWindow, SilentReceiverIsGivenUpOn) {
  Script s;
  Peer app;
  ASSERT_TRUE(s.open(app));
  std::vector<uint8_t> data(4000, 7);
  ASSERT_EQ(app.c->send(data), data.size());
  s.clear();
  auto zero = s.peer(kAck);
  zero.ack = s.our_nxt + static_cast<uint32_t>(data.size());
  zero.window = 0;
  s.in(zero);  // everything acknowledged except what did not fit: the window is shut
  ASSERT_EQ(app.c->send(data), data.size());
  s.clear();
  // A receiver that answers the probes keeps the connection open.
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(s.advance(Duration::seconds(130), true));
    s.clear();
    s.in(zero);
  }
  EXPECT_EQ(s.s.connection_count(), 1u);
  // Silent from now on.
  s.advance(Duration::seconds(3600));
  EXPECT_EQ(s.s.connection_count(), 0u);
  EXPECT_EQ(app.reason, tcp::CloseReason::kTimeout);
}

// close() after a half-close whose FIN is already acknowledged (FIN-WAIT-2) orphans the
// connection: it gets the bounded FIN-WAIT-2 wait, not an endless one.
TEST(FinWait2, CloseAfterHalfCloseIsBounded) {
  Script s;
  Peer app;
  ASSERT_TRUE(s.open(app));
  app.c->shutdown_write();
  auto ack = s.peer(kAck);
  ack.ack = s.our_nxt + 1;
  s.in(ack);
  ASSERT_EQ(app.c->state(), TcpState::kFinWait2);
  s.advance(Duration::seconds(600));
  EXPECT_EQ(s.s.connection_count(), 1u);  // half-closed, the application still reads
  app.c->close();
  s.advance(Duration::seconds(61));
  EXPECT_EQ(s.s.connection_count(), 0u);
}

}  // namespace
}  // namespace ws::sim
