// Scenario tests: handshakes, RST/challenge ACKs, timers, recovery, windows, close.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "stack/tcp/mss.hpp"
#include "stack/tcp/paws.hpp"
#include "tests/sim/script.hpp"

namespace ws::sim {
namespace {

using namespace wire::tcpflag;
using tcp::TcpState;

std::vector<uint8_t> bytes(size_t n, uint8_t v = 0x5a) { return std::vector<uint8_t>(n, v); }

// ----------------------------------------------------------------- handshakes

TEST(Handshake, ActiveOpenNegotiatesAllOptions) {
  Script s;
  Peer app;
  tcp::Connection* c = s.open(app);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(app.connected);
  EXPECT_EQ(c->state(), TcpState::kEstablished);
  auto i = c->info();
  EXPECT_TRUE(i.timestamps);
  EXPECT_TRUE(i.sack);
  EXPECT_EQ(i.snd_wscale, 7);
  EXPECT_EQ(i.rcv_wscale, 7);    // 65535 << 7 covers the 6 MiB ceiling
  EXPECT_EQ(i.send_mss, 1448u);  // MTU 1500 - 40 - 12 (timestamps)
  auto ack = s.pop();
  ASSERT_TRUE(ack);
  EXPECT_TRUE(ack->has(kAck));
  EXPECT_EQ(ack->v.ack(), s.peer_iss + 1);
  EXPECT_EQ(ack->o.ts_ecr, s.peer_ts_val);
}

TEST(Handshake, SynCarriesMssFromMtu) {
  for (uint32_t mtu : {576u, 1500u, 4000u, 9000u}) {
    Script s;
    s.out.mtu = mtu;
    Peer app;
    s.s.connect({kAddrB, 80}, app.callbacks(), 0, s.now);
    auto syn = s.pop();
    ASSERT_TRUE(syn);
    EXPECT_TRUE(syn->has(kSyn));
    EXPECT_EQ(*syn->o.mss, mtu - 40);
    EXPECT_TRUE(syn->o.sack_permitted);
    EXPECT_TRUE(syn->o.ts_val.has_value());
    EXPECT_EQ(*syn->o.wscale, 7);
  }
}

TEST(Handshake, WindowScaleOnlyWhenBothOffer) {
  Script s;
  Peer app;
  tcp::Connection* c = s.open(app, /*peer_ws=*/false, /*ts=*/true, /*sack=*/false);
  ASSERT_NE(c, nullptr);
  auto i = c->info();
  EXPECT_EQ(i.snd_wscale, 0);
  EXPECT_EQ(i.rcv_wscale, 0);
  EXPECT_FALSE(i.sack);
  EXPECT_TRUE(i.timestamps);
  auto ack = s.pop();
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->v.window(), 65535);  // unscaled, clamped to the field
  EXPECT_EQ(ack->o.sack_count, 0);
  // The peer's window of 1000 is taken unscaled.
  s.in(s.peer());
  EXPECT_EQ(c->info().snd_wnd, 1000u);
}

TEST(Handshake, NoTimestampsMeansFullMss) {
  Script s;
  Peer app;
  tcp::Connection* c = s.open(app, true, /*ts=*/false, true);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->info().timestamps);
  EXPECT_EQ(c->info().send_mss, 1460u);
  // A segment never exceeds the MSS.
  s.clear();
  auto d = bytes(100000);
  c->send(d);
  while (auto g = s.pop()) EXPECT_LE(g->v.payload().size(), 1460u);
}

TEST(Handshake, PassiveOpenAnswersOnlyOfferedOptions) {
  Script s;
  bool accepted = false;
  s.s.listen(80, {[&](tcp::Connection&) { return accepted = true; }});
  wire::TcpRepr syn;
  syn.src_port = 4000;
  syn.dst_port = 80;
  syn.seq = SeqNum(777);
  syn.flags = kSyn;
  syn.window = 29200;
  syn.mss = 536;
  auto v = make_segment(kAddrB, kAddrA, syn);
  s.s.input(kAddrB, kAddrA, v, false, s.now);
  auto sa = s.pop();
  ASSERT_TRUE(sa);
  EXPECT_TRUE(sa->has(kSyn) && sa->has(kAck));
  EXPECT_EQ(sa->v.ack(), SeqNum(778));
  EXPECT_EQ(*sa->o.mss, 1460);
  EXPECT_FALSE(sa->o.wscale.has_value());
  EXPECT_FALSE(sa->o.sack_permitted);
  EXPECT_FALSE(sa->o.ts_val.has_value());
  EXPECT_FALSE(accepted);
  wire::TcpRepr ack;
  ack.src_port = 4000;
  ack.dst_port = 80;
  ack.seq = SeqNum(778);
  ack.ack = sa->v.seq() + 1;
  ack.flags = kAck;
  ack.window = 29200;
  v = make_segment(kAddrB, kAddrA, ack);
  s.s.input(kAddrB, kAddrA, v, false, s.now);
  EXPECT_TRUE(accepted);
  EXPECT_EQ(s.s.counters().connections_accepted, 1u);
}

TEST(Handshake, SynToClosedPortGetsRst) {
  Script s;
  wire::TcpRepr syn;
  syn.src_port = 4000;
  syn.dst_port = 81;
  syn.seq = SeqNum(1000);
  syn.flags = kSyn;
  auto v = make_segment(kAddrB, kAddrA, syn);
  s.s.input(kAddrB, kAddrA, v, false, s.now);
  auto r = s.pop();
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->has(kRst) && r->has(kAck));
  EXPECT_EQ(r->v.seq(), SeqNum(0));
  EXPECT_EQ(r->v.ack(), SeqNum(1001));
  EXPECT_EQ(s.drops.get(DropReason::kTcpNoListener), 1u);
  // A RST is never answered.
  syn.flags = kRst;
  v = make_segment(kAddrB, kAddrA, syn);
  s.s.input(kAddrB, kAddrA, v, false, s.now);
  EXPECT_EQ(s.pending(), 0u);
}

TEST(Handshake, RstAnswersSynRefused) {
  Script s;
  Peer app;
  s.s.connect({kAddrB, 80}, app.callbacks(), 0, s.now);
  auto syn = s.pop();
  ASSERT_TRUE(syn);
  wire::TcpRepr r;
  r.src_port = 80;
  r.dst_port = syn->v.src_port();
  r.ack = syn->v.seq() + 1;
  r.flags = kRst | kAck;
  s.in(r);
  EXPECT_TRUE(app.closed);
  EXPECT_EQ(app.reason, tcp::CloseReason::kRefused);
}

TEST(Handshake, SynRetransmitBackoffExactTimes) {
  Script s;
  Peer app;
  Instant t0 = s.now;
  s.s.connect({kAddrB, 80}, app.callbacks(), 0, s.now);
  ASSERT_TRUE(s.pop());
  // RFC 6298: 1 s initial, doubling: retransmissions at 1, 3, 7, 15, 31, 63 s.
  std::vector<int64_t> expect = {1000, 3000, 7000, 15000, 31000, 63000};
  for (int64_t ms : expect) {
    ASSERT_TRUE(s.advance(Duration::seconds(100), true));
    EXPECT_EQ((s.now - t0).ms(), ms);
    auto g = s.pop();
    ASSERT_TRUE(g);
    EXPECT_TRUE(g->has(kSyn));
  }
  // After max_syn_retries (6) the next timeout gives up at 127 s.
  s.advance(Duration::seconds(64));
  EXPECT_TRUE(app.closed);
  EXPECT_EQ(app.reason, tcp::CloseReason::kTimeout);
  EXPECT_EQ(s.s.connection_count(), 0u);
}

TEST(Handshake, LostSynMeansThreeSecondRto) {
  // RFC 6298 (5.7): the SYN was retransmitted and no RTT was measured (Karn), so data
  // transmission starts with an RTO of 3 s.
  Script s;
  Peer app;
  app.shutdown_when_done = false;
  tcp::Connection* c = s.s.connect({kAddrB, 80}, app.callbacks(), 0, s.now);
  auto syn = s.pop();
  ASSERT_TRUE(s.advance(Duration::seconds(2), true));
  s.clear();
  s.lport = syn->v.src_port();
  s.our_iss = syn->v.seq();
  s.our_nxt = s.our_iss + 1;
  auto r = s.peer(kSyn | kAck);
  r.seq = s.peer_iss;
  r.mss = 1460;
  r.ts_val = s.peer_ts_val;
  s.in(r);
  ASSERT_EQ(c->state(), TcpState::kEstablished);
  EXPECT_EQ(c->info().rto.ms(), 3000);
}

TEST(Handshake, SimultaneousOpen) {
  Net n(LinkParams{}, LinkParams{}, 1);
  Peer pa, pb;
  pa.to_send = 10000;
  pb.to_send = 20000;
  pa.tx_seed = pb.rx_seed = 1;
  pb.tx_seed = pa.rx_seed = 2;
  pa.c = n.a.connect({kAddrB, 6000}, pa.callbacks(), 5000, n.now);
  pb.c = n.b.connect({kAddrA, 5000}, pb.callbacks(), 6000, n.now);
  ASSERT_TRUE(pa.c && pb.c);
  ASSERT_TRUE(n.run_until([&] { return pa.closed && pb.closed; }, Duration::seconds(10)));
  EXPECT_EQ(pa.received, 20000u);
  EXPECT_EQ(pb.received, 10000u);
  EXPECT_EQ(pa.bad_bytes + pb.bad_bytes, 0u);
  EXPECT_EQ(pa.reason, tcp::CloseReason::kNormal);
}

TEST(Handshake, SynBacklogBounded) {
  auto cfg = default_config(1);
  cfg.syn_backlog = 2;
  cfg.syncookies = tcp::SynCookieMode::kNever;  // sim_hostile_test.cpp: with cookies
  Script s(cfg);
  s.s.listen(80, {[](tcp::Connection&) { return true; }});
  for (uint16_t port = 4000; port < 4003; ++port) {
    wire::TcpRepr syn;
    syn.src_port = port;
    syn.dst_port = 80;
    syn.seq = SeqNum(1000);
    syn.flags = kSyn;
    auto v = make_segment(kAddrB, kAddrA, syn);
    s.s.input(kAddrB, kAddrA, v, false, s.now);
  }
  EXPECT_EQ(s.pending(), 2u);  // two SYN,ACKs; the third SYN was dropped
  EXPECT_EQ(s.drops.get(DropReason::kTcpSynQueueFull), 1u);
  EXPECT_EQ(s.s.counters().state[static_cast<size_t>(TcpState::kSynReceived)], 2u);
}

TEST(Handshake, SynAckLostIsResentOnSynRetransmit) {
  Script s;
  s.s.listen(80, {[](tcp::Connection&) { return true; }});
  wire::TcpRepr syn;
  syn.src_port = 4000;
  syn.dst_port = 80;
  syn.seq = SeqNum(1000);
  syn.flags = kSyn;
  auto v = make_segment(kAddrB, kAddrA, syn);
  s.s.input(kAddrB, kAddrA, v, false, s.now);
  auto a = s.pop();
  s.s.input(kAddrB, kAddrA, v, false, s.now);
  auto b = s.pop();
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(b->has(kSyn) && b->has(kAck));
  EXPECT_EQ(a->v.seq(), b->v.seq());
}

// ----------------------------------------------------------- RFC 5961

TEST(Rfc5961, RstExactResetsInWindowChallenges) {
  Script s;
  Peer app;
  ASSERT_TRUE(s.open(app));
  s.clear();
  // In window but not RCV.NXT: challenge ACK, connection stays (section 3.2).
  auto r = s.peer(kRst);
  r.seq = s.peer_nxt + 100;
  s.in(r);
  auto ch = s.pop();
  ASSERT_TRUE(ch);
  EXPECT_TRUE(ch->has(kAck) && !ch->has(kRst));
  EXPECT_EQ(ch->v.ack(), s.peer_nxt);
  EXPECT_FALSE(app.closed);
  EXPECT_EQ(s.drops.get(DropReason::kTcpRstInvalid), 1u);
  // Out of window: dropped silently.
  r.seq = s.peer_nxt + 10'000'000;
  s.in(r);
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_FALSE(app.closed);
  // Exactly RCV.NXT: reset.
  r.seq = s.peer_nxt;
  s.in(r);
  EXPECT_TRUE(app.closed);
  EXPECT_EQ(app.reason, tcp::CloseReason::kReset);
  EXPECT_EQ(s.s.counters().resets_received, 1u);
}

TEST(Rfc5961, SynInEstablishedGetsChallengeAck) {
  Script s;
  Peer app;
  ASSERT_TRUE(s.open(app));
  s.clear();
  auto r = s.peer(kSyn);
  r.seq = s.peer_nxt + 10;
  s.in(r);
  auto ch = s.pop();
  ASSERT_TRUE(ch);
  EXPECT_TRUE(ch->has(kAck) && !ch->has(kSyn) && !ch->has(kRst));
  EXPECT_FALSE(app.closed);
  EXPECT_EQ(s.s.counters().challenge_acks, 1u);
}

TEST(Rfc5961, AckAcceptanceLimits) {
  Script s;
  Peer app;
  tcp::Connection* c = s.open(app);
  ASSERT_TRUE(c);
  c->send(bytes(1000));
  s.clear();
  // ACK of data never sent: challenge ACK and drop (section 5.2).
  auto r = s.peer();
  r.ack = s.our_nxt + 5000;
  s.in(r);
  auto ch = s.pop();
  ASSERT_TRUE(ch);
  EXPECT_EQ(ch->v.ack(), s.peer_nxt);
  EXPECT_EQ(s.drops.get(DropReason::kTcpBadAck), 1u);
  // An ACK far below SND.UNA - MAX.SND.WND: also challenged and dropped.
  r.ack = s.our_nxt - 2'000'000'000u;
  s.in(r);
  EXPECT_EQ(s.drops.get(DropReason::kTcpBadAck), 2u);
  // The data is still outstanding: nothing was acknowledged.
  EXPECT_EQ(c->info().state, TcpState::kEstablished);
}

TEST(Rfc5961, ChallengeAcksAreRateLimited) {
  auto cfg = default_config(1);
  cfg.challenge_ack_limit = 3;
  Script s(cfg);
  Peer app;
  ASSERT_TRUE(s.open(app));
  s.clear();
  for (int i = 0; i < 10; ++i) {
    auto r = s.peer(kRst);
    r.seq = s.peer_nxt + 1 + static_cast<uint32_t>(i);
    s.in(r);
  }
  // The second's budget is drawn from [limit/2, limit*3/2) (CVE-2016-5696): 2..4 here.
  EXPECT_GE(s.pending(), 2u);
  EXPECT_LE(s.pending(), 4u);
  EXPECT_EQ(s.s.counters().challenge_acks_limited, 10u - s.pending());
}

// ------------------------------------------------------- timestamps / PAWS

// Delivers `d` at the peer's next sequence number with a timestamp `ts_delta` ticks after
// the handshake's.
void in_with_ts(Script& s, std::span<const uint8_t> d, int32_t ts_delta) {
  auto r = s.peer();
  r.ts_val = s.peer_ts_val + static_cast<uint32_t>(ts_delta);
  s.in(r, d);
}

TEST(Timestamps, PawsDropsOldTimestamp) {
  Script s;
  Peer app;
  ASSERT_TRUE(s.open(app));
  s.clear();
  auto d = bytes(100);
  in_with_ts(s, d, 2000);
  EXPECT_EQ(app.received, 100u);
  s.peer_nxt += 100;
  in_with_ts(s, d, 2000 - tcp::kPawsReorderTicks - 1);  // too old even for reordering
  EXPECT_EQ(app.received, 100u);
  EXPECT_EQ(s.drops.get(DropReason::kTcpPawsRejected), 1u);
  // Our segments echo the most recent valid timestamp.
  s.clear();
  s.in(s.peer(kAck | kPsh), d);  // ts_val = peer_ts_val (older than +2000): rejected
  auto g = s.pop();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->o.ts_ecr, s.peer_ts_val + 2000);
}

// A retransmission overtook its original: the original, older by more than one tick, is
// rejected by PAWS but answered with a D-SACK for its bytes (RFC 2883), which is what lets
// the sender undo its needless reduction.
TEST(Timestamps, PawsRejectedDuplicateIsDsacked) {
  Script s;
  Peer app;
  ASSERT_TRUE(s.open(app));
  s.clear();
  auto d = bytes(1000);
  in_with_ts(s, d, 10);  // the retransmission, sent later
  EXPECT_EQ(app.received, 1000u);
  s.clear();
  in_with_ts(s, d, 0);  // the original, 10 ticks older
  EXPECT_EQ(s.drops.get(DropReason::kTcpPawsRejected), 1u);
  EXPECT_EQ(app.received, 1000u);
  auto g = s.pop();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->v.ack(), s.peer_nxt + 1000);
  ASSERT_EQ(g->o.sack_count, 1);
  EXPECT_EQ(g->o.sack[0].left, s.peer_nxt);
  EXPECT_EQ(g->o.sack[0].right, s.peer_nxt + 1000);
}

// New data older than TS.Recent was held back by reordering behind a segment sent later:
// one tick passes as with Linux's window; more (up to kPawsReorderTicks) passes as well and
// is counted, early in a connection (paws_spares_reordered). TS.Recent does not go back.
TEST(Timestamps, PawsTakesNewDataThatReorderingHeldBack) {
  Script s;
  Peer app;
  ASSERT_TRUE(s.open(app));
  auto d = bytes(1000);
  in_with_ts(s, d, 30);
  s.peer_nxt += 1000;
  in_with_ts(s, d, 29);  // one tick: within Linux's window, not counted
  EXPECT_EQ(s.s.counters().paws_reordered_accepted, 0u);
  s.peer_nxt += 1000;
  s.clear();
  in_with_ts(s, d, 10);  // 20 ticks
  EXPECT_EQ(s.drops.get(DropReason::kTcpPawsRejected), 0u);
  EXPECT_EQ(app.received, 3000u);
  EXPECT_EQ(s.s.counters().paws_reordered_accepted, 1u);
  s.peer_nxt += 1000;
  ASSERT_TRUE(s.advance(Duration::seconds(1), true));
  auto g = s.pop();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->v.ack(), s.peer_nxt);
  EXPECT_EQ(g->o.ts_ecr, s.peer_ts_val + 30);
}

// An older ACK that is not a duplicate (it acknowledges less than SND.UNA) stays rejected
// by PAWS. Answering each such segment would tell the peer nothing new: one reply per
// connection per 500 ms (RFC 5961 section 7), the rest counted.
TEST(Timestamps, RepliesToRejectedAcksAreRateLimited) {
  Script s;
  Peer app;
  tcp::Connection* c = s.open(app);
  ASSERT_TRUE(c);
  const uint32_t m = 1448;
  c->send(bytes(m * 2));
  s.clear();
  auto all = s.peer();
  all.ack = s.our_nxt + 2 * m;
  all.ts_val = s.peer_ts_val + 20;
  s.in(all);
  auto old = s.peer();
  old.ack = s.our_nxt + m;
  old.ts_val = s.peer_ts_val + 10;
  for (int i = 0; i < 5; ++i) s.in(old);
  EXPECT_EQ(s.drops.get(DropReason::kTcpPawsRejected), 5u);
  EXPECT_EQ(s.pending(), 1u);
  EXPECT_EQ(s.s.counters().unacceptable_acks_limited, 4u);
  s.clear();
  s.advance(Duration::millis(500));
  s.in(old);
  EXPECT_EQ(s.pending(), 1u);
  // A segment with data is always answered (for old data, its D-SACK undoes a reduction).
  s.in(s.peer(kAck | kPsh), bytes(100));
  s.in(s.peer(kAck | kPsh), bytes(100));
  EXPECT_EQ(s.pending(), 3u);
}

// --------------------------------------------------- retransmission timing

TEST(Retransmit, RtoBackoffExactTimes) {
  Script s;
  Peer app;
  tcp::Connection* c = s.open(app);
  ASSERT_TRUE(c);
  s.clear();
  // The handshake RTT was 0 here, so RTO = SRTT + max(rto_min, 4*RTTVAR) = 200 ms.
  EXPECT_EQ(c->info().rto.ms(), 200);
  Instant t0 = s.now;
  c->send(bytes(100));
  ASSERT_TRUE(s.pop());
  // First a tail loss probe (RFC 8985 section 7.2: PTO = 2*SRTT + 200 ms for a lone
  // segment, capped by the RTO), resending the segment; then the timeouts, doubling.
  for (int64_t ms : {200, 400, 800, 1600, 3200, 6400}) {
    ASSERT_TRUE(s.advance(Duration::seconds(60), true));
    EXPECT_EQ((s.now - t0).ms(), ms);
    auto g = s.pop();
    ASSERT_TRUE(g);
    EXPECT_EQ(g->v.seq(), s.our_nxt);
    EXPECT_EQ(g->v.payload().size(), 100u);
  }
  EXPECT_EQ(s.s.counters().recovery[static_cast<size_t>(tcp::RecoveryKind::kTlp)], 1u);
  EXPECT_EQ(s.s.counters().rto_fired, 5u);
  // An ACK stops the timer.
  auto r = s.peer();
  r.ack = s.our_nxt + 100;
  s.in(r);
  EXPECT_FALSE(s.advance(Duration::seconds(100), true));
}

TEST(Retransmit, GivesUpAfterMaxRetries) {
  auto cfg = default_config(1);
  cfg.max_retries = 3;
  Script s(cfg);
  Peer app;
  tcp::Connection* c = s.open(app);
  c->send(bytes(10));
  s.advance(Duration::seconds(10));
  EXPECT_TRUE(app.closed);
  EXPECT_EQ(app.reason, tcp::CloseReason::kTimeout);
  // The last thing sent is a RST.
  std::optional<Seg> last;
  while (auto g = s.pop()) last = std::move(g);
  ASSERT_TRUE(last);
  EXPECT_TRUE(last->has(kRst));
}

TEST(Retransmit, FastRetransmitOnThreeDupacks) {
  Script s;
  Peer app;
  tcp::Connection* c = s.open(app, true, true, /*sack=*/false);
  ASSERT_TRUE(c);
  s.clear();
  c->send(bytes(1448 * 10));
  EXPECT_EQ(s.pending(), 10u);  // IW10 (RFC 6928)
  s.clear();
  auto r = s.peer();
  r.ack = s.our_nxt + 1448;
  s.in(r);  // new data acked: two more segments may go
  s.clear();
  for (int i = 0; i < 2; ++i) s.in(r);
  EXPECT_EQ(s.pending(), 0u);  // two dupacks: nothing yet
  s.in(r);
  auto g = s.pop();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->v.seq(), s.our_nxt + 1448);  // the missing segment, at once
  EXPECT_EQ(s.s.counters().fast_retransmits, 1u);
}

TEST(Retransmit, SackHolesRepaired) {
  Script s;
  Peer app;
  tcp::Connection* c = s.open(app);
  ASSERT_TRUE(c);
  s.clear();
  const uint32_t m = 1448;
  c->send(bytes(m * 10));
  ASSERT_EQ(s.pending(), 10u);
  s.clear();
  // Segments 0 and 3 lost: SACK 1..3 and 4..10.
  auto r = s.peer();
  r.ack = s.our_nxt;
  r.sack_count = 2;
  r.sack[0] = {s.our_nxt + 4 * m, s.our_nxt + 10 * m};
  r.sack[1] = {s.our_nxt + m, s.our_nxt + 3 * m};
  s.in(r);
  std::vector<SeqNum> rx;
  while (auto g = s.pop())
    if (!g->v.payload().empty()) rx.push_back(g->v.seq());
  ASSERT_GE(rx.size(), 2u);
  EXPECT_EQ(rx[0], s.our_nxt);
  EXPECT_EQ(rx[1], s.our_nxt + 3 * m);
  // Cumulative ACK of everything ends recovery; nothing else is resent.
  r = s.peer();
  r.ack = s.our_nxt + 10 * m;
  s.in(r);
  EXPECT_EQ(c->info().retransmits, 2u);
}

// ------------------------------------------------------------ delayed ACK

// An open connection whose peer (the test) sends it full-sized segments; `open_rtt` is the
// handshake's round trip, the first RTT sample.
struct DataIn {
  static constexpr uint32_t m = 1448;
  Script s;
  Peer app;
  std::vector<uint8_t> seg = bytes(m);
  explicit DataIn(tcp::TcpConfig cfg = default_config(1), Duration open_rtt = {})
      : s(std::move(cfg)) {
    s.open_rtt = open_rtt;
    EXPECT_TRUE(s.open(app));
    s.clear();
  }
  void send_one() {
    s.in(s.peer(kAck), seg);
    s.peer_nxt += m;
  }
};

TEST(DelayedAck, QuickAckThenEverySecondSegmentOrTimer) {
  tcp::TcpConfig cfg = default_config(1);
  cfg.recv_buffer = 1 << 20;  // fixed: no window update when autotuning grows it
  DataIn t(cfg);
  auto& s = t.s;
  const auto& seg = t.seg;
  auto send_one = [&] { t.send_one(); };
  // Quick-ACK at the start of the connection: every segment is acknowledged at once.
  for (int i = 0; i < 16; ++i) {
    send_one();
    EXPECT_EQ(s.pending(), 1u) << i;
    s.clear();
  }
  // Then one ACK per two full-sized segments...
  send_one();
  EXPECT_EQ(s.pending(), 0u);
  send_one();
  auto a = s.pop();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->v.ack(), s.peer_nxt);
  // ...and a lone segment right behind them (the end of the flight) within 1 ms...
  Instant t0 = s.now;
  send_one();
  EXPECT_EQ(s.pending(), 0u);
  ASSERT_TRUE(s.advance(Duration::seconds(1), true));
  EXPECT_EQ((s.now - t0).ms(), 1);
  s.clear();
  // ...and one after a silence (12 ms: over a quarter of the timer, under the RTO) by the
  // 40 ms timer.
  EXPECT_FALSE(s.advance(Duration::millis(12)));
  t0 = s.now;
  send_one();
  EXPECT_EQ(s.pending(), 0u);
  ASSERT_TRUE(s.advance(Duration::seconds(1), true));
  EXPECT_EQ((s.now - t0).ms(), 40);
  s.clear();
  // Out-of-order data: an immediate duplicate ACK with a SACK block (RFC 5681 4.2,
  // RFC 2018).
  send_one();
  s.clear();
  auto r = s.peer(kAck);
  r.seq = s.peer_nxt + 1448;
  s.in(r, seg);
  auto d = s.pop();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->v.ack(), s.peer_nxt);
  ASSERT_EQ(d->o.sack_count, 1);
  EXPECT_EQ(d->o.sack[0].left, s.peer_nxt + 1448);
  EXPECT_EQ(d->o.sack[0].right, s.peer_nxt + 2896);
  // Filling the hole is acknowledged at once, covering both.
  send_one();
  auto f = s.pop();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->v.ack(), s.peer_nxt + 1448);
  EXPECT_EQ(f->o.sack_count, 0);
}

// While the path shows loss, a pure ACK that silence follows goes out once more a round
// trip and a half after it (here 10 + 5 ms): the sender would have answered it by then,
// so it was most likely lost. A segment that arrives first disarms the repeat, it comes
// once per silence, and without a sign of loss no ACK is repeated.
TEST(DelayedAck, AnAckThatSilenceFollowsIsRepeatedOnceWhileLossIsAbout) {
  Script s;
  s.open_rtt = Duration::millis(10);
  Peer app;
  ASSERT_TRUE(s.open(app));
  s.clear();
  auto seg = bytes(1448);
  s.in(s.peer(kAck), seg);  // quick-ACKed, no loss seen: no repeat
  s.peer_nxt += 1448;
  EXPECT_EQ(s.pending(), 1u);
  s.clear();
  EXPECT_FALSE(s.advance(Duration::millis(100)));
  auto r = s.peer(kAck);  // out of order: a sign of loss, answered at once
  r.seq = s.peer_nxt + 1448;
  s.in(r, seg);
  EXPECT_EQ(s.pending(), 1u);
  s.clear();
  EXPECT_FALSE(s.advance(Duration::millis(14)));  // that ACK's repeat is due at 15 ms...
  s.in(s.peer(kAck), seg);                        // ...but the hole's filling comes first
  s.peer_nxt += 2896;
  EXPECT_EQ(s.pending(), 1u);
  s.clear();
  const Instant t0 = s.now;
  ASSERT_TRUE(s.advance(Duration::seconds(1), true));
  EXPECT_EQ((s.now - t0).ms(), 15);
  auto rep = s.pop();
  ASSERT_TRUE(rep);
  EXPECT_EQ(rep->v.ack(), s.peer_nxt);
  EXPECT_EQ(rep->o.sack_count, 0);
  EXPECT_EQ(s.s.counters().acks_repeated, 1u);
  EXPECT_FALSE(s.advance(Duration::millis(100)));  // once per silence
  s.in(s.peer(kAck), seg);  // the next segment ends the silence: a repeat may follow again
  s.peer_nxt += 1448;
  s.clear();
  ASSERT_TRUE(s.advance(Duration::seconds(1), true));
  EXPECT_EQ(s.s.counters().acks_repeated, 2u);
}

// While the receive buffer grows (autotuning's last step enlarged it, for two round trips
// after), the sender is most likely in slow start: each in-order segment is ACKed at once,
// as Linux's receiver does while its window opens, so that no flight's last segment waits
// for a delayed ACK. Once the buffer is at its ceiling, one ACK per two segments again.
TEST(DelayedAck, EachSegmentAckedWhileTheReceiveBufferGrows) {
  tcp::TcpConfig cfg = default_config(1);
  cfg.buffer_max = 256 * 1024;
  DataIn t(cfg, Duration::millis(1));
  auto& s = t.s;
  auto send_one = [&] { t.send_one(); };
  for (int i = 0; i < 16; ++i) send_one();  // the quick-ACKs of the start
  s.clear();
  // A round trip later the application has consumed them all: the buffer grows to its
  // ceiling, and each segment of the next flight is ACKed as it comes.
  EXPECT_FALSE(s.advance(Duration::millis(1)));
  for (int i = 0; i < 5; ++i) {
    send_one();
    EXPECT_EQ(s.pending(), 1u) << i;
    s.clear();
  }
  // Two round trips on, the buffer has not grown again: every second segment.
  EXPECT_FALSE(s.advance(Duration::millis(3)));
  send_one();  // a step that finds the buffer at its ceiling
  s.clear();
  EXPECT_FALSE(s.advance(Duration::millis(3)));
  send_one();
  EXPECT_EQ(s.pending(), 1u);  // this one and the one before it: a pair
  s.clear();
  send_one();
  EXPECT_EQ(s.pending(), 0u);
  send_one();
  EXPECT_EQ(s.pending(), 1u);
}

// A segment after a silence longer than the RTO (the peer's timer has most likely fired,
// and it restarts from one segment): it and the next ones are ACKed at once, not after the
// delayed-ACK timer, as Linux does.
TEST(DelayedAck, QuickAckAgainAfterASilenceLongerThanTheRto) {
  DataIn t;
  auto& s = t.s;
  auto send_one = [&] { t.send_one(); };
  for (int i = 0; i < 18; ++i) send_one();  // the quick-ACKs of the start, then a pair
  s.clear();
  send_one();
  EXPECT_EQ(s.pending(), 0u);  // a lone segment waits for the timer
  ASSERT_TRUE(s.advance(Duration::seconds(1), true));
  s.clear();
  // Silent for longer than the RTO (at most 1 s before any RTT sample, RFC 6298 2.1).
  s.advance(Duration::seconds(3));
  s.clear();
  for (int i = 0; i < 3; ++i) {
    send_one();
    EXPECT_EQ(s.pending(), 1u) << i;
    s.clear();
  }
}

// A duplicate of data already ACKed (the peer's timer or loss probe resent it: our ACK was
// lost) puts the receiver in quick-ACK mode, as Linux's tcp_enter_quickack_mode: the next
// segments are ACKed one by one, in order (not one ACK per two) and out of order (no SACK
// compression after the third duplicate ACK), so that one more lost ACK does not leave a
// sender with a few segments in flight to its timer.

TEST(DelayedAck, QuickAckAfterADuplicateSegment) {
  DataIn t;
  auto& s = t.s;
  const auto& seg = t.seg;
  const uint32_t m = DataIn::m;
  auto send_one = [&] { t.send_one(); };
  for (int i = 0; i < 18; ++i) send_one();  // the quick-ACKs of the start, then a pair
  s.clear();
  send_one();
  EXPECT_EQ(s.pending(), 0u) << "a lone segment waits for the delayed-ACK timer";
  ASSERT_TRUE(s.advance(Duration::seconds(1), true));
  s.clear();
  // The last segment again: a D-SACK at once...
  auto dup = s.peer(kAck);
  dup.seq = s.peer_nxt - m;
  s.in(dup, seg);
  auto d = s.pop();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->v.ack(), s.peer_nxt);
  ASSERT_GE(d->o.sack_count, 1);
  EXPECT_EQ(d->o.sack[0].left, s.peer_nxt - m);
  EXPECT_EQ(s.pending(), 0u);
  // ...then every in-order segment is ACKed on its own...
  for (int i = 0; i < 4; ++i) {
    send_one();
    EXPECT_EQ(s.pending(), 1u) << i;
    s.clear();
  }
  // ...and so is every segment of a run behind a hole, beyond the three duplicate ACKs
  // after which SACK compression would hold them.
  for (uint32_t i = 1; i <= 8; ++i) {
    auto r = s.peer(kAck);
    r.seq = s.peer_nxt + i * m;
    s.in(r, seg);
    EXPECT_EQ(s.pending(), 1u) << i;
    s.clear();
  }
}

// A FIN beyond a hole: the SACK block covers its sequence number too, as Linux's do (a
// Linux sender counts its last segment SACKed only then, and without that RACK cannot
// find the segments lost before it: it waits for its timer). A FIN alone beyond the data
// gets an ACK at once and a block of its own.
TEST(DelayedAck, SackBlockCoversAFinBeyondAHole) {
  for (bool with_data : {true, false}) {
    DataIn t;
    auto& s = t.s;
    const auto& seg = t.seg;
    const uint32_t m = DataIn::m;
    // The segment at peer_nxt is lost; the last one, with the FIN, arrives.
    auto r = s.peer(kAck | kFin);
    r.seq = s.peer_nxt + m;
    if (with_data)
      s.in(r, seg);
    else
      s.in(r);
    auto a = s.pop();
    ASSERT_TRUE(a) << with_data;
    EXPECT_EQ(a->v.ack(), s.peer_nxt);
    ASSERT_EQ(a->o.sack_count, 1) << with_data;
    EXPECT_EQ(a->o.sack[0].left, s.peer_nxt + m);
    EXPECT_EQ(a->o.sack[0].right, s.peer_nxt + m + (with_data ? m : 0) + 1) << with_data;
    // The hole filled: everything up to the FIN is acknowledged, no block left.
    s.in(s.peer(kAck), seg);
    auto f = s.pop();
    ASSERT_TRUE(f);
    EXPECT_EQ(f->v.ack(), s.peer_nxt + m + (with_data ? m : 0) + 1);
    EXPECT_EQ(f->o.sack_count, 0);
    EXPECT_TRUE(t.app.peer_closed);
  }
}

// RFC 2018 section 4: the block of the newest out-of-order segment first, then the blocks
// of those before it, newest first, so that a block reported once is repeated in the
// next ACKs even when newer holes keep opening above it (as under random loss).
TEST(DelayedAck, SackBlocksRepeatTheNewestFirst) {
  Script s;
  Peer app;
  ASSERT_TRUE(s.open(app));
  s.clear();
  auto seg = bytes(1448);
  const uint32_t m = 1448;
  // Five islands, one segment each, arriving lowest first: 1, 3, 5, 7, 9 (holes between).
  std::optional<decltype(s.pop())> last;
  for (uint32_t i = 1; i <= 9; i += 2) {
    auto r = s.peer(kAck);
    r.seq = s.peer_nxt + i * m;
    s.in(r, seg);
    last = s.pop();
    s.clear();
  }
  ASSERT_TRUE(last && *last);
  const auto& o = (**last).o;
  ASSERT_GE(o.sack_count, 3);
  EXPECT_EQ(o.sack[0].left, s.peer_nxt + 9 * m);  // the newest
  EXPECT_EQ(o.sack[1].left, s.peer_nxt + 7 * m);  // then the ones before it
  EXPECT_EQ(o.sack[2].left, s.peer_nxt + 5 * m);
}

// Heavy reordering of a large window leaves hundreds of holes: the out-of-order map grows
// past the 128 ranges it starts with and keeps every segment, and the data is whole once
// the holes fill. Its bound is the holes the buffer can hold at the largest segment seen
// (536 bytes at least): 1 MiB / (2 x 536) = 978 ranges for a peer sending 100-byte
// segments, beyond which a segment is dropped and counted.
TEST(Reordering, TheOutOfOrderMapGrowsToTheHolesTheBufferHolds) {
  for (const uint32_t m : {1448u, 100u}) {
    tcp::TcpConfig cfg = default_config(1);
    cfg.recv_buffer = m == 1448 ? 4u << 20 : 1u << 20;
    Script s(cfg);
    Peer app;
    ASSERT_TRUE(s.open(app));
    auto seg = bytes(m);
    s.in(s.peer(kAck), seg);  // its ACK opens the whole window
    s.peer_nxt += m;
    const uint32_t islands = m == 1448 ? 400 : 1000;
    for (uint32_t i = 1; i < 2 * islands; i += 2) {  // every other segment: a hole before each
      auto r = s.peer(kAck);
      r.seq = s.peer_nxt + i * m;
      s.in(r, seg);
    }
    const uint64_t dropped = s.drops.get(DropReason::kTcpReceiveBufferFull);
    EXPECT_EQ(dropped, m == 1448 ? 0u : islands - 978u) << m;
    for (uint32_t i = 0; i < 2 * islands; i += 2) {  // the holes fill
      auto r = s.peer(kAck);
      r.seq = s.peer_nxt + i * m;
      s.in(r, seg);
    }
    if (m == 1448) {
      EXPECT_EQ(app.received, (2 * islands + 1) * m);
    }
    EXPECT_EQ(s.drops.get(DropReason::kTcpOutOfWindow), 0u) << m;
  }
}

// --------------------------------------------------------- zero window

TEST(Window, ZeroWindowProbesThenResume) {
  LinkParams p;
  p.delay = Duration::millis(1);
  auto cb = default_config(2);
  cb.recv_buffer = 64 * 1024;  // fixed: the window closes when the app stops reading
  Net n(p, p, 1, default_config(1), cb);
  Pair pr;
  pr.server.consume = false;
  pr.start(n, 500'000, 0, 1);
  n.run_for(Duration::seconds(2));
  EXPECT_EQ(pr.server.received, 0u);
  EXPECT_EQ(pr.server.c->readable(), 64u * 1024);
  EXPECT_EQ(pr.client.c->info().snd_wnd, 0u);
  uint64_t probes = n.a.counters().zero_window_probes;
  EXPECT_GE(probes, 2u);
  n.run_for(Duration::seconds(20));
  uint64_t later = n.a.counters().zero_window_probes;
  EXPECT_GT(later, probes);
  EXPECT_LT(later, probes + 8);    // backoff: probes get rarer
  EXPECT_FALSE(pr.client.closed);  // a peer that answers probes is never dropped
  pr.server.consume = true;
  pr.server.c->resume_read();
  ASSERT_TRUE(n.run_until([&] { return pr.server.received == 500'000u; }, Duration::seconds(200)));
  EXPECT_EQ(pr.server.bad_bytes, 0u);
}

// RFC 9293 3.8.6.2.2: a read that frees a step of the buffer (min(buffer/2, MSS) or more)
// is told to the peer at once, by a window update.
TEST(Window, ReadThatOpensTheWindowSendsAnUpdate) {
  auto cfg = default_config(1);
  cfg.recv_buffer = 8192;  // fixed: not autotuned; our window scale is 0
  Script s(cfg);
  Peer app;
  app.consume = false;
  ASSERT_TRUE(s.open(app));
  s.clear();
  auto seg = bytes(1400);
  for (int i = 0; i < 5; ++i) {
    s.in(s.peer(), seg);
    s.peer_nxt += 1400;
  }
  s.now = s.now + Duration::millis(500);  // past the delayed ACK
  s.s.poll(s.now);
  uint32_t closed_wnd = 0;
  while (auto f = s.pop()) closed_wnd = f->v.window();
  EXPECT_EQ(closed_wnd, 8192u - 5 * 1400u);
  app.consume = true;
  app.c->resume_read();
  s.s.poll(s.now);
  auto upd = s.pop();
  ASSERT_TRUE(upd);
  EXPECT_EQ(upd->v.ack(), s.peer_nxt);
  EXPECT_EQ(upd->v.window(), 8192u);
  EXPECT_EQ(app.received, 5u * 1400u);
}

TEST(Window, ZeroWindowProbeTimesBackOff) {
  Script s;
  Peer app;
  tcp::Connection* c = s.open(app, true, true, true, /*peer_wnd=*/0);
  ASSERT_TRUE(c);
  s.clear();
  Instant t0 = s.now;
  EXPECT_EQ(c->send(bytes(3000)), 3000u);
  EXPECT_EQ(s.pending(), 0u);  // the window is shut: nothing may be sent
  // Persist timer: RTO (200 ms here) doubling: probes at 200, 600, 1400, 3000 ms.
  for (int64_t ms : {200, 600, 1400, 3000}) {
    ASSERT_TRUE(s.advance(Duration::seconds(10), true));
    EXPECT_EQ((s.now - t0).ms(), ms);
    auto g = s.pop();
    ASSERT_TRUE(g);
    EXPECT_EQ(g->v.seq(), s.our_nxt - 1);
    EXPECT_TRUE(g->v.payload().empty());
    // The peer answers each probe, still with a zero window: we keep probing.
    auto r = s.peer();
    r.window = 0;
    s.in(r);
    EXPECT_EQ(s.pending(), 0u);
  }
  // The window opens: the queued data goes at once.
  s.in(s.peer());
  size_t sent = 0;
  while (auto g = s.pop()) sent += g->v.payload().size();
  EXPECT_EQ(sent, 3000u);
  EXPECT_FALSE(app.closed);
}

// ------------------------------------------------------ close sequences

TEST(Close, HalfClose) {
  Net n(LinkParams{}, LinkParams{}, 3);
  Pair pr;
  pr.start(n, 1000, 0, 3);  // client sends 1000 bytes and FIN
  pr.server.shutdown_when_done = false;
  ASSERT_TRUE(n.run_until([&] { return pr.server.peer_closed; }, Duration::seconds(5)));
  n.run_for(Duration::millis(50));
  EXPECT_EQ(pr.client.c->state(), TcpState::kFinWait2);
  EXPECT_EQ(pr.server.c->state(), TcpState::kCloseWait);
  // The server keeps sending after the client's FIN.
  pr.server.to_send = 300'000;
  pr.server.shutdown_when_done = true;
  pr.server.pump();
  ASSERT_TRUE(
      n.run_until([&] { return pr.client.closed && pr.server.closed; }, Duration::seconds(10)));
  EXPECT_EQ(pr.client.received, 300'000u);
  EXPECT_EQ(pr.client.bad_bytes, 0u);
  EXPECT_EQ(pr.server.received, 1000u);
}

TEST(Close, SimultaneousCloseThroughClosing) {
  Net n(LinkParams{}, LinkParams{}, 4);
  Pair pr;
  pr.start(n, 0, 0, 4);
  pr.client.shutdown_when_done = pr.server.shutdown_when_done = false;
  ASSERT_TRUE(n.run_until([&] { return pr.client.connected && pr.server.connected; },
                          Duration::seconds(1)));
  n.run_for(Duration::millis(50));
  tcp::Connection* a = pr.client.c;
  tcp::Connection* b = pr.server.c;
  a->shutdown_write();
  b->shutdown_write();
  EXPECT_EQ(a->state(), TcpState::kFinWait1);
  n.run_for(Duration::millis(7));  // both FINs arrive before either ACK
  EXPECT_EQ(n.a.counters().state[static_cast<size_t>(TcpState::kClosing)] +
                n.a.counters().state[static_cast<size_t>(TcpState::kTimeWait)],
            1u);
  ASSERT_TRUE(
      n.run_until([&] { return pr.client.closed && pr.server.closed; }, Duration::seconds(1)));
  // Both ends closed actively: both in TIME_WAIT.
  EXPECT_EQ(n.a.counters().state[static_cast<size_t>(TcpState::kTimeWait)], 1u);
  EXPECT_EQ(n.b.counters().state[static_cast<size_t>(TcpState::kTimeWait)], 1u);
}

TEST(Close, TimeWaitDurationAndReuse) {
  auto ca = default_config(1);
  ca.time_wait = Duration::seconds(30);
  Net n(LinkParams{}, LinkParams{}, 5, ca);
  Pair pr;
  pr.start(n, 100, 100, 5);
  ASSERT_TRUE(
      n.run_until([&] { return pr.client.closed && pr.server.closed; }, Duration::seconds(5)));
  auto tw = [&] { return n.a.counters().state[static_cast<size_t>(TcpState::kTimeWait)]; };
  ASSERT_EQ(tw(), 1u);  // the client closed first... or at the same time
  Instant entered = n.now;
  n.run_for(Duration::seconds(29));
  EXPECT_EQ(tw(), 1u);
  n.run_for(Duration::seconds(2));
  EXPECT_EQ(tw(), 0u);
  EXPECT_LE((n.now - entered).ms(), 31000);
}

// A server on port 5000 of b that closes its side when the client does, and a client
// on port 40000 of a that sends nothing and closes first: when both are closed, the
// client's end holds the tuple in TIME_WAIT and the server's end is gone.
void client_leaves_time_wait(Net& n, Peer& srv, Peer& cl) {
  srv.shutdown_when_done = false;
  n.b.listen(5000, {[&srv](tcp::Connection& c) {
               auto cbs = srv.callbacks();
               cbs.on_peer_closed = [](tcp::Connection& c) { c.shutdown_write(); };
               c.set_callbacks(std::move(cbs));
               srv.c = &c;
               return true;
             }});
  cl.c = n.a.connect({kAddrB, 5000}, cl.callbacks(), 40000, n.now);
  ASSERT_TRUE(n.run_until([&] { return cl.closed && srv.closed; }, Duration::seconds(5)));
  ASSERT_EQ(n.a.counters().state[static_cast<size_t>(TcpState::kTimeWait)], 1u);
}

TEST(Close, TimeWaitReuseNeedsTimestamps) {
  for (bool ts : {true, false}) {
    auto ca = default_config(1), cb = default_config(2);
    ca.timestamps = cb.timestamps = ts;
    Net n(LinkParams{}, LinkParams{}, 7, ca, cb);
    Peer srv, cl;
    client_leaves_time_wait(n, srv, cl);
    if (HasFatalFailure()) return;
    // The server closed from on_peer_closed: CLOSE_WAIT -> LAST_ACK -> CLOSED, no TIME_WAIT.
    EXPECT_EQ(n.b.counters().state[static_cast<size_t>(TcpState::kTimeWait)], 0u);
    EXPECT_EQ(n.b.connection_count(), 0u);
    n.run_for(Duration::seconds(2));
    Peer cl2;
    tcp::Connection* c2 = n.a.connect({kAddrB, 5000}, cl2.callbacks(), 40000, n.now);
    if (ts) {
      ASSERT_NE(c2, nullptr);
      EXPECT_EQ(n.a.counters().time_wait_reused, 1u);
      ASSERT_TRUE(n.run_until([&] { return cl2.connected; }, Duration::seconds(5)));
    } else {
      EXPECT_EQ(c2, nullptr);
    }
  }
}

// TcpConfig::time_wait_reuse: a 5 ms takeover interval refuses the tuple at 2 ms and
// takes it at 6 ms; the new connection's segments pass the peer's PAWS check (its
// timestamps are newer than the old incarnation's) and data flows.
TEST(Close, TimeWaitReuseIntervalIsConfigurable) {
  auto ca = default_config(1), cb = default_config(2);
  ca.time_wait_reuse = Duration::millis(5);
  LinkParams fast;
  fast.delay = Duration::micros(50);
  Net n(fast, fast, 11, ca, cb);
  Peer srv, cl;
  client_leaves_time_wait(n, srv, cl);
  if (HasFatalFailure()) return;
  n.run_for(Duration::millis(2));
  Peer early;
  EXPECT_EQ(n.a.connect({kAddrB, 5000}, early.callbacks(), 40000, n.now), nullptr);
  n.run_for(Duration::millis(4));
  Peer cl2;
  cl2.to_send = 10000;
  cl2.tx_seed = 5;
  srv.rx_seed = 5;
  srv.received = 0;
  srv.closed = false;
  cl2.c = n.a.connect({kAddrB, 5000}, cl2.callbacks(), 40000, n.now);
  ASSERT_NE(cl2.c, nullptr);
  EXPECT_EQ(n.a.counters().time_wait_reused, 1u);
  ASSERT_TRUE(n.run_until([&] { return srv.received == 10000; }, Duration::seconds(5)));
  EXPECT_EQ(srv.bad_bytes, 0u);
}

TEST(Close, NewSynTakesOverServerTimeWait) {
  // RFC 6191: the server closed first and holds the tuple in TIME_WAIT; a new SYN
  // with a newer timestamp from the same client port opens a new connection.
  Net n(LinkParams{}, LinkParams{}, 8);
  int accepted = 0;
  Peer srv;
  srv.shutdown_when_done = false;
  n.b.listen(5000, {[&](tcp::Connection& c) {
               ++accepted;
               c.set_callbacks(srv.callbacks());
               c.shutdown_write();  // the server closes first
               return true;
             }});
  auto once = [&](bool expect_reuse) {
    Peer cl;
    cl.shutdown_when_done = false;
    cl.c = n.a.connect({kAddrB, 5000}, cl.callbacks(), 40001, n.now);
    ASSERT_NE(cl.c, nullptr);
    ASSERT_TRUE(n.run_until([&] { return cl.peer_closed; }, Duration::seconds(5)));
    cl.c->shutdown_write();
    ASSERT_TRUE(n.run_until([&] { return cl.closed; }, Duration::seconds(5)));
    n.run_for(Duration::millis(100));
    EXPECT_EQ(n.b.counters().state[static_cast<size_t>(TcpState::kTimeWait)], 1u);
    EXPECT_EQ(n.b.counters().time_wait_reused, expect_reuse ? 1u : 0u);
  };
  once(false);
  n.run_for(Duration::seconds(1));
  once(true);
  EXPECT_EQ(accepted, 2);
}

// tcp.time_wait_max: a server that closes first keeps at most that many TIME_WAIT blocks;
// beyond it a connection ACKs the peer's FIN and closes at once (counted), so TIME_WAIT
// never fills max_connections and new clients keep being accepted. Each client closes
// cleanly (no RST, no FIN retransmission needed).
TEST(Close, TimeWaitBeyondItsBoundClosesAtOnce) {
  auto cb = default_config(2);
  cb.max_connections = 12;
  cb.time_wait_max = 8;
  Net n(LinkParams{}, LinkParams{}, 9, default_config(1), cb);
  int accepted = 0;
  n.b.listen(5000, {[&](tcp::Connection& c) {
               ++accepted;
               c.shutdown_write();  // the server closes first
               return true;
             }});
  constexpr int kClients = 30;
  for (int i = 0; i < kClients; ++i) {
    Peer cl;
    cl.shutdown_when_done = false;
    cl.c = n.a.connect({kAddrB, 5000}, cl.callbacks(), static_cast<uint16_t>(41000 + i), n.now);
    ASSERT_NE(cl.c, nullptr) << i;
    ASSERT_TRUE(n.run_until([&] { return cl.peer_closed; }, Duration::seconds(5))) << i;
    cl.c->shutdown_write();
    ASSERT_TRUE(n.run_until([&] { return cl.closed; }, Duration::seconds(5))) << i;
    EXPECT_EQ(cl.reason, tcp::CloseReason::kNormal) << i;
  }
  n.run_for(Duration::millis(100));
  EXPECT_EQ(accepted, kClients);
  EXPECT_EQ(n.b.counters().state[static_cast<size_t>(TcpState::kTimeWait)], 8u);
  EXPECT_EQ(n.b.counters().time_wait_overflow, static_cast<uint64_t>(kClients - 8));
  EXPECT_EQ(n.drops_b.get(DropReason::kTcpMaxConnections), 0u);
  EXPECT_EQ(n.a.counters().retransmits, 0u);  // every FIN acknowledged at once
}

// ----------------------------------------------------------- keepalive

TEST(Keepalive, ProbesThenTimeout) {
  auto cfg = default_config(1);
  cfg.keepalive = true;
  cfg.keepalive_idle = Duration::seconds(10);
  cfg.keepalive_interval = Duration::seconds(2);
  cfg.keepalive_probes = 3;
  Script s(cfg);
  Peer app;
  ASSERT_TRUE(s.open(app));
  s.clear();
  Instant t0 = s.now;
  for (int64_t sec : {10, 12, 14}) {
    ASSERT_TRUE(s.advance(Duration::seconds(60), true));
    EXPECT_EQ((s.now - t0).ms(), sec * 1000);
    auto g = s.pop();
    ASSERT_TRUE(g);
    EXPECT_EQ(g->v.seq(), s.our_nxt - 1);  // RFC 1122 4.2.3.6 probe
    EXPECT_TRUE(g->v.payload().empty());
  }
  s.advance(Duration::seconds(3));
  EXPECT_TRUE(app.closed);
  EXPECT_EQ(app.reason, tcp::CloseReason::kKeepalive);
}

TEST(Keepalive, AnsweredProbesKeepConnection) {
  auto cfg = default_config(1);
  cfg.keepalive = true;
  cfg.keepalive_idle = Duration::seconds(10);
  cfg.keepalive_interval = Duration::seconds(2);
  cfg.keepalive_probes = 3;
  Script s(cfg);
  Peer app;
  ASSERT_TRUE(s.open(app));
  s.clear();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(s.advance(Duration::seconds(60), true));
    s.clear();
    s.in(s.peer());  // the peer answers
  }
  EXPECT_FALSE(app.closed);
  EXPECT_EQ(s.s.counters().keepalive_probes, 5u);
}

// ------------------------------------------------------- blind injection

TEST(Rfc5961, BlindRstSynAckInjectionDoesNotBreakTransfer) {
  // An off-path attacker knows the 4-tuple but not the sequence numbers: it sprays
  // RST, SYN and bare ACK segments with random numbers into a running transfer.
  LinkParams p;
  p.delay = Duration::millis(2);
  Net n(p, p, 21);
  Pair pr;
  pr.start(n, 3'000'000, 3'000'000, 21);
  ASSERT_TRUE(n.run_until([&] { return pr.server.c != nullptr; }, Duration::seconds(1)));
  Rng rng(99);
  uint16_t cport = pr.client.c->local().port;
  for (int round = 0; round < 4000 && !(pr.client.closed && pr.server.closed); ++round) {
    n.run_for(Duration::micros(500));
    wire::TcpRepr r;
    bool to_server = rng.chance(0.5);
    r.src_port = to_server ? cport : 5000;
    r.dst_port = to_server ? 5000 : cport;
    r.seq = SeqNum(static_cast<uint32_t>(rng.next()));
    r.ack = SeqNum(static_cast<uint32_t>(rng.next()));
    uint64_t k = rng.next() % 3;
    r.flags = k == 0 ? kRst : k == 1 ? (kSyn) : kAck;
    r.window = static_cast<uint16_t>(rng.next());
    Ipv4Addr src = to_server ? kAddrA : kAddrB, dst = to_server ? kAddrB : kAddrA;
    auto v = make_segment(src, dst, r);
    (to_server ? n.b : n.a).input(src, dst, v, false, n.now);
  }
  ASSERT_TRUE(
      n.run_until([&] { return pr.client.closed && pr.server.closed; }, Duration::seconds(60)));
  EXPECT_EQ(pr.client.reason, tcp::CloseReason::kNormal);
  EXPECT_EQ(pr.server.received, 3'000'000u);
  EXPECT_EQ(pr.client.received, 3'000'000u);
  EXPECT_EQ(pr.client.bad_bytes + pr.server.bad_bytes, 0u);
}

// ------------------------------------------------------------------ ICMP

TEST(Icmp, FragNeededLowersMssAndResends) {
  Script s;
  Peer app;
  tcp::Connection* c = s.open(app);
  ASSERT_TRUE(c);
  s.clear();
  c->send(bytes(3000));
  auto first = s.pop();
  ASSERT_TRUE(first);
  s.clear();
  // A forged error about a sequence number we never sent is ignored (RFC 5927).
  std::vector<uint8_t> q(first->p.l4.begin(), first->p.l4.begin() + 8);
  std::vector<uint8_t> bogus = q;
  store_be32(bogus.data() + 4, first->v.seq().raw() + 1'000'000);
  s.s.icmp_error(kAddrA, kAddrB, bogus, tcp::IcmpError::kFragNeeded, 1000, s.now);
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_EQ(c->info().send_mss, 1448u);
  // A genuine one: MTU 1000 -> MSS 960, 948 with timestamps; the data is resent.
  s.s.icmp_error(kAddrA, kAddrB, q, tcp::IcmpError::kFragNeeded, 1000, s.now);
  EXPECT_EQ(c->info().send_mss, 948u);
  size_t total = 0;
  SeqNum expect = s.our_nxt;
  while (auto g = s.pop()) {
    EXPECT_LE(g->v.payload().size(), 948u);
    EXPECT_EQ(g->v.seq(), expect);
    expect += static_cast<uint32_t>(g->v.payload().size());
    total += g->v.payload().size();
  }
  EXPECT_EQ(total, 3000u);
  EXPECT_EQ(s.s.counters().pmtu_reductions, 1u);
}

TEST(Icmp, PortUnreachableAbortsConnect) {
  Script s;
  Peer app;
  s.s.connect({kAddrB, 80}, app.callbacks(), 0, s.now);
  auto syn = s.pop();
  ASSERT_TRUE(syn);
  std::vector<uint8_t> q(syn->p.l4.begin(), syn->p.l4.begin() + 8);
  s.s.icmp_error(kAddrA, kAddrB, q, tcp::IcmpError::kPortUnreachable, 0, s.now);
  EXPECT_TRUE(app.closed);
  EXPECT_EQ(app.reason, tcp::CloseReason::kRefused);
}

// ------------------------------------------------------------- scale

TEST(Scale, ThousandConcurrentConnections) {
  LinkParams p;
  p.delay = Duration::millis(1);
  p.loss = 0.002;
  Net n(p, p, 31);
  constexpr int kConns = 1000;
  std::vector<std::unique_ptr<Peer>> servers, clients;
  n.b.listen(5000, {[&](tcp::Connection& c) {
               auto& srv = servers.emplace_back(std::make_unique<Peer>());
               srv->c = &c;
               srv->rx_seed = 77;
               srv->tx_seed = 78;
               srv->to_send = 5000;
               c.set_callbacks(srv->callbacks());
               srv->pump();
               return true;
             }});
  for (int i = 0; i < kConns; ++i) {
    auto& cl = clients.emplace_back(std::make_unique<Peer>());
    cl->tx_seed = 77;
    cl->rx_seed = 78;
    cl->to_send = 20000;
    cl->c = n.a.connect({kAddrB, 5000}, cl->callbacks(), 0, n.now);
    ASSERT_NE(cl->c, nullptr);
  }
  EXPECT_EQ(n.a.connection_count(), static_cast<size_t>(kConns));
  auto all_closed = [&] {
    for (auto& c : clients)
      if (!c->closed) return false;
    return servers.size() == kConns &&
           std::all_of(servers.begin(), servers.end(), [](auto& s) { return s->closed; });
  };
  ASSERT_TRUE(n.run_until(all_closed, Duration::seconds(60)));
  for (auto& c : clients) {
    EXPECT_EQ(c->received, 5000u);
    EXPECT_EQ(c->bad_bytes, 0u);
    EXPECT_EQ(c->reason, tcp::CloseReason::kNormal);
  }
  for (auto& sv : servers) EXPECT_EQ(sv->received, 20000u);
  EXPECT_EQ(n.b.counters().connections_accepted, static_cast<uint64_t>(kConns));
}

// ------------------------------------------------ autotuning and pressure

struct Bulk {
  double secs = 0;
  uint32_t max_rcv_buf = 0;
  uint64_t bad = 0;
};

Bulk bulk(uint32_t recv_buffer, uint64_t bytes) {
  LinkParams p;
  p.delay = Duration::millis(10);
  p.max_queue = Duration::millis(50);
  auto cb = default_config(2);
  cb.recv_buffer = recv_buffer;
  Net n(p, p, 11, default_config(1), cb);
  Pair pr;
  pr.start(n, bytes, 0, 11);
  Instant t0 = n.now;
  Bulk r;
  bool ok = n.run_until(
      [&] {
        if (pr.server.c) r.max_rcv_buf = std::max(r.max_rcv_buf, pr.server.c->info().rcv_buf);
        return pr.server.received == bytes;
      },
      Duration::seconds(120));
  EXPECT_TRUE(ok);
  r.secs = (n.now - t0).secs();
  r.bad = pr.server.bad_bytes;
  return r;
}

TEST(Autotune, ReceiveWindowGrowsAndBeatsFixed64k) {
  const uint64_t kBytes = 30'000'000;
  Bulk autotuned = bulk(0, kBytes);
  Bulk fixed = bulk(64 * 1024, kBytes);
  std::printf("20 ms RTT, 1 Gbit/s, 30 MB: autotuned %.2fs (buffer up to %u), fixed 64 KiB %.2fs\n",
              autotuned.secs, autotuned.max_rcv_buf, fixed.secs);
  EXPECT_GT(autotuned.max_rcv_buf, 1u << 20);
  EXPECT_EQ(fixed.max_rcv_buf, 64u * 1024);
  EXPECT_LT(autotuned.secs * 3, fixed.secs);
  EXPECT_EQ(autotuned.bad + fixed.bad, 0u);
}

// Slow start over a 20 ms RTT: the receive window must stay ahead of a sender that doubles
// its rate every RTT. Sampled each millisecond while the sender has data queued: how often
// its congestion window exceeded the window we advertise (it is then held by us, not by
// the path).
TEST(Autotune, WindowKeepsAheadOfSlowStart) {
  LinkParams p;
  p.delay = Duration::millis(10);
  p.max_queue = Duration::millis(200);
  auto ca = default_config(1);
  Net n(p, p, 13, ca, default_config(2));
  Pair pr;
  const uint64_t kBytes = 6'000'000;
  pr.start(n, kBytes, 0, 13);
  uint32_t samples = 0, held = 0;
  Instant next = n.now;
  bool ok = n.run_until(
      [&] {
        if (n.now >= next && pr.client.c && pr.server.received < kBytes) {
          next = n.now + Duration::millis(1);
          auto i = pr.client.c->info();
          ++samples;
          if (i.cwnd > i.snd_wnd + 1448) ++held;
        }
        return pr.server.received == kBytes;
      },
      Duration::seconds(60));
  ASSERT_TRUE(ok);
  std::printf("slow start over 20 ms: window below cwnd in %u of %u samples\n", held, samples);
  EXPECT_LT(held * 10, samples) << "the receiver held the sender back";
}

TEST(Autotune, NeverAboveCeiling) {
  auto cb = default_config(2);
  cb.buffer_max = 512 * 1024;
  LinkParams p;
  p.delay = Duration::millis(10);
  Net n(p, p, 12, default_config(1), cb);
  Pair pr;
  pr.start(n, 10'000'000, 0, 12);
  uint32_t mx = 0;
  ASSERT_TRUE(n.run_until(
      [&] {
        if (pr.server.c) mx = std::max(mx, pr.server.c->info().rcv_buf);
        return pr.server.received == 10'000'000u;
      },
      Duration::seconds(60)));
  EXPECT_LE(mx, 512u * 1024);
  EXPECT_GT(mx, 64u * 1024);
}

// A sender held by the peer's window (a fixed 64 KiB receive buffer, 20 ms RTT, no loss)
// does not build a congestion window it never used (RFC 9438 section 5.8): slow start takes
// it to about twice its largest flight, and there it stays. Without the rule cwnd grew by
// every byte acknowledged, to the size of the transfer.
TEST(CwndValidation, SenderHeldByThePeersWindowKeepsCwndNearItsFlight) {
  LinkParams p;
  p.delay = Duration::millis(10);
  p.max_queue = Duration::millis(50);
  auto cb = default_config(2);
  cb.recv_buffer = 64 * 1024;
  Net n(p, p, 17, default_config(1), cb);
  Pair pr;
  const uint64_t kBytes = 8'000'000;
  pr.start(n, kBytes, 0, 17);
  uint32_t max_cwnd = 0, max_wnd = 0;
  ASSERT_TRUE(n.run_until(
      [&] {
        if (pr.client.c) {
          tcp::ConnInfo i = pr.client.c->info();
          max_cwnd = std::max(max_cwnd, i.cwnd);
          max_wnd = std::max(max_wnd, i.snd_wnd);
        }
        return pr.server.received == kBytes;
      },
      Duration::seconds(60)));
  std::printf("held by a %u-byte window: cwnd at most %u\n", max_wnd, max_cwnd);
  EXPECT_LE(max_wnd, 64u * 1024);
  // Twice the flight, plus what the one ACK that crossed it covered.
  EXPECT_LE(max_cwnd, 3 * max_wnd);
  EXPECT_GE(max_cwnd, max_wnd);  // slow start did fill the window
  EXPECT_EQ(pr.server.bad_bytes, 0u);
}

TEST(Memory, PressureShrinksWindowAndRecovers) {
  LinkParams p;
  p.delay = Duration::millis(2);
  Net n(p, p, 13);
  Pair pr;
  pr.start(n, 5'000'000, 5'000'000, 13);
  ASSERT_TRUE(n.run_until([&] { return pr.server.received > 500'000; }, Duration::seconds(5)));
  // The server's transmit buffers run low.
  n.out_b.free_buffers = 10;
  n.run_for(Duration::millis(300));
  ASSERT_TRUE(pr.server.c);
  EXPECT_EQ(pr.server.c->send_space(), 0u);  // new data refused
  uint64_t rx = pr.server.received;
  uint32_t wnd = pr.server.c->info().rcv_wnd;
  n.run_for(Duration::millis(300));
  // The window no longer opens: the client stalls instead of overrunning us.
  EXPECT_LE(pr.server.c->info().rcv_wnd, wnd);
  EXPECT_LT(pr.server.received - rx, 2'000'000u);
  EXPECT_FALSE(pr.server.closed);
  // Buffers return: the window reopens, the writer is woken, all bytes arrive.
  n.out_b.free_buffers = 1u << 20;
  ASSERT_TRUE(
      n.run_until([&] { return pr.client.closed && pr.server.closed; }, Duration::seconds(30)));
  EXPECT_EQ(pr.server.received, 5'000'000u);
  EXPECT_EQ(pr.client.received, 5'000'000u);
  EXPECT_EQ(pr.server.bad_bytes + pr.client.bad_bytes, 0u);
}

TEST(Memory, CountersTrackBuffers) {
  Net n(LinkParams{}, LinkParams{}, 14);
  Pair pr;
  pr.server.consume = false;
  pr.client.shutdown_when_done = pr.server.shutdown_when_done = false;
  pr.start(n, 20'000, 0, 14);
  n.run_for(Duration::millis(100));
  auto c = n.b.counters();
  EXPECT_EQ(c.bytes_buffered, 20'000u);
  EXPECT_GE(c.memory_bytes, c.rcv_buffer_sum);
  EXPECT_EQ(c.state[static_cast<size_t>(TcpState::kEstablished)], 1u);
}

}  // namespace
}  // namespace ws::sim
